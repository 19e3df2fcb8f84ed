// The cost curves (curves.hpp) on the simulator: every family on a fresh deterministic runtime,
// the read family's pending work on devices 1 to K of eight. tools/bench/curves runs them and
// prints each curve's growth against its goal.

#include "bench_support.hpp"
#include "curves.hpp"

namespace tandem::bench {
namespace {

/// The read family's runtime: device 0 reads, up to seven others hold pending work.
constexpr std::uint32_t read_family_devices = 8;

/// Room for the largest family, a million live allocations of 64 bytes, each rounded up to the
/// segment's alignment, with pages to spare; segments are sparse, so only pages taken cost.
constexpr std::uint64_t curve_capacity_bytes = 1 * gib;
/// Each device of the read family holds a few small buffers.
constexpr std::uint64_t read_capacity_bytes = 64 * mib;

std::shared_ptr<Runtime> sim_runtime(benchmark::State& state, std::uint32_t devices) {
    sim::SimOptions options;
    options.devices = devices;
    options.seed = bench_seed;
    options.capacity_bytes = devices == 1 ? curve_capacity_bytes : read_capacity_bytes;
    auto runtime = sim::SimRuntime::create(options);
    if (!runtime) {
        state.SkipWithError(runtime.error().report().c_str());
        return nullptr;
    }
    return *runtime;
}

/// Devices 1 to `others`, each on its default stream.
std::vector<std::pair<Client, StreamId>> other_devices(benchmark::State& /*state*/,
                                                       Runtime& runtime, std::uint32_t others) {
    std::vector<std::pair<Client, StreamId>> sources;
    for (std::uint32_t device = 1; device <= others; ++device) {
        Client client = runtime.client(device);
        const StreamId stream = client.default_stream();
        sources.emplace_back(std::move(client), stream);
    }
    return sources;
}

const bool registered = [] {
    curves::register_families(curves::Backend{
        .name = "sim",
        .make_runtime = sim_runtime,
        .read_devices = [](std::uint32_t /*others*/) { return read_family_devices; },
        .pending_sources = other_devices,
    });
    return true;
}();

}  // namespace
}  // namespace tandem::bench
