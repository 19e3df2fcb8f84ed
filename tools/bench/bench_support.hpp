#pragma once

// Helpers shared by the simulator's benchmarks: a one-device simulator runtime with room for the
// largest buffers measured (and, from bench_checks.hpp, `succeeded` and `median`).

#include "bench_checks.hpp"

#include "tandem/sim/runtime.hpp"

#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>

namespace tandem::bench {

inline constexpr std::uint64_t kib = std::uint64_t{1} << 10;
inline constexpr std::uint64_t mib = std::uint64_t{1} << 20;
inline constexpr std::uint64_t gib = std::uint64_t{1} << 30;

/// The seed every simulator runtime of the benchmarks uses; main prints it with the context.
inline constexpr std::uint64_t bench_seed = 1;

/// A deterministic one-device runtime whose segment holds `capacity_bytes`, or null after
/// skipping `state` with the reason.
inline std::shared_ptr<sim::SimRuntime> make_runtime(benchmark::State& state,
                                                     std::uint64_t capacity_bytes = gib) {
    sim::SimOptions options;
    options.devices = 1;
    options.seed = bench_seed;
    options.capacity_bytes = capacity_bytes;
    auto runtime = sim::SimRuntime::create(options);
    if (!runtime) {
        state.SkipWithError(runtime.error().report().c_str());
        return nullptr;
    }
    return *runtime;
}

}  // namespace tandem::bench
