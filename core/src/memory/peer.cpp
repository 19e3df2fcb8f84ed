#include "tandem/core/peer_binding.hpp"
#include "tandem/core/peer_memory.hpp"

namespace tandem {

PeerMemory::PeerMemory(RuntimeKey, ManagedMemoryBinding pin, std::uint64_t address,
                       ServiceId owner_service, std::weak_ptr<PeerOwner> owner)
    : shared_(std::make_shared<Shared>(std::move(pin), address, owner_service, std::move(owner))) {}

std::uint64_t PeerMemory::address() const { return shared_->address; }
ServiceId PeerMemory::owner_service() const { return shared_->owner_service; }
std::shared_ptr<PeerOwner> PeerMemory::owner() const { return shared_->owner.lock(); }
MemoryId PeerMemory::memory_id() const { return shared_->pin.id(); }
long PeerMemory::use_count() const { return shared_.use_count(); }
std::uint64_t PeerMemory::size_bytes() const { return shared_->pin.allocation().size_bytes; }

std::optional<Error> PeerMemory::failure() const {
    const std::shared_ptr<PeerOwner> owner = shared_->owner.lock();
    if (!owner) {
        return std::nullopt;  // Gone with its runtime: no claim is left to say anything.
    }
    return owner->claim_on(ClaimKey{memory_id(), ByteRange{0, size_bytes()}});
}

std::optional<PeerBinding> PeerBinding::make(BufferBinding binding) {
    const std::optional<PeerMemory>& peer = binding.peer();
    if (!peer || peer->memory_id() != binding.memory_id()) {
        return std::nullopt;
    }
    // The extent invariant keeps offset_start within the allocation, so the sum stays inside the
    // owner's address range and cannot wrap for any address the owner resolved.
    std::uint64_t address = peer->address() + binding.offset_start();
    return PeerBinding(std::move(binding), address);
}

PeerBinding::PeerBinding(BufferBinding binding, std::uint64_t address)
    : binding_(std::move(binding)), address_(address) {}

}  // namespace tandem
