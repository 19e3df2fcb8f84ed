#include "tandem/core/memory_manager.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cassert>
#include <string>

namespace tandem {

/// Collects released allocations from whichever thread dropped them, without a lock or a heap
/// call: a released control block is pushed onto an intrusive stack and owns itself until the
/// sweep takes it. The manager asks `pending()` before every allocation, so an allocation that
/// follows no release pays one atomic load; a sweep takes the whole stack with one exchange.
///
/// When the manager goes, it closes the queue: blocks released later (their handles may outlive
/// the manager) are dropped at once instead of queued, since no sweep would ever take them.
class MemoryManager::ReleaseQueue final : public ReleaseSink {
public:
    using Block = detail::MemoryControl;

    void released(std::shared_ptr<Block>& control) noexcept override {
        Block* block = control.get();
        // The block owns itself before it is published: a sweep may take it at once.
        block->queued_self = std::move(control);
        Block* head = head_.load(std::memory_order_relaxed);
        do {
            if (head == closed()) {
                control = std::move(block->queued_self);  // Dropped by the caller.
                return;
            }
            block->queued_next = head;
        } while (!head_.compare_exchange_weak(head, block, std::memory_order_release,
                                              std::memory_order_relaxed));
    }

    [[nodiscard]] bool pending() const {
        return head_.load(std::memory_order_acquire) != nullptr;
    }

    /// Calls `sweep` with each released allocation, oldest first, and drops the blocks. If `sweep`
    /// throws, the blocks not yet swept are dropped unswept: their bytes stay reserved until the
    /// manager goes, which loses them but never hands out memory still in use.
    template <typename Sweep>
    std::size_t take(Sweep&& sweep) {
        Dropper taken{reversed(head_.exchange(nullptr, std::memory_order_acquire))};
        std::size_t count = 0;
        while (taken.list != nullptr) {
            std::shared_ptr<Block> owned = taken.pop();
            sweep(owned->allocation);
            ++count;
        }
        return count;
    }

    /// Drops every queued block and refuses later ones. The manager calls it as it goes.
    void close() { Dropper dropped{head_.exchange(closed(), std::memory_order_acquire)}; }

private:
    /// Owns a detached list and drops whatever is left of it.
    struct Dropper {
        Block* list;
        std::shared_ptr<Block> pop() {
            Block* block = list;
            list = block->queued_next;
            return std::move(block->queued_self);
        }
        ~Dropper() {
            while (list != nullptr) {
                pop();
            }
        }
    };
    static Block* reversed(Block* list) {
        Block* reversed = nullptr;
        while (list != nullptr) {
            Block* next = list->queued_next;
            list->queued_next = reversed;
            reversed = list;
            list = next;
        }
        return reversed;
    }
    /// Marks a closed queue: an address no control block can have.
    static Block* closed() {
        static char tag;
        return reinterpret_cast<Block*>(&tag);
    }

    std::atomic<Block*> head_{nullptr};
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
    parked_.reserve(max_parked);
}

MemoryManager::~MemoryManager() { released_->close(); }

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
    Result<PoolBlock> block = take_block(block_bytes, stream);
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
    const AllocationInfo info{MemoryId::next(), block->address, size_bytes, stream};
    if (options_.index_addresses) {
        address_nodes_.emplace(by_address_, info.address, info);
    }
    ++live_count_;
    return std::pair{ManagedMemoryHandle::create(info, released_), info};
}

Result<PoolBlock> MemoryManager::take_block(std::uint64_t block_bytes, StreamId stream) {
    if (std::optional<PoolBlock> parked = unpark(block_bytes, stream)) {
        return *parked;
    }
    MemoryPool& pool = pool_for(block_bytes);
    if (std::optional<PoolBlock> reused = pool.reuse(block_bytes, stream)) {
        return *reused;
    }
    if (!parked_.empty()) {
        // Parked blocks go back before new storage is reserved: in their pools they fuse with
        // their free neighbours and serve other sizes and, after an event wait, other streams.
        return_all_parked();
        if (std::optional<PoolBlock> reused = pool.reuse(block_bytes, stream)) {
            return *reused;
        }
    }
    Result<PoolBlock> block = pool.allocate(block_bytes, stream);
    if (!block && block.error().kind() == ErrorKind::OutOfMemory) {
        // Memory really ran out only if cached regions and idle pages cannot make room.
        sliced_.trim();
        exclusive_.trim();
        block = pool.allocate(block_bytes, stream);
    }
    return block;
}

std::optional<PoolBlock> MemoryManager::unpark(std::uint64_t block_bytes, StreamId stream) {
    // Newest first: the block this stream released last is the likeliest still in cache.
    for (std::size_t index = parked_.size(); index-- > 0;) {
        const Parked& parked = parked_[index];
        if (parked.block.size_bytes == block_bytes && parked.stream == stream) {
            const PoolBlock block = parked.block;
            parked_bytes_ -= block.size_bytes;
            parked_.erase(parked_.begin() + static_cast<std::ptrdiff_t>(index));
            return block;
        }
    }
    return std::nullopt;
}

void MemoryManager::park(const AllocationInfo& info, std::uint64_t block_bytes) {
    if (parked_.size() == max_parked) {
        return_parked(0);
    }
    parked_.push_back(Parked{info.stream, PoolBlock{info.address, block_bytes},
                             order_.record(info.stream)});
    parked_bytes_ += block_bytes;
}

void MemoryManager::return_all_parked() {
    while (!parked_.empty()) {
        return_parked(parked_.size() - 1);
    }
}

void MemoryManager::return_parked(std::size_t index) {
    const Parked parked = parked_[index];
    parked_.erase(parked_.begin() + static_cast<std::ptrdiff_t>(index));
    parked_bytes_ -= parked.block.size_bytes;
    pool_for(parked.block.size_bytes).free(parked.block, ReleaseMark{parked.stream, parked.released});
}

std::size_t MemoryManager::sweep() {
    std::lock_guard lock(mutex_);
    return sweep_locked();
}

std::size_t MemoryManager::sweep_locked() {
    if (!released_->pending()) {
        return 0;
    }
    return released_->take([this](const AllocationInfo& info) {
        if (freed_listener_) {
            freed_listener_(info);
        }
        if (options_.index_addresses) {
            address_nodes_.erase(by_address_, by_address_.find(info.address));
        }
        park(info, round_up(info.size_bytes, storage_.alignment_bytes()));
        --live_count_;
    });
}

std::optional<AllocationInfo> MemoryManager::find_address(std::uint64_t address) const {
    std::lock_guard lock(mutex_);
    auto after = by_address_.upper_bound(address);
    if (after == by_address_.begin()) {
        return std::nullopt;
    }
    const AllocationInfo& info = std::prev(after)->second;
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
    // Parked blocks are in use for their pools, and free for everyone else.
    usage.in_use_bytes = sliced.in_use_bytes + exclusive.in_use_bytes - parked_bytes_;
    usage.reserved_bytes = sliced.reserved_bytes + exclusive.reserved_bytes;
    usage.capacity_bytes = storage_.capacity_bytes();
    usage.free_bytes = usage.capacity_bytes - usage.in_use_bytes;
    usage.largest_free_block_bytes =
        std::max({sliced.largest_free_block_bytes, exclusive.largest_free_block_bytes,
                  storage_.largest_reservable_bytes()});
    for (const Parked& parked : parked_) {
        usage.largest_free_block_bytes =
            std::max(usage.largest_free_block_bytes, parked.block.size_bytes);
    }
    return usage;
}

std::size_t MemoryManager::live_count() const {
    std::lock_guard lock(mutex_);
    return live_count_;
}

}  // namespace tandem
