#pragma once

// The byte-level model every property suite checks against: for each allocation, one failure id
// per byte (0 when the byte reads clean). The oracle: a read returns bytes iff every byte it
// returns was last written by work that succeeded; otherwise it fails naming why.

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <vector>

namespace tandem::model {

struct ModelRange {
    std::size_t allocation = 0;
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
};

inline std::ostream& operator<<(std::ostream& out, const ModelRange& range) {
    return out << "#" << range.allocation << "[" << range.begin << "," << range.end << ")";
}

inline std::ostream& operator<<(std::ostream& out, const std::vector<ModelRange>& ranges) {
    out << "{";
    for (std::size_t index = 0; index < ranges.size(); ++index) {
        out << (index ? " " : "") << ranges[index];
    }
    return out << "}";
}

/// A failure id per byte of each allocation.
struct ByteModel {
    std::vector<std::vector<std::uint64_t>> bytes;

    void set(const ModelRange& range, std::uint64_t failure) {
        for (std::uint64_t at = range.begin; at < range.end; ++at) {
            bytes[range.allocation][at] = failure;
        }
    }
    /// The distinct failures a read of `ranges` finds, in order of discovery.
    [[nodiscard]] std::vector<std::uint64_t> read(const std::vector<ModelRange>& ranges) const {
        std::vector<std::uint64_t> found;
        for (const ModelRange& range : ranges) {
            for (std::uint64_t at = range.begin; at < range.end; ++at) {
                std::uint64_t failure = bytes[range.allocation][at];
                if (failure != 0 && std::find(found.begin(), found.end(), failure) == found.end()) {
                    found.push_back(failure);
                }
            }
        }
        return found;
    }
    /// The failure of the first claimed byte of the first input that has one, or 0.
    [[nodiscard]] std::uint64_t first_claimed(const std::vector<ModelRange>& inputs) const {
        for (const ModelRange& range : inputs) {
            for (std::uint64_t at = range.begin; at < range.end; ++at) {
                if (bytes[range.allocation][at] != 0) {
                    return bytes[range.allocation][at];
                }
            }
        }
        return 0;
    }
    /// How many allocations carry `failure`.
    [[nodiscard]] std::uint64_t carriers(std::uint64_t failure) const {
        std::uint64_t count = 0;
        for (const auto& allocation : bytes) {
            count += std::find(allocation.begin(), allocation.end(), failure) != allocation.end();
        }
        return count;
    }
    /// Every failure some byte carries.
    [[nodiscard]] std::vector<std::uint64_t> live_failures() const {
        std::vector<std::uint64_t> live;
        for (const auto& allocation : bytes) {
            for (std::uint64_t failure : allocation) {
                if (failure != 0 && std::find(live.begin(), live.end(), failure) == live.end()) {
                    live.push_back(failure);
                }
            }
        }
        return live;
    }
};

}  // namespace tandem::model
