#pragma once

// A device's memory: the pools, the allocations they handed out, and the sweep that returns
// released allocations to their pool.
//
// An allocation is released when its last handle or binding is dropped; the control block tells the
// manager's release queue, and the next sweep (every allocation starts with one) frees the block in
// stream order and tells the listener, so the claim store sheds the allocation's claims (rule C5)
// before its bytes can be handed out again.

#include "tandem/core/detail/id_table.hpp"
#include "tandem/core/detail/node_cache.hpp"
#include "tandem/core/handle.hpp"
#include "tandem/core/memory_pool.hpp"
#include "tandem/core/memory_reference.hpp"
#include "tandem/core/result.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace tandem {

struct PoolOptions {
    /// Requests up to this size go to the sliced pool; larger ones get a region of their own.
    std::uint64_t slice_max_bytes = 256 * 1024;
    std::uint64_t page_size_bytes = 2 * 1024 * 1024;
    /// Keeps the live allocations ordered by address, for `find_address` (the simulator's fault
    /// reports name the allocation an address falls in). Costs a tree insert and erase per
    /// allocation; a backend that never asks turns it off.
    bool index_addresses = true;
};

struct MemoryUsage {
    std::uint64_t in_use_bytes = 0;
    std::uint64_t reserved_bytes = 0;
    std::uint64_t capacity_bytes = 0;
    std::uint64_t free_bytes = 0;
    std::uint64_t largest_free_block_bytes = 0;
};

/// A live allocation: where it is and on which stream it was made.
struct AllocationInfo {
    MemoryId id;
    std::uint64_t address = 0;
    std::uint64_t size_bytes = 0;
    StreamId stream;
};

class MemoryManager {
public:
    /// Requests over this many bytes are refused as absurd, before any arithmetic on them.
    static constexpr std::uint64_t max_allocation_bytes = std::uint64_t{1} << 62;

    MemoryManager(Storage& storage, StreamOrder& order, PoolOptions options = {});
    ~MemoryManager();
    MemoryManager(const MemoryManager&) = delete;
    MemoryManager& operator=(const MemoryManager&) = delete;

    /// Called with each allocation the sweep frees, before its bytes can be reused.
    void set_freed_listener(std::function<void(const AllocationInfo&)> listener);

    /// A new allocation of `size_bytes` on `stream` and its first strong reference.
    /// `InvalidArgument` for zero or over `max_allocation_bytes`; `OutOfMemory` with the usage
    /// figures when the bytes cannot be found even after sweeping and trimming.
    Result<std::pair<ManagedMemoryHandle, AllocationInfo>> allocate(std::uint64_t size_bytes,
                                                                    StreamId stream);
    /// Frees every released allocation; returns how many were freed.
    std::size_t sweep();

    [[nodiscard]] std::optional<AllocationInfo> find(MemoryId memory) const;
    /// The live allocation whose bytes contain `address`; always empty unless the options index
    /// addresses.
    [[nodiscard]] std::optional<AllocationInfo> find_address(std::uint64_t address) const;
    [[nodiscard]] MemoryUsage usage() const;
    [[nodiscard]] std::size_t live_count() const;

private:
    class ReleaseQueue;
    MemoryPool& pool_for(std::uint64_t size_bytes);
    std::size_t sweep_locked();
    [[nodiscard]] MemoryUsage usage_locked() const;

    Storage& storage_;
    StreamOrder& order_;
    PoolOptions options_;
    SlicedPool sliced_;
    ExclusivePool exclusive_;
    std::shared_ptr<ReleaseQueue> released_;
    std::function<void(const AllocationInfo&)> freed_listener_;
    mutable std::mutex mutex_;
    using ByAddress = std::map<std::uint64_t, MemoryId>;
    detail::IdTable<AllocationInfo> live_;  // By memory id.
    ByAddress by_address_;
    detail::NodeCache<ByAddress> address_nodes_;
    std::vector<MemoryId> sweeping_;  // The sweep's buffer, kept to keep its capacity.
};

}  // namespace tandem
