#pragma once

// The cost curves: how tandem's per-operation costs grow with the size of the program. Each
// family holds one size fixed (live allocations, claims on an input, pending launches, devices or
// streams with pending work) while the timed operation repeats, so a curve over the sizes shows
// whether a cost is flat, logarithmic or worse. The families are written once against the core
// `Runtime`; the simulator (`curves_bench.cpp`) and the CUDA backend
// (`cuda/curves_cuda_bench.cpp`) each register them with the runtime they measure.
//
// Every family times its operations itself (manual time) and reports `ns_per_op`, the time of one
// operation (the median iteration's), and `size`, the size it was held at, so a script reads the
// curve from the JSON without knowing each family's batch. The memory family reports host bytes
// tandem holds per object instead (`bytes_per_allocation`, `bytes_per_claim`,
// `bytes_per_pending_launch`), counted with the allocator's own figures (`mallinfo2`): they take in
// every heap byte tandem's libraries hold, and leave the benchmark binary's allocator as it is for
// the other benchmarks.
//
// Set-up (making the N objects) is never timed, and every family runs a fixed number of
// iterations: Google Benchmark would otherwise call a family several times to size its runs, and
// each call makes its N objects again (a million allocations take a third of a second here).

#include "tandem/core/kernels/catalog.hpp"
#include "tandem/core/runtime.hpp"

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tandem::bench::curves {

/// The bytes of every small buffer the families bind: small, so the launch path, not the kernel,
/// is what a launch costs.
inline constexpr std::uint64_t small_bytes = 64;
/// The buffer the read family reads.
inline constexpr std::uint64_t read_bytes = 4096;
/// The launch configuration of every timed launch: one thread, so running the kernel is as
/// short as it can be.
inline constexpr LaunchConfig tiny_config = LaunchConfig::linear(1, 1);

/// Makes a fresh runtime of `devices` devices for one run of a family, or null after skipping
/// the state with the reason (no GPU, say).
using RuntimeMaker =
    std::function<std::shared_ptr<Runtime>(benchmark::State& state, std::uint32_t devices)>;

/// Where the read family's pending work goes for its `others` sources: a client and one of its
/// streams each (other devices on the simulator, other streams of one GPU on CUDA). Empty after
/// skipping the state.
using PendingSources = std::function<std::vector<std::pair<Client, StreamId>>(
    benchmark::State& state, Runtime& runtime, std::uint32_t others)>;

/// What a backend gives the families: its name (the prefix of every benchmark), how its runtimes
/// are made, and where the read family's pending work goes.
struct Backend {
    /// "sim" or "cuda": the families register as `<name>_curve_<family>/<size>`.
    std::string name;
    /// A runtime for one run.
    RuntimeMaker make_runtime;
    /// The devices the read family's runtime needs for `others` sources of pending work.
    std::function<std::uint32_t(std::uint32_t others)> read_devices;
    /// The read family's sources of pending work.
    PendingSources pending_sources;
};

/// Registers every family for `backend`; call once, before benchmark::RunSpecifiedBenchmarks.
void register_families(const Backend& backend);

}  // namespace tandem::bench::curves
