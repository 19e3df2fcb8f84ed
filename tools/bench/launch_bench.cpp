// Launch overhead on the simulator: how many launches of the catalog's empty kernel one device
// runs per second. Each iteration enqueues a batch of launches and then syncs, so the figure
// includes the scheduler draining the batch; the batch size shows what a sync costs on top.

#include "bench_support.hpp"

#include "tandem/core/kernels/catalog.hpp"

namespace tandem::bench {
namespace {

void sim_empty_launch(benchmark::State& state) {
    const auto launches_per_sync = static_cast<std::uint64_t>(state.range(0));
    auto runtime = make_runtime(state, 64 * mib);
    if (!runtime) {
        return;
    }
    Client client = runtime->client(0);
    for (auto _ : state) {
        for (std::uint64_t launch = 0; launch < launches_per_sync; ++launch) {
            if (!succeeded(state, client.launch(kernels::Empty::name, LaunchConfig::linear(1), {}))) {
                return;
            }
        }
        if (!succeeded(state, client.sync())) {
            return;
        }
    }
    state.SetItemsProcessed(state.iterations() * state.range(0));
    state.counters["launches_per_sync"] = static_cast<double>(launches_per_sync);
}

BENCHMARK(sim_empty_launch)->Arg(1)->Arg(64)->Arg(1024)->UseRealTime();

}  // namespace
}  // namespace tandem::bench
