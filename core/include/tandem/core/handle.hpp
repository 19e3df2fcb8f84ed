#pragma once

// Handles and bindings: which bytes of which allocation, on which device.
//
// A `Handle` is what users hold: a strong reference (it counts for `can_mut()`) plus the service,
// stream and extent. A `BufferBinding` is a handle detached for work: the same fields with a
// binding reference, so enqueued work keeps memory reserved without making the user's handle
// look shared. A `WeakBufferBinding` names the bytes without reserving them.

#include "tandem/core/extent.hpp"
#include "tandem/core/ids.hpp"
#include "tandem/core/memory_reference.hpp"
#include "tandem/core/peer_memory.hpp"
#include "tandem/core/result.hpp"
#include "tandem/core/runtime_key.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace tandem {

/// How two handles' bytes relate, by byte sets.
enum class Overlap : std::uint8_t {
    /// No byte in common (different memory, or an empty range on either side).
    Disjoint,
    /// The same bytes.
    Same,
    /// Some bytes in common, but not all.
    Partial,
};

/// "Disjoint", "Same" or "Partial".
std::string_view to_string(Overlap overlap);
/// How the bytes of `a` relate to those of `b`.
Overlap overlap(const ClaimKey& a, const ClaimKey& b);

class BufferBinding;
class WeakBufferBinding;

/// What a user holds for device memory: which bytes of which allocation, on which device, and the
/// stream it was allocated on. It counts as a strong reference (`can_mut()`); copies share the
/// allocation, and the allocation is freed once the last handle and binding are gone.
class Handle {
public:
    /// Only a backend builds a handle, over memory it allocated (`RuntimeKey`).
    Handle(RuntimeKey, ManagedMemoryHandle memory, ServiceId service, StreamId stream,
           std::uint64_t size_bytes);

    /// The strong reference to the allocation.
    [[nodiscard]] const ManagedMemoryHandle& memory() const { return memory_; }
    /// Whether it holds no memory: it was moved from. A client refuses such a handle with
    /// `InvalidArgument`. Its own members still answer, as naming no memory: memory id 0,
    /// `can_mut()` false, `Disjoint` from every handle, a binding as empty, and `describe()`
    /// says it was moved from.
    [[nodiscard]] bool empty() const { return memory_.empty(); }
    /// The allocation's id.
    [[nodiscard]] MemoryId memory_id() const { return memory_.id(); }
    /// The device that owns the memory.
    [[nodiscard]] ServiceId service() const { return service_; }
    /// The stream the memory was allocated on.
    [[nodiscard]] StreamId stream() const { return stream_; }
    /// The allocation's size and this handle's offsets.
    [[nodiscard]] const Extent& extent() const { return extent_; }
    /// The size of the allocation, ignoring offsets.
    [[nodiscard]] std::uint64_t size() const { return extent_.size(); }
    /// Bytes trimmed from the allocation's start.
    [[nodiscard]] std::uint64_t offset_start() const { return extent_.offset_start(); }
    /// Bytes trimmed from the allocation's end.
    [[nodiscard]] std::uint64_t offset_end() const { return extent_.offset_end(); }
    /// The bytes this handle addresses: `[offset_start, size - offset_end)`.
    [[nodiscard]] ByteRange range() const { return extent_.range(); }
    /// How many bytes this handle addresses.
    [[nodiscard]] std::uint64_t size_in_use() const { return extent_.size_in_use(); }
    /// The allocation and exactly `range()`, as claims name them.
    [[nodiscard]] ClaimKey claim_key() const { return ClaimKey{memory_id(), range()}; }
    /// The memory shared with peers, once the owning client shared it.
    [[nodiscard]] const std::optional<PeerMemory>& peer() const { return peer_; }

    /// Whether this is the only handle of its memory: it may be written in place.
    [[nodiscard]] bool can_mut() const { return memory_.can_mut(); }

    /// This handle with `offset_start` grown by `bytes`; `InvalidArgument` past the size.
    [[nodiscard]] Result<Handle> add_offset_start(std::uint64_t bytes) const;
    /// This handle with `offset_end` grown by `bytes`; `InvalidArgument` past the size.
    [[nodiscard]] Result<Handle> add_offset_end(std::uint64_t bytes) const;
    /// `length_bytes` bytes at `offset_bytes` into this handle's range; `InvalidArgument` past it.
    [[nodiscard]] Result<Handle> slice(std::uint64_t offset_bytes,
                                       std::uint64_t length_bytes) const;

    /// How this handle's bytes relate to `other`'s.
    [[nodiscard]] Overlap overlap(const Handle& other) const;
    /// A binding of the same bytes, for work: it keeps the memory reserved without counting for
    /// `can_mut()`.
    [[nodiscard]] BufferBinding binding() const;

