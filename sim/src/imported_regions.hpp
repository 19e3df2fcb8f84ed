#pragma once

// The memory of other processes' devices that this runtime maps: the segments a job's peer ranks
// exported, each mapped once, whatever number of allocations in it they share.

#include "tandem/core/result.hpp"

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace tandem::sim {

/// Segments of other processes mapped here, found by device address. Added under a lock and
/// never removed while the runtime lives, so a lookup (every launch binding a peer rank's memory)
/// takes no lock.
class ImportedRegions {
public:
    /// The most segments a runtime maps: one per device of the other ranks of its job.
    static constexpr std::size_t max_regions = 1024;

    ImportedRegions() = default;
    /// Unmaps every region.
    ~ImportedRegions();
    ImportedRegions(const ImportedRegions&) = delete;
    ImportedRegions& operator=(const ImportedRegions&) = delete;

    /// Maps `size_bytes` of `descriptor` (taken: closed here, whatever happens), whose first byte
    /// has device address `base_address` on its owner. A region already mapped at that base is
    /// kept. `InvalidArgument` for a region that overlaps another or a full table; the system's
    /// error when it cannot map.
    Status add(int descriptor, std::uint64_t base_address, std::uint64_t size_bytes);
    /// Where the byte at device `address` is mapped here, or null when no region holds it.
    [[nodiscard]] std::byte* host(std::uint64_t address) const;

private:
    struct Region {
        std::uint64_t base_address = 0;
        std::uint64_t size_bytes = 0;
        std::byte* data = nullptr;
    };
    std::mutex mutex_;
    std::array<Region, max_regions> regions_{};
    /// Regions filled in; each is complete before the count that shows it is stored.
    std::atomic<std::size_t> count_{0};
};

}  // namespace tandem::sim
