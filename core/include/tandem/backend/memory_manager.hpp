#pragma once

// A device's memory: the pools, the allocations they handed out, and the sweep that returns
// released allocations to their pool.
//
// An allocation is released when its last handle or binding is dropped; the control block tells the
// manager's release queue, and the next sweep (every allocation starts with one) frees the block in
// stream order and tells the listener, so the claim store sheds the allocation's claims (rule C5)
// before its bytes can be handed out again.
//
// A swept block is first parked: the next request for the same block size on the same stream takes
// it back without a pool search, since a stream may reuse what it released at once. Programs that
// allocate and free a working set of tensors in a loop stay on that path. A parked block goes back
// to its pool when the cache is full, and whenever a request finds no free block in the pools,
// before any new storage is reserved: a program never reserves storage that its released blocks
// could have served.

#include "tandem/backend/detail/node_cache.hpp"
#include "tandem/backend/detail/spin_lock.hpp"
#include "tandem/core/handle.hpp"
#include "tandem/backend/memory_pool.hpp"
#include "tandem/core/memory_reference.hpp"
#include "tandem/core/memory_usage.hpp"
#include "tandem/core/pool_options.hpp"
#include "tandem/core/result.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <unordered_map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace tandem {

/// One device's allocator: pools over a `Storage` that hand out counted references, free an
/// allocation once nothing holds it and the stream that used it last has passed, and reuse its
/// bytes (rule C5 sheds its claims). `OutOfMemory` only when the bytes really cannot be found.
class MemoryManager {
public:
    /// Requests over this many bytes are refused as absurd, before any arithmetic on them.
    static constexpr std::uint64_t max_allocation_bytes = std::uint64_t{1} << 62;

    /// A manager over `storage`, ordering reuse by `order`; both must outlive it. Its
    /// allocations' ids carry `rank`, the rank of the job its device serves (`ServiceId::rank`;
    /// `ServiceId::no_rank` outside a job), whatever else the process holds (`MemoryId::next`).
    MemoryManager(Storage& storage, StreamOrder& order, PoolOptions options = {},
                  std::uint32_t rank = ServiceId::no_rank);
    ~MemoryManager();
    MemoryManager(const MemoryManager&) = delete;
    MemoryManager& operator=(const MemoryManager&) = delete;

    /// Called with each allocation the sweep frees, before its bytes can be reused.
    void set_freed_listener(std::function<void(const AllocationInfo&)> listener);

    /// A new allocation of `size_bytes` on `stream`: its first strong reference, which carries
    /// its `AllocationInfo`. `InvalidArgument` for zero or over `max_allocation_bytes`;
    /// `OutOfMemory` with the usage figures when the bytes cannot be found even after sweeping
    /// and trimming.
    Result<ManagedMemoryHandle> allocate(std::uint64_t size_bytes, StreamId stream);
    /// Frees every released allocation; returns how many were freed.
    std::size_t sweep();

    /// The live allocation whose bytes contain `address`; always empty unless the options index
    /// addresses. It walks the live allocations: it serves fault reports, which are rare. (A live
    /// allocation by id needs no look-up: its references carry it.)
    [[nodiscard]] std::optional<AllocationInfo> find_address(std::uint64_t address) const;
    /// The memory figures now.
    [[nodiscard]] MemoryUsage usage() const;
    /// How many allocations are live.
    [[nodiscard]] std::size_t live_count() const;

    /// How many swept blocks wait, at most, for a request of their size on their stream.
    static constexpr std::size_t max_parked = 16;
    /// How many control blocks of swept allocations are kept for reuse, at most.
    static constexpr std::size_t max_spare_blocks = 64;

private:
    class ReleaseQueue;
    /// A swept block held back from its pool for the stream that released it.
    struct Parked {
        StreamId stream;
        PoolBlock block;
        EventToken released;
    };
    MemoryPool& pool_for(std::uint64_t size_bytes);
    std::size_t sweep_locked();
    void park(const AllocationInfo& info, std::uint64_t block_bytes);
    std::optional<PoolBlock> unpark(std::uint64_t block_bytes, StreamId stream);
    void return_parked(std::size_t index);
    void return_all_parked();
    Result<PoolBlock> take_block(std::uint64_t block_bytes, StreamId stream);
    [[nodiscard]] MemoryUsage usage_locked() const;

    Storage& storage_;
    StreamOrder& order_;
    PoolOptions options_;
    /// The rank every id this manager draws carries.
    std::uint32_t rank_;
    SlicedPool sliced_;
    ExclusivePool exclusive_;
    /// Closed and let go, not deleted, when the manager goes: see ReleaseQueue.
    std::unique_ptr<ReleaseQueue> released_;
    std::function<void(const AllocationInfo&)> freed_listener_;
    mutable detail::SpinLock lock_;
    /// By start address. Hashed, not ordered: every allocation and free pays the index, while a
    /// search for the allocation holding an address comes with a fault report and may walk it.
    /// Ordered, a million live allocations made each allocate and free three times as slow, a
    /// tree's levels missing the caches.
    using ByAddress = std::unordered_map<std::uint64_t, AllocationInfo>;
    std::size_t live_count_ = 0;
    ByAddress by_address_;
    detail::NodeCache<ByAddress> address_nodes_;
    std::vector<Parked> parked_;  // Oldest first.
    std::vector<detail::MemoryControl*> spare_blocks_;  // Control blocks to reuse.
};

}  // namespace tandem
