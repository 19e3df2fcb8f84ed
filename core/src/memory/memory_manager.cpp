#include "tandem/backend/memory_manager.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cassert>
#include <string>

namespace tandem {

/// Collects released allocations from whichever thread dropped them, without a lock or a heap
/// call: a released control block is pushed onto an intrusive stack, holding the holders' weak
/// reference, until the sweep takes it. The manager asks `pending()` before every allocation, so an
/// allocation that follows no release pays one atomic load; a sweep takes the whole stack with one
/// exchange.
///
/// The blocks point at the queue without owning it: when the manager goes it closes the queue,
/// which then lives on for the allocations still held (their handles may outlive the manager),
/// drops each as it is released, and deletes itself with the last.
class MemoryManager::ReleaseQueue final : public ReleaseSink {
public:
    using Block = detail::MemoryControl;

    void released(Block& block) noexcept override {
        Block* head = head_.load(std::memory_order_relaxed);
        do {
            if (head == closed()) {
                block.drop_weak();
                if (orphans_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
                    delete this;  // The last allocation of a manager that is gone.
                }
                return;
            }
            block.queued_next = head;
        } while (!head_.compare_exchange_weak(head, &block, std::memory_order_release,
                                              std::memory_order_relaxed));
    }

    [[nodiscard]] bool pending() const {
        return head_.load(std::memory_order_acquire) != nullptr;
    }

    /// Calls `sweep` with each released block, oldest first; `sweep` takes over the block's weak
    /// reference. If it throws, the blocks not yet swept are dropped unswept: their bytes stay
    /// reserved until the manager goes, which loses them but never hands out memory still in use.
    template <typename Sweep>
    std::size_t take(Sweep&& sweep) {
        Detached taken{reversed(head_.exchange(nullptr, std::memory_order_acquire))};
        std::size_t count = 0;
        while (taken.list != nullptr) {
            sweep(*taken.pop());
            ++count;
        }
        return count;
    }

