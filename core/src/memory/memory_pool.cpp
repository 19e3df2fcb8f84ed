#include "tandem/backend/memory_pool.hpp"

#include <algorithm>
#include <cassert>
#include <string>

namespace tandem {

// ---------------------------------------------------------------- MemoryPool

bool MemoryPool::ready(const std::optional<ReleaseMark>& mark, StreamId stream) const {
    return !mark || mark->stream == stream || order_.completed(mark->event);
}

void MemoryPool::order_after(const std::optional<ReleaseMark>& mark, StreamId stream) {
    if (!ready(mark, stream)) {
        order_.wait(stream, mark->event);
    }
}

std::optional<std::optional<ReleaseMark>> MemoryPool::fuse_marks(
    const std::optional<ReleaseMark>& a, const std::optional<ReleaseMark>& b) const {
    const bool a_done = !a || order_.completed(a->event);
    const bool b_done = !b || order_.completed(b->event);
    if (a_done) {
        return b_done ? std::optional<ReleaseMark>{} : b;
    }
    if (b_done) {
        return a;
    }
    if (a->stream == b->stream) {
        // Events of one stream complete in the order they were recorded: the later one covers both.
        return a->event.value > b->event.value ? a : b;
    }
    return std::nullopt;
}

// ---------------------------------------------------------------- SlicedPool

SlicedPool::SlicedPool(Storage& storage, StreamOrder& order, std::uint64_t page_size_bytes)
    : MemoryPool(storage, order), page_size_bytes_(page_size_bytes) {}

SlicedPool::~SlicedPool() {
    for (const auto& [address, page] : pages_) {
        storage_.release(page.region);
    }
}

std::optional<PoolBlock> SlicedPool::take_free(std::uint64_t size_bytes, StreamId stream,
                                               bool ready_only) {
    for (auto& [base, page] : pages_) {
        for (auto block = page.free.begin(); block != page.free.end(); ++block) {
            if (block->second.size_bytes < size_bytes ||
                (ready_only && !ready(block->second.mark, stream))) {
                continue;
            }
            const std::uint64_t address = block->first;
            FreeBlock taken = block->second;
            free_nodes_.erase(page.free, block);
            if (taken.size_bytes > size_bytes) {
                free_nodes_.emplace(page.free, address + size_bytes,
                                    FreeBlock{taken.size_bytes - size_bytes, taken.mark});
            }
            order_after(taken.mark, stream);
            page.used_bytes += size_bytes;
            return PoolBlock{address, size_bytes};
        }
    }
    return std::nullopt;
}

std::optional<PoolBlock> SlicedPool::reuse(std::uint64_t size_bytes, StreamId stream) {
    assert(size_bytes > 0 && size_bytes <= page_size_bytes_);
    if (auto block = take_free(size_bytes, stream, true)) {
        return block;
    }
    return take_free(size_bytes, stream, false);
}

Result<PoolBlock> SlicedPool::allocate(std::uint64_t size_bytes, StreamId stream) {
    if (std::optional<PoolBlock> block = reuse(size_bytes, stream)) {
        return *block;
    }
    Result<StorageRegion> region = storage_.reserve(page_size_bytes_);
    if (!region) {
        return region.error();
    }
    Page page{*region, {}, 0};
    page.free.emplace(region->address, FreeBlock{region->size_bytes, std::nullopt});
    pages_.emplace(region->address, std::move(page));
    std::optional<PoolBlock> block = take_free(size_bytes, stream, true);
    assert(block && "a fresh page serves any slice");
    return *block;
}

void SlicedPool::free(PoolBlock block, ReleaseMark mark) {
    auto page_at = pages_.upper_bound(block.address);
    assert(page_at != pages_.begin() && "a block of this pool");
    Page& page = std::prev(page_at)->second;
    assert(page.used_bytes >= block.size_bytes);
    page.used_bytes -= block.size_bytes;

    std::uint64_t address = block.address;
    FreeBlock freed{block.size_bytes, mark};
    auto next = page.free.lower_bound(address);
    if (next != page.free.begin()) {
        auto previous = std::prev(next);
        if (previous->first + previous->second.size_bytes == address) {
            if (auto fused = fuse_marks(previous->second.mark, freed.mark)) {
                freed = FreeBlock{previous->second.size_bytes + freed.size_bytes, *fused};
                address = previous->first;
                free_nodes_.erase(page.free, previous);
            }
        }
    }
    if (next != page.free.end() && address + freed.size_bytes == next->first) {
        if (auto fused = fuse_marks(freed.mark, next->second.mark)) {
            freed = FreeBlock{freed.size_bytes + next->second.size_bytes, *fused};
            free_nodes_.erase(page.free, next);
        }
    }
    free_nodes_.emplace(page.free, address, freed);
}

std::uint64_t SlicedPool::trim() {
    std::uint64_t given_back = 0;
    for (auto page = pages_.begin(); page != pages_.end();) {
        const Page& entry = page->second;
        const std::optional<ReleaseMark>& mark =
            entry.free.empty() ? std::nullopt : entry.free.begin()->second.mark;
        const bool idle = entry.used_bytes == 0 && entry.free.size() == 1 &&
                          (!mark || order_.completed(mark->event));
        if (idle) {
            given_back += entry.region.size_bytes;
            storage_.release(entry.region);
            page = pages_.erase(page);
        } else {
            ++page;
        }
    }
    return given_back;
}

PoolUsage SlicedPool::usage() const {
    PoolUsage usage;
    for (const auto& [base, page] : pages_) {
        usage.in_use_bytes += page.used_bytes;
        usage.reserved_bytes += page.region.size_bytes;
        for (const auto& [address, block] : page.free) {
            usage.largest_free_block_bytes =
                std::max(usage.largest_free_block_bytes, block.size_bytes);
        }
    }
    return usage;
}

// ---------------------------------------------------------------- ExclusivePool

ExclusivePool::ExclusivePool(Storage& storage, StreamOrder& order) : MemoryPool(storage, order) {}

ExclusivePool::~ExclusivePool() {
    for (const auto& [size, cached] : cache_) {
        storage_.release(cached.region);
    }
    live_.for_each(
        [this](std::uint64_t, const StorageRegion& region) { storage_.release(region); });
}

std::optional<PoolBlock> ExclusivePool::reuse(std::uint64_t size_bytes, StreamId stream) {
    // A cached region serves a request of at least half its size, which bounds the waste.
    const std::uint64_t largest_fit = size_bytes > UINT64_MAX / 2 ? UINT64_MAX : size_bytes * 2;
    auto candidate = cache_.end();
    for (auto cached = cache_.lower_bound(size_bytes);
         cached != cache_.end() && cached->first <= largest_fit; ++cached) {
        if (ready(cached->second.mark, stream)) {
            candidate = cached;
            break;
        }
        if (candidate == cache_.end()) {
            candidate = cached;
        }
    }
    if (candidate == cache_.end()) {
        return std::nullopt;
    }
    order_after(candidate->second.mark, stream);
    const StorageRegion region = candidate->second.region;
    cache_nodes_.erase(cache_, candidate);
    return hand_out(region);
}

Result<PoolBlock> ExclusivePool::allocate(std::uint64_t size_bytes, StreamId stream) {
    if (std::optional<PoolBlock> block = reuse(size_bytes, stream)) {
        return *block;
    }
    Result<StorageRegion> reserved = storage_.reserve(size_bytes);
    if (!reserved) {
        return reserved.error();
    }
    return hand_out(*reserved);
}

PoolBlock ExclusivePool::hand_out(const StorageRegion& region) {
    live_.insert(region.address, region);
    in_use_bytes_ += region.size_bytes;
    return PoolBlock{region.address, region.size_bytes};
}

void ExclusivePool::free(PoolBlock block, ReleaseMark mark) {
    const StorageRegion* found = live_.find(block.address);
    assert(found != nullptr && "a block of this pool");
    const StorageRegion region = *found;
    cache_nodes_.emplace(cache_, region.size_bytes, Cached{region, mark});
    live_.erase(block.address);
    in_use_bytes_ -= region.size_bytes;
}

std::uint64_t ExclusivePool::trim() {
    std::uint64_t given_back = 0;
    for (auto cached = cache_.begin(); cached != cache_.end();) {
        if (!cached->second.mark || order_.completed(cached->second.mark->event)) {
            given_back += cached->second.region.size_bytes;
            storage_.release(cached->second.region);
            cached = cache_.erase(cached);
        } else {
            ++cached;
        }
    }
    return given_back;
}

PoolUsage ExclusivePool::usage() const {
    PoolUsage usage;
    usage.in_use_bytes = in_use_bytes_;
    usage.reserved_bytes = in_use_bytes_;
    for (const auto& [size, cached] : cache_) {
        usage.reserved_bytes += size;
        usage.largest_free_block_bytes = std::max(usage.largest_free_block_bytes, size);
    }
    return usage;
}

}  // namespace tandem
