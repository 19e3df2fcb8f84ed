#include "segment_storage.hpp"

#include "tandem/backend/held_ranges.hpp"

#include <algorithm>
#include <string>

namespace tandem::sim {

SegmentStorage::SegmentStorage(Segment& segment, std::uint64_t base_address)
    : segment_(segment), base_address_(base_address) {
    free_.emplace(0, segment.capacity_bytes());
    (void)HeldRanges::process().hold(reinterpret_cast<std::uint64_t>(segment_.data()),
                                     segment_.capacity_bytes());
}

SegmentStorage::~SegmentStorage() {
    HeldRanges::process().release(reinterpret_cast<std::uint64_t>(segment_.data()));
}

Result<StorageRegion> SegmentStorage::reserve(std::uint64_t size_bytes) {
    std::lock_guard lock(mutex_);
    auto fits = std::find_if(free_.begin(), free_.end(),
                             [size_bytes](const auto& block) { return block.second >= size_bytes; });
    if (size_bytes == 0 || fits == free_.end()) {
        const std::uint64_t free_bytes = segment_.capacity_bytes() - reserved_bytes_;
        std::uint64_t largest = 0;
        for (const auto& [offset, size] : free_) {
            largest = std::max(largest, size);
        }
        return Error::out_of_memory(
            "segment " + segment_.name() + " has no free region of " + std::to_string(size_bytes) +
                " bytes",
            OutOfMemoryDetails{size_bytes, free_bytes, reserved_bytes_, largest});
    }
    const std::uint64_t offset = fits->first;
    if (Status backed = segment_.reserve_pages(offset, size_bytes); !backed) {
        return backed.error();
    }
    const std::uint64_t rest = fits->second - size_bytes;
    free_.erase(fits);
    if (rest > 0) {
        free_.emplace(offset + size_bytes, rest);
    }
    reserved_bytes_ += size_bytes;
    return StorageRegion{base_address_ + offset, size_bytes};
}

void SegmentStorage::release(StorageRegion region) {
    std::lock_guard lock(mutex_);
    std::uint64_t offset = region.address - base_address_;
    std::uint64_t size = region.size_bytes;
    reserved_bytes_ -= size;
    auto next = free_.lower_bound(offset);
    if (next != free_.begin()) {
        auto previous = std::prev(next);
        if (previous->first + previous->second == offset) {
            offset = previous->first;
            size += previous->second;
            free_.erase(previous);
        }
    }
    if (next != free_.end() && offset + size == next->first) {
        size += next->second;
        free_.erase(next);
    }
    free_.emplace(offset, size);
}

std::uint64_t SegmentStorage::reserved_bytes() const {
    std::lock_guard lock(mutex_);
    return reserved_bytes_;
}

std::uint64_t SegmentStorage::largest_reservable_bytes() const {
    std::lock_guard lock(mutex_);
    std::uint64_t largest = 0;
    for (const auto& [offset, size] : free_) {
        largest = std::max(largest, size);
    }
    return largest;
}

}  // namespace tandem::sim