    /// Closes `queue` as its manager goes, `live` of whose allocations were not swept yet: drops
    /// the released ones, and leaves the queue to the rest (deleting it now if there are none).
    static void close(ReleaseQueue* queue, std::size_t live) {
        auto held = static_cast<std::int64_t>(live);
        {
            Detached dropped{queue->head_.exchange(closed(), std::memory_order_acquire)};
            while (dropped.list != nullptr) {
                dropped.pop()->drop_weak();
                --held;
            }
        }
        if (queue->orphans_.fetch_add(held, std::memory_order_acq_rel) + held == 0) {
            delete queue;
        }
    }

private:
    /// A list taken off the stack; drops whatever is left of it.
    struct Detached {
        Block* list;
        Block* pop() {
            Block* block = list;
            list = block->queued_next;
            return block;
        }
        ~Detached() {
            while (list != nullptr) {
                pop()->drop_weak();
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
    /// After closing: the manager's allocations still held, less those released since.
    std::atomic<std::int64_t> orphans_{0};
};

namespace {

std::uint64_t round_up(std::uint64_t size_bytes, std::uint64_t alignment) {
    // Sizes are at most 2^62 here, so the sum cannot wrap; alignments are powers of two (checked in
    // the constructor), so a mask replaces the division.
    return (size_bytes + alignment - 1) & ~(alignment - 1);
}

}  // namespace

MemoryManager::MemoryManager(Storage& storage, StreamOrder& order, PoolOptions options,
                             std::uint32_t rank)
    : storage_(storage),
      order_(order),
      options_(options),
      rank_(rank),
      sliced_(storage, order, options.page_size_bytes),
      exclusive_(storage, order),
      released_(std::make_unique<ReleaseQueue>()) {
    assert(options_.slice_max_bytes <= options_.page_size_bytes);
    assert(std::has_single_bit(storage_.alignment_bytes()));
    parked_.reserve(max_parked);
    spare_blocks_.reserve(max_spare_blocks);
}

MemoryManager::~MemoryManager() {
    ReleaseQueue::close(released_.release(), live_count_);
    for (detail::MemoryControl* block : spare_blocks_) {
        delete block;
    }
}

void MemoryManager::set_freed_listener(std::function<void(const AllocationInfo&)> listener) {
    std::lock_guard guard(lock_);
    freed_listener_ = std::move(listener);
}

MemoryPool& MemoryManager::pool_for(std::uint64_t size_bytes) {
    if (size_bytes <= options_.slice_max_bytes) {
        return sliced_;
    }
    return exclusive_;
}

Result<ManagedMemoryHandle> MemoryManager::allocate(std::uint64_t size_bytes, StreamId stream) {
    if (size_bytes == 0) {
        return Error::invalid_argument("an allocation of zero bytes");
    }
    if (size_bytes > max_allocation_bytes) {
        return Error::invalid_argument("an allocation of " + std::to_string(size_bytes) +
                                       " bytes is over the limit of 2^62 bytes");
    }
    std::lock_guard guard(lock_);
    sweep_locked();
    // The control block first, so that nothing needs undoing should the heap fail.
    detail::MemoryControl* control = nullptr;
    if (spare_blocks_.empty()) {
        control = new detail::MemoryControl;
    } else {
        control = spare_blocks_.back();
        spare_blocks_.pop_back();
    }
    const std::uint64_t block_bytes = round_up(size_bytes, storage_.alignment_bytes());
    Result<PoolBlock> block = take_block(block_bytes, stream);
    if (!block) {
        spare_blocks_.push_back(control);  // Capacity for it: it was taken from there or is new.
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
    // Filled field by field where it lives: a copy of a whole record assembled just before
    // stalled the pair (the copy's wide loads cannot take the narrow stores' values in flight).
    AllocationInfo& info = control->allocation;
    info.id = MemoryId::next(rank_);
    info.address = block->address;
    info.size_bytes = size_bytes;
    info.stream = stream;
    control->start(released_.get());
    if (options_.index_addresses) {
        address_nodes_.emplace(by_address_, info.address, info);
    }
    ++live_count_;
    return ManagedMemoryHandle::adopt(RuntimeKey{}, *control);
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
    const EventToken released = order_.record(info.stream);  // First: it may throw.
    // Filled in place: copying an entry assembled just before stalls (see `allocate`).
    Parked& parked = parked_.emplace_back();
    parked.stream = info.stream;
    parked.block.address = info.address;
    parked.block.size_bytes = block_bytes;
    parked.released = released;
}

void MemoryManager::return_all_parked() {
    while (!parked_.empty()) {
        return_parked(parked_.size() - 1);
    }
}

void MemoryManager::return_parked(std::size_t index) {
    const Parked parked = parked_[index];
    parked_.erase(parked_.begin() + static_cast<std::ptrdiff_t>(index));
    pool_for(parked.block.size_bytes).free(parked.block, ReleaseMark{parked.stream, parked.released});
}

std::size_t MemoryManager::sweep() {
    std::lock_guard guard(lock_);
    return sweep_locked();
}

std::size_t MemoryManager::sweep_locked() {
    if (!released_->pending()) {
        return 0;
    }
    return released_->take([this](detail::MemoryControl& block) {
        const AllocationInfo& info = block.allocation;
        if (freed_listener_) {
            freed_listener_(info);
        }
        if (options_.index_addresses) {
            address_nodes_.erase(by_address_, by_address_.find(info.address));
        }
        park(info, round_up(info.size_bytes, storage_.alignment_bytes()));
        --live_count_;
        // With no weak reference left, nothing can reach the block any more: keep it for a later
        // allocation instead of deleting it.
        if (block.weak.load(std::memory_order_acquire) == 1 &&
            spare_blocks_.size() < max_spare_blocks) {
            spare_blocks_.push_back(&block);
        } else {
            block.drop_weak();
        }
    });
}

std::optional<AllocationInfo> MemoryManager::find_address(std::uint64_t address) const {
    std::lock_guard guard(lock_);
    for (const auto& [start, info] : by_address_) {
        if (address >= start && address - start < info.size_bytes) {
            return info;
        }
    }
    return std::nullopt;
}

MemoryUsage MemoryManager::usage() const {
    std::lock_guard guard(lock_);
    return usage_locked();
}

MemoryUsage MemoryManager::usage_locked() const {
    const PoolUsage sliced = sliced_.usage();
    const PoolUsage exclusive = exclusive_.usage();
    MemoryUsage usage;
    usage.reserved_bytes = sliced.reserved_bytes + exclusive.reserved_bytes;
    usage.capacity_bytes = storage_.capacity_bytes();
    usage.largest_free_block_bytes =
        std::max({sliced.largest_free_block_bytes, exclusive.largest_free_block_bytes,
                  storage_.largest_reservable_bytes()});
    // Parked blocks are in use for their pools, and free for everyone else.
    std::uint64_t parked_bytes = 0;
    for (const Parked& parked : parked_) {
        parked_bytes += parked.block.size_bytes;
        usage.largest_free_block_bytes =
            std::max(usage.largest_free_block_bytes, parked.block.size_bytes);
    }
    usage.in_use_bytes = sliced.in_use_bytes + exclusive.in_use_bytes - parked_bytes;
    usage.free_bytes = usage.capacity_bytes - usage.in_use_bytes;
    return usage;
}

std::size_t MemoryManager::live_count() const {
    std::lock_guard guard(lock_);
    return live_count_;
}

}  // namespace tandem
