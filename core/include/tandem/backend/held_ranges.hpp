#pragma once

// The address ranges tandem holds in this process, whatever runtime or device holds them: the
// host-visible storage of every device (a host backend's memory, a simulated segment's mapping,
// a GPU's regions) and every range a device adopted. Adopting memory that overlaps one of them is
// refused, so one byte never has two owners: not two devices, not two runtimes, and not a device
// and its own pools, each of which would keep claims of its own on it.

#include <cstdint>
#include <map>
#include <mutex>

namespace tandem {

/// The ranges tandem holds in this process.
class HeldRanges {
public:
    /// The one registry of the process.
    static HeldRanges& process();

    /// Holds `[address, address + size_bytes)`, unless a byte of it is held already: false then,
    /// and nothing changes. `size_bytes` is at least 1 and the range does not wrap.
    [[nodiscard]] bool hold(std::uint64_t address, std::uint64_t size_bytes);
    /// Lets go of the range held from `address`; nothing when none is.
    void release(std::uint64_t address);

private:
    /// Whether a byte of `[address, address + size_bytes)` is held; under `mutex_`.
    [[nodiscard]] bool overlaps(std::uint64_t address, std::uint64_t size_bytes) const;

    std::mutex mutex_;
    /// Disjoint ranges, by their first address: their sizes.
    std::map<std::uint64_t, std::uint64_t> ranges_;
};

}  // namespace tandem
