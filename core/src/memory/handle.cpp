#include "tandem/core/handle.hpp"

#include "tandem/core/labels.hpp"

#include "api/label_table.hpp"

namespace tandem {

std::string_view to_string(Overlap overlap) {
    switch (overlap) {
        case Overlap::Disjoint:
            return "Disjoint";
        case Overlap::Same:
            return "Same";
        case Overlap::Partial:
            return "Partial";
    }
    return "Unknown";
}

Overlap overlap(const ClaimKey& a, const ClaimKey& b) {
    // By byte sets: an empty range holds no byte, so it is disjoint from everything, even when
    // it sits strictly inside the other range.
    if (a.memory != b.memory || !a.range.intersects(b.range)) {
        return Overlap::Disjoint;
    }
    return a.range == b.range ? Overlap::Same : Overlap::Partial;
}

// ---------------------------------------------------------------- Handle

Handle::Handle(RuntimeKey, ManagedMemoryHandle memory, ServiceId service, StreamId stream,
               std::uint64_t size_bytes)
    : memory_(std::move(memory)), service_(service), stream_(stream), extent_(size_bytes) {}

Handle::Handle(const Handle& base, Extent extent) : Handle(base) { extent_ = extent; }

Result<Handle> Handle::add_offset_start(std::uint64_t bytes) const {
    Result<Extent> grown = extent_.add_offset_start(bytes);
    if (!grown) {
        return grown.error();
    }
    return Handle(*this, *grown);
}

Result<Handle> Handle::add_offset_end(std::uint64_t bytes) const {
    Result<Extent> grown = extent_.add_offset_end(bytes);
    if (!grown) {
        return grown.error();
    }
    return Handle(*this, *grown);
}

Result<Handle> Handle::slice(std::uint64_t offset_bytes, std::uint64_t length_bytes) const {
    Result<Extent> sliced = extent_.slice(offset_bytes, length_bytes);
    if (!sliced) {
        return sliced.error();
    }
    return Handle(*this, *sliced);
}

Overlap Handle::overlap(const Handle& other) const {
    if (empty() || other.empty()) {
        return Overlap::Disjoint;  // A handle that was moved from addresses no byte.
    }
    return tandem::overlap(claim_key(), other.claim_key());
}

BufferBinding Handle::binding() const { return BufferBinding(*this); }

Handle Handle::with_peer(PeerMemory peer) const {
    Handle shared = *this;
    shared.peer_ = std::move(peer);
    return shared;
}

std::string Handle::label() const {
    if (empty()) {
        return {};
    }
    return detail::LabelTable::of(memory_id()).value_or(std::string());
}

std::string Handle::describe() const {
    if (empty()) {
        return "Handle{moved from}";
    }
    return "Handle{" + to_string(memory_id()) + ", " + to_string(service_) + ", " +
           stream_name(service_, stream_) + ", size " + std::to_string(size()) + ", bytes " +
           to_string(range()) + (peer_ ? ", shared" : "") + "}";
}

// ---------------------------------------------------------------- BufferBinding

BufferBinding::BufferBinding(ManagedMemoryBinding memory, ServiceId service, StreamId stream,
                             Extent extent, std::optional<PeerMemory> peer)
    : memory_(std::move(memory)),
      service_(service),
      stream_(stream),
      extent_(extent),
      peer_(std::move(peer)) {}

BufferBinding::BufferBinding(const Handle& handle)
    : memory_(handle.memory().binding()),
      service_(handle.service()),
      stream_(handle.stream()),
      extent_(handle.extent()),
      peer_(handle.peer()) {}

WeakBufferBinding BufferBinding::downgrade() const {
    return WeakBufferBinding(memory_.downgrade(), service_, stream_, extent_);
}

WeakBufferBinding::WeakBufferBinding(WeakMemoryBinding memory, ServiceId service, StreamId stream,
                                     Extent extent)
    : memory_(std::move(memory)), service_(service), stream_(stream), extent_(extent) {}

std::optional<BufferBinding> WeakBufferBinding::upgrade() const {
    std::optional<ManagedMemoryBinding> memory = memory_.upgrade();
    if (!memory) {
        return std::nullopt;
    }
    return BufferBinding(std::move(*memory), service_, stream_, extent_, std::nullopt);
}

}  // namespace tandem
