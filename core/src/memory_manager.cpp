#include "tandem/core/memory_manager.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cassert>
#include <string>

namespace tandem {

/// Collects the ids of released allocations from whichever thread dropped them. The manager asks
/// `pending()` before every allocation, so an allocation that follows no release pays one atomic
/// load instead of a lock; `take` swaps buffers, so neither side calls the heap once both have
/// grown to the working size.
class MemoryManager::ReleaseQueue final : public ReleaseSink {
public:
    void released(MemoryId memory) noexcept override {
        std::lock_guard lock(mutex_);
        try {
            ids_.push_back(memory);
            pending_.store(true, std::memory_order_release);
        } catch (...) {
            // Out of host memory while dropping a handle: the allocation stays reserved until the
            // manager goes, which loses bytes but never hands out memory still in use.
        }
    }
    [[nodiscard]] bool pending() const { return pending_.load(std::memory_order_acquire); }
    /// Moves the released ids into `into`, which must be empty, keeping both buffers' capacity.
    void take(std::vector<MemoryId>& into) {
        assert(into.empty());
        std::lock_guard lock(mutex_);
        ids_.swap(into);
        pending_.store(false, std::memory_order_relaxed);
    }

private:
    std::mutex mutex_;
    std::vector<MemoryId> ids_;
    std::atomic<bool> pending_{false};
};

namespace {

std::uint64_t round_up(std::uint64_t size_bytes, std::uint64_t alignment) {
    // Sizes are at most 2^62 here, so the sum cannot wrap; alignments are powers of two (checked in
    // the constructor), so a mask replaces the division.
    return (size_bytes + alignment - 1) & ~(alignment - 1);
}

}  // namespace

MemoryManager::MemoryManager(Storage& storage, StreamOrder& order, PoolOptions options)
    : storage_(storage),
      order_(order),
      options_(options),
      sliced_(storage, order, options.page_size_bytes),
      exclusive_(storage, order),
      released_(std::make_shared<ReleaseQueue>()) {
    assert(options_.slice_max_bytes <= options_.page_size_bytes);
    assert(std::has_single_bit(storage_.alignment_bytes()));
}

MemoryManager::~MemoryManager() = default;

void MemoryManager::set_freed_listener(std::function<void(const AllocationInfo&)> listener) {
    std::lock_guard lock(mutex_);
    freed_listener_ = std::move(listener);
}

MemoryPool& MemoryManager::pool_for(std::uint64_t size_bytes) {
    if (size_bytes <= options_.slice_max_bytes) {
        return sliced_;
    }
    return exclusive_;
}

Result<std::pair<ManagedMemoryHandle, AllocationInfo>> MemoryManager::allocate(
    std::uint64_t size_bytes, StreamId stream) {
    if (size_bytes == 0) {
        return Error::invalid_argument("an allocation of zero bytes");
    }
    if (size_bytes > max_allocation_bytes) {
        return Error::invalid_argument("an allocation of " + std::to_string(size_bytes) +
                                       " bytes is over the limit of 2^62 bytes");
    }
    std::lock_guard lock(mutex_);
    sweep_locked();
    const std::uint64_t block_bytes = round_up(size_bytes, storage_.alignment_bytes());
    MemoryPool& pool = pool_for(block_bytes);
    Result<PoolBlock> block = pool.allocate(block_bytes, stream);
    if (!block && block.error().kind() == ErrorKind::OutOfMemory) {
        // Memory really ran out only if cached regions and idle pages cannot make room.
        sliced_.trim();
        exclusive_.trim();
        block = pool.allocate(block_bytes, stream);
    }
    if (!block) {
        if (block.error().kind() != ErrorKind::OutOfMemory) {
            return block.error();
        }
        const MemoryUsage usage = usage_locked();
        return Error::out_of_memory(
                   "cannot allocate " + std::to_string(size_bytes) + " bytes",
                   OutOfMemoryDetails{size_bytes, usage.free_bytes, usage.reserved_bytes,
                                      usage.largest_free_block_bytes})
            .caused_by(block.error());
    }
    AllocationInfo info{MemoryId::next(), block->address, size_bytes, stream};
    live_.insert(info.id.value, info);
    if (options_.index_addresses) {
        address_nodes_.emplace(by_address_, info.address, info.id);
    }
    return std::pair{ManagedMemoryHandle::create(info.id, released_), info};
}

std::size_t MemoryManager::sweep() {
    std::lock_guard lock(mutex_);
    return sweep_locked();
}

std::size_t MemoryManager::sweep_locked() {
    if (!released_->pending()) {
        return 0;
    }
    released_->take(sweeping_);
    for (MemoryId memory : sweeping_) {
        const AllocationInfo* found = live_.find(memory.value);
        assert(found != nullptr && "a released allocation is live until swept");
        const AllocationInfo info = *found;
        if (freed_listener_) {
            freed_listener_(info);
        }
        const std::uint64_t block_bytes = round_up(info.size_bytes, storage_.alignment_bytes());
        pool_for(block_bytes)
            .free(PoolBlock{info.address, block_bytes},
                  ReleaseMark{info.stream, order_.record(info.stream)});
        if (options_.index_addresses) {
            address_nodes_.erase(by_address_, by_address_.find(info.address));
        }
        live_.erase(memory.value);
    }
    const std::size_t swept = sweeping_.size();
    sweeping_.clear();
    return swept;
}

std::optional<AllocationInfo> MemoryManager::find(MemoryId memory) const {
    std::lock_guard lock(mutex_);
    const AllocationInfo* found = live_.find(memory.value);
    if (found == nullptr) {
        return std::nullopt;
    }
    return *found;
}

std::optional<AllocationInfo> MemoryManager::find_address(std::uint64_t address) const {
    std::lock_guard lock(mutex_);
    auto after = by_address_.upper_bound(address);
    if (after == by_address_.begin()) {
        return std::nullopt;
    }
    const AllocationInfo* live = live_.find(std::prev(after)->second.value);
    assert(live != nullptr && "every address entry names a live allocation");
    const AllocationInfo& info = *live;
    if (address - info.address >= info.size_bytes) {
        return std::nullopt;
    }
    return info;
}

MemoryUsage MemoryManager::usage() const {
    std::lock_guard lock(mutex_);
    return usage_locked();
}

MemoryUsage MemoryManager::usage_locked() const {
    const PoolUsage sliced = sliced_.usage();
    const PoolUsage exclusive = exclusive_.usage();
    MemoryUsage usage;
    usage.in_use_bytes = sliced.in_use_bytes + exclusive.in_use_bytes;
    usage.reserved_bytes = sliced.reserved_bytes + exclusive.reserved_bytes;
    usage.capacity_bytes = storage_.capacity_bytes();
    usage.free_bytes = usage.capacity_bytes - usage.in_use_bytes;
    usage.largest_free_block_bytes =
        std::max({sliced.largest_free_block_bytes, exclusive.largest_free_block_bytes,
                  storage_.largest_reservable_bytes()});
    return usage;
}

std::size_t MemoryManager::live_count() const {
    std::lock_guard lock(mutex_);
    return live_.size();
}

}  // namespace tandem
