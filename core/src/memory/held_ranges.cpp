#include "tandem/backend/held_ranges.hpp"

#include <iterator>

namespace tandem {

HeldRanges& HeldRanges::process() {
    // Never destroyed: storage and adopted memory may be let go of during static destruction.
    static HeldRanges* const registry = new HeldRanges;
    return *registry;
}

bool HeldRanges::hold(std::uint64_t address, std::uint64_t size_bytes) {
    std::lock_guard lock(mutex_);
    if (size_bytes == 0 || overlaps(address, size_bytes)) {
        return false;
    }
    ranges_.emplace(address, size_bytes);
    return true;
}

void HeldRanges::release(std::uint64_t address) {
    std::lock_guard lock(mutex_);
    ranges_.erase(address);
}

bool HeldRanges::overlaps(std::uint64_t address, std::uint64_t size_bytes) const {
    // The ranges are disjoint: only the first one starting after `address` and the one before it
    // can hold a byte of the range.
    const auto after = ranges_.upper_bound(address);
    if (after != ranges_.end() && after->first - address < size_bytes) {
        return true;
    }
    if (after == ranges_.begin()) {
        return false;
    }
    const auto& [start, size] = *std::prev(after);
    return address - start < size;
}

}  // namespace tandem
