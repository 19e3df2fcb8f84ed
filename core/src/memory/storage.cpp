#include "tandem/backend/storage.hpp"

#include "tandem/backend/held_ranges.hpp"
#include "tandem/backend/stream_order.hpp"

#include <cstdlib>
#include <string>

namespace tandem {

HostStorage::HostStorage(std::uint64_t capacity_bytes) : capacity_bytes_(capacity_bytes) {}

HostStorage::~HostStorage() {
    for (const auto& [address, size] : regions_) {
        HeldRanges::process().release(address);
        std::free(reinterpret_cast<void*>(address));  // NOLINT: the region came from aligned_alloc
    }
}

Result<StorageRegion> HostStorage::reserve(std::uint64_t size_bytes) {
    std::lock_guard lock(mutex_);
    if (size_bytes == 0 || size_bytes % alignment_bytes() != 0) {
        return Error::invalid_argument("host storage reserves whole multiples of " +
                                       std::to_string(alignment_bytes()) + " bytes, not " +
                                       std::to_string(size_bytes));
    }
    const std::uint64_t free_bytes = capacity_bytes_ - reserved_bytes_;
    if (size_bytes > free_bytes) {
        return Error::out_of_memory(
            "host storage cannot reserve " + std::to_string(size_bytes) + " bytes",
            OutOfMemoryDetails{size_bytes, free_bytes, reserved_bytes_, free_bytes});
    }
    void* memory = std::aligned_alloc(alignment_bytes(), size_bytes);
    if (memory == nullptr) {
        return Error::out_of_memory(
            "the host refused " + std::to_string(size_bytes) + " bytes",
            OutOfMemoryDetails{size_bytes, free_bytes, reserved_bytes_, 0});
    }
    const auto address = reinterpret_cast<std::uint64_t>(memory);
    // Fresh memory overlaps nothing held, unless a program freed memory it had given tandem to
    // adopt; the check of adoptions is then the weaker for it, and nothing else changes.
    (void)HeldRanges::process().hold(address, size_bytes);
    regions_.emplace(address, size_bytes);
    reserved_bytes_ += size_bytes;
    return StorageRegion{address, size_bytes};
}

void HostStorage::release(StorageRegion region) {
    std::lock_guard lock(mutex_);
    auto found = regions_.find(region.address);
    if (found == regions_.end()) {
        return;
    }
    reserved_bytes_ -= found->second;
    regions_.erase(found);
    HeldRanges::process().release(region.address);
    std::free(reinterpret_cast<void*>(region.address));  // NOLINT: from aligned_alloc
}

std::uint64_t HostStorage::reserved_bytes() const {
    std::lock_guard lock(mutex_);
    return reserved_bytes_;
}

std::uint64_t HostStorage::largest_reservable_bytes() const {
    std::lock_guard lock(mutex_);
    return capacity_bytes_ - reserved_bytes_;
}

EventToken ManualStreamOrder::record(StreamId /*stream*/) {
    std::lock_guard lock(mutex_);
    EventToken event{next_event_++};
    pending_.insert(event.value);
    return event;
}

bool ManualStreamOrder::completed(EventToken event) const {
    std::lock_guard lock(mutex_);
    return !pending_.contains(event.value);
}

void ManualStreamOrder::wait(StreamId waiter, EventToken event) {
    std::lock_guard lock(mutex_);
    waits_.push_back(Wait{waiter, event});
}

void ManualStreamOrder::complete(EventToken event) {
    std::lock_guard lock(mutex_);
    pending_.erase(event.value);
}

void ManualStreamOrder::complete_all() {
    std::lock_guard lock(mutex_);
    pending_.clear();
}

std::vector<ManualStreamOrder::Wait> ManualStreamOrder::waits() const {
    std::lock_guard lock(mutex_);
    return waits_;
}

}  // namespace tandem
