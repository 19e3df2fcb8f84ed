#pragma once

// Pools carve storage regions into allocations and reuse freed ones in stream order.
//
// `SlicedPool` serves small allocations from shared pages, so thousands of small tensors cost a few
// storage reservations; `ExclusivePool` gives each large allocation a region of its own and caches
// freed regions for a later request of similar size. Both reuse a block at once on the stream that
// released it, and on another stream only after that stream waits for the release event. Pools are
// not thread-safe; `MemoryManager` serialises them.

#include "tandem/backend/detail/id_table.hpp"
#include "tandem/backend/detail/node_cache.hpp"
#include "tandem/backend/storage.hpp"
#include "tandem/backend/stream_order.hpp"
#include "tandem/core/result.hpp"

#include <cstdint>
#include <map>
#include <optional>

namespace tandem {

/// A block handed out by a pool.
struct PoolBlock {
    /// The block's first device address.
    std::uint64_t address = 0;
    /// The block's length.
    std::uint64_t size_bytes = 0;
};

/// One pool's memory figures, in bytes.
struct PoolUsage {
    /// Bytes of the blocks handed out.
    std::uint64_t in_use_bytes = 0;
    /// Bytes the pool holds from storage.
    std::uint64_t reserved_bytes = 0;
    /// The largest block the pool could hand out now without new storage.
    std::uint64_t largest_free_block_bytes = 0;
};

/// A pool that carves storage regions into blocks and reuses freed ones in stream order: at once on
/// the stream that released a block, on another stream only after it waits for the release. Not
/// thread-safe; `MemoryManager` serialises its pools.
class MemoryPool {
public:
    /// A pool over `storage`, ordering reuse by `order`; both must outlive it.
    MemoryPool(Storage& storage, StreamOrder& order) : storage_(storage), order_(order) {}
    virtual ~MemoryPool() = default;
    MemoryPool(const MemoryPool&) = delete;
    MemoryPool& operator=(const MemoryPool&) = delete;

    /// A block of `size_bytes` (already rounded to the storage alignment) usable on `stream`, or
    /// `OutOfMemory` when neither a free block nor new storage has room.
    virtual Result<PoolBlock> allocate(std::uint64_t size_bytes, StreamId stream) = 0;
    /// As `allocate`, but only from blocks already freed: empty where that would need new storage.
    virtual std::optional<PoolBlock> reuse(std::uint64_t size_bytes, StreamId stream) = 0;
    /// Takes back a block released on `mark.stream`.
    virtual void free(PoolBlock block, ReleaseMark mark) = 0;
    /// Gives unused storage back; returns the bytes given back.
    virtual std::uint64_t trim() = 0;
    /// The pool's memory figures now.
    [[nodiscard]] virtual PoolUsage usage() const = 0;

protected:
    /// Whether a block released under `mark` may be used on `stream` without waiting.
    [[nodiscard]] bool ready(const std::optional<ReleaseMark>& mark, StreamId stream) const;
    /// Makes `stream` wait for `mark` unless the block is ready for it.
    void order_after(const std::optional<ReleaseMark>& mark, StreamId stream);
    /// The mark of two adjacent free blocks fused into one, or none if they cannot fuse.
    [[nodiscard]] std::optional<std::optional<ReleaseMark>> fuse_marks(
        const std::optional<ReleaseMark>& a, const std::optional<ReleaseMark>& b) const;

    /// Where the pool's regions come from.
    Storage& storage_;
    /// How the pool learns that a release completed on another stream.
    StreamOrder& order_;
};

/// Small allocations carved from shared pages of `page_size_bytes`.
class SlicedPool final : public MemoryPool {
public:
    /// A pool taking pages of `page_size_bytes` from `storage`.
    SlicedPool(Storage& storage, StreamOrder& order, std::uint64_t page_size_bytes);
    ~SlicedPool() override;

    Result<PoolBlock> allocate(std::uint64_t size_bytes, StreamId stream) override;
    std::optional<PoolBlock> reuse(std::uint64_t size_bytes, StreamId stream) override;
    void free(PoolBlock block, ReleaseMark mark) override;
    std::uint64_t trim() override;
    /// The pool's memory figures now.
    [[nodiscard]] PoolUsage usage() const override;

private:
    struct FreeBlock {
        std::uint64_t size_bytes;
        std::optional<ReleaseMark> mark;
    };
    struct Page {
        StorageRegion region;
        std::map<std::uint64_t, FreeBlock> free;  // By address; nodes from `free_nodes_`.
        std::uint64_t used_bytes = 0;
    };
    std::optional<PoolBlock> take_free(std::uint64_t size_bytes, StreamId stream, bool ready_only);

    using FreeBlocks = std::map<std::uint64_t, FreeBlock>;
    const std::uint64_t page_size_bytes_;
    std::map<std::uint64_t, Page> pages_;  // By base address.
    detail::NodeCache<FreeBlocks> free_nodes_;
};

/// Large allocations, each in a region of its own; freed regions are cached for reuse.
class ExclusivePool final : public MemoryPool {
public:
    /// A pool taking a region of its own from `storage` for each block.
    ExclusivePool(Storage& storage, StreamOrder& order);
    ~ExclusivePool() override;

    Result<PoolBlock> allocate(std::uint64_t size_bytes, StreamId stream) override;
    std::optional<PoolBlock> reuse(std::uint64_t size_bytes, StreamId stream) override;
    void free(PoolBlock block, ReleaseMark mark) override;
    std::uint64_t trim() override;
    /// The pool's memory figures now.
    [[nodiscard]] PoolUsage usage() const override;

private:
    PoolBlock hand_out(const StorageRegion& region);
    struct Cached {
        StorageRegion region;
        std::optional<ReleaseMark> mark;
    };
    using Cache = std::multimap<std::uint64_t, Cached>;
    Cache cache_;                          // By size.
    detail::IdTable<StorageRegion> live_;  // By address.
    detail::NodeCache<Cache> cache_nodes_;
    std::uint64_t in_use_bytes_ = 0;
};

}  // namespace tandem