    /// This handle with its memory shared as `peer`. The owning client calls it.
    [[nodiscard]] Handle with_peer(PeerMemory peer) const;

    /// The label the program gave the allocation (`Client::allocate(size, {.label = ...})`), the
    /// same through every handle of it; empty when it has none, or the handle was moved from.
    [[nodiscard]] std::string label() const;
    /// The handle in words, for messages: "Handle{memory #3, device 0, stream 1,
    /// size 1024, bytes [0, 1024)}", with labels where the program gave them
    /// ("memory #3 'weights'").
    [[nodiscard]] std::string describe() const;

private:
    Handle(const Handle& base, Extent extent);
    ManagedMemoryHandle memory_;
    ServiceId service_;
    StreamId stream_;
    Extent extent_;
    std::optional<PeerMemory> peer_;
};

/// A handle detached for work: reserves its memory without counting for `can_mut()`.
class BufferBinding {
public:
    /// `handle.binding()`, built where it is declared (in a container, say) without a move.
    explicit BufferBinding(const Handle& handle);

    /// The binding reference to the allocation.
    [[nodiscard]] const ManagedMemoryBinding& memory() const { return memory_; }
    /// The allocation's id.
    [[nodiscard]] MemoryId memory_id() const { return memory_.id(); }
    /// The device that owns the memory.
    [[nodiscard]] ServiceId service() const { return service_; }
    /// The stream the memory was allocated on.
    [[nodiscard]] StreamId stream() const { return stream_; }
    /// The allocation's size and this binding's offsets.
    [[nodiscard]] const Extent& extent() const { return extent_; }
    /// The size of the allocation, ignoring offsets.
    [[nodiscard]] std::uint64_t size() const { return extent_.size(); }
    /// Bytes trimmed from the allocation's start.
    [[nodiscard]] std::uint64_t offset_start() const { return extent_.offset_start(); }
    /// Bytes trimmed from the allocation's end.
    [[nodiscard]] std::uint64_t offset_end() const { return extent_.offset_end(); }
    /// How many bytes this binding addresses.
    [[nodiscard]] std::uint64_t size_in_use() const { return extent_.size_in_use(); }
    /// The memory shared with peers, if the owner shared it.
    [[nodiscard]] const std::optional<PeerMemory>& peer() const { return peer_; }

    /// `[offset_start, size - offset_end)`: the bytes claimed when work writing through this
    /// binding fails, and released when it lands.
    [[nodiscard]] ByteRange range() const { return extent_.range(); }
    /// The allocation and exactly `range()`. Deduplicate and compare claims by this alone: two
    /// tensors carved from one allocation share a memory id and nothing else.
    [[nodiscard]] ClaimKey claim_key() const { return ClaimKey{memory_id(), range()}; }

    /// The address of the first byte of `range()` on the device that owns the allocation.
    [[nodiscard]] std::uint64_t start_address() const {
        return memory_.allocation().address + extent_.offset_start();
    }

    /// A weak binding of the same bytes, which does not keep the memory reserved.
    [[nodiscard]] WeakBufferBinding downgrade() const;

private:
    friend class HeldBindings;       // Moves the reference out as work takes the binding.
    friend class WeakBufferBinding;  // Upgrades back to a binding.
    /// A binding of `memory`'s bytes that `extent` leaves, on `service`, allocated on `stream`;
    /// `peer` when the memory was shared.
    BufferBinding(ManagedMemoryBinding memory, ServiceId service, StreamId stream, Extent extent,
                  std::optional<PeerMemory> peer);
    ManagedMemoryBinding memory_;
    ServiceId service_;
    StreamId stream_;
    Extent extent_;
    std::optional<PeerMemory> peer_;
};

/// A binding that does not keep its memory reserved: what a record holds when holding the
/// buffer would change what its pool may reuse.
class WeakBufferBinding {
public:
    /// The binding back, while its memory is still held; never a later occupant. The peer memory
    /// is not carried over.
    [[nodiscard]] std::optional<BufferBinding> upgrade() const;
    /// The allocation and exactly the bytes bound, as claims name them.
    [[nodiscard]] ClaimKey claim_key() const { return ClaimKey{memory_.id(), extent_.range()}; }

private:
    friend class BufferBinding;
    WeakBufferBinding(WeakMemoryBinding memory, ServiceId service, StreamId stream, Extent extent);
    WeakMemoryBinding memory_;
    ServiceId service_;
    StreamId stream_;
    Extent extent_;
};

}  // namespace tandem
