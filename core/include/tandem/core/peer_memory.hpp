#pragma once

// Memory one device lets kernels on the other devices bind.
//
// It holds the device address the owner resolved for the allocation's first byte and a binding
// that pins the allocation there: a pinned allocation is never freed, reused or relocated, so the
// address stays valid while any clone lives (rule P2). Its `failure` says, exactly, whether some
// byte of the allocation is claimed on its owner, whoever claimed it (a peer's failed write, P4;
// the owner's own work through any handle; a doomed capture window) and whatever repaired it
// (P5): it asks the owner's claims, which decide byte by byte (P3). Copying costs one atomic
// increment.

#include "tandem/core/error.hpp"
#include "tandem/core/ids.hpp"
#include "tandem/core/memory_reference.hpp"
#include "tandem/core/runtime_key.hpp"

#include <cstdint>
#include <memory>
#include <optional>

namespace tandem {

/// The owning device, as shared memory reaches it.
class PeerOwner {
public:
    virtual ~PeerOwner() = default;
    /// The owning device's service.
    [[nodiscard]] virtual ServiceId service() const = 0;
    /// The report of a failure claiming some byte of `key` on this device as its claims settled
    /// so far say, or its loss (D1); none when every byte is unclaimed.
    [[nodiscard]] virtual std::optional<Error> claim_on(const ClaimKey& key) const = 0;
};

/// Memory one device shares with the kernels of its peers: the device address of the allocation, a
/// binding that pins the allocation there while any clone lives (P2), and `failure`, which tells a
/// program whether the memory carries a failure (P4, P5).
class PeerMemory {
public:
    /// Memory at `address` on `owner`, pinned by `pin`. Only the owning client builds one, from
    /// the address its device resolved.
    PeerMemory(RuntimeKey, ManagedMemoryBinding pin, std::uint64_t address, ServiceId owner_service,
               std::weak_ptr<PeerOwner> owner);

    /// The device address of the allocation's first byte.
    [[nodiscard]] std::uint64_t address() const;
    /// The service of the device that owns the memory.
    [[nodiscard]] ServiceId owner_service() const;
    /// The owner, while it is still alive.
    [[nodiscard]] std::shared_ptr<PeerOwner> owner() const;
    /// The allocation this memory pins.
    [[nodiscard]] MemoryId memory_id() const;

    /// How many bytes the shared allocation has.
    [[nodiscard]] std::uint64_t size_bytes() const;

    /// A failure that claims some byte of the allocation on its owner, if one does: exact, as
    /// the owner's claims settled so far say (P3, P4, P5), whoever claimed the bytes; none once
    /// no byte is claimed any more (a write of some bytes while others stay claimed leaves it).
    /// The owner's loss when it is lost (D1); none when the owner is gone with its runtime.
    [[nodiscard]] std::optional<Error> failure() const;

    /// How many clones of this memory live (for tests of pinning).
    [[nodiscard]] long use_count() const;

private:
    struct Shared {
        Shared(ManagedMemoryBinding pin_binding, std::uint64_t device_address, ServiceId service,
               std::weak_ptr<PeerOwner> owner_device)
            : pin(std::move(pin_binding)),
              address(device_address),
              owner_service(service),
              owner(std::move(owner_device)) {}
        ManagedMemoryBinding pin;
        std::uint64_t address;
        ServiceId owner_service;
        std::weak_ptr<PeerOwner> owner;
    };
    std::shared_ptr<Shared> shared_;
};

}  // namespace tandem
