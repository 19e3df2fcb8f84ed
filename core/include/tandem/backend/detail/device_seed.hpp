#pragma once

// The seed of one device's generator of injected faults, from the runtime's seed and the
// device's number: each device draws its own sequence, so a faulty run replays exactly whichever
// devices share a lock (device_groups.hpp), and device 0 draws what a runtime of one device drew.

#include <cstdint>

namespace tandem::detail {

/// The seed of device `device`'s fault generator in a runtime seeded with `runtime_seed`.
[[nodiscard]] constexpr std::uint64_t device_seed(std::uint64_t runtime_seed,
                                                  std::uint32_t device) {
    return runtime_seed ^ (std::uint64_t{device} * 0x9e3779b97f4a7c15ULL);
}

}  // namespace tandem::detail
