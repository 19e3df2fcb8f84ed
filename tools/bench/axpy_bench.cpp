// The catalog's axpy (y = a*x + y over float32) on the simulator, where every load and store
// is checked, against the same loop in plain C++ on host vectors. The issue asks that the
// checked kernel take at most five times as long as the plain loop.
//
// The launch is one block of 256 threads, so each thread walks the arrays with a stride of 256
// elements, as a grid-stride loop does on a GPU. The simulator runs those threads one after
// another, which visits memory in a different order from the plain loop; a third benchmark runs
// the plain loop in the simulator's order, to tell the cost of the checks from the cost of
// that order.

#include "bench_support.hpp"

#include "tandem/core/kernels/catalog.hpp"

#include <span>
#include <vector>

namespace tandem::bench {
namespace {

constexpr std::uint64_t axpy_elements = 16 * mib;
constexpr std::uint32_t axpy_threads = 256;
constexpr float axpy_alpha = 0.5f;
/// Each element is read from x, read from y and written to y.
constexpr std::int64_t axpy_bytes_per_element = 3 * sizeof(float);

void set_axpy_counters(benchmark::State& state) {
    const auto elements = state.iterations() * static_cast<std::int64_t>(axpy_elements);
    state.SetItemsProcessed(elements);
    state.SetBytesProcessed(elements * axpy_bytes_per_element);
}

Result<Handle> allocate_filled(Client& client, float value) {
    Result<Handle> handle = client.allocate(axpy_elements * sizeof(float));
    if (!handle) {
        return handle;
    }
    const std::vector<float> values(axpy_elements, value);
    if (Status written = client.write(*handle, std::as_bytes(std::span(values))); !written) {
        return written.error();
    }
    return handle;
}

void sim_axpy_checked(benchmark::State& state) {
    auto runtime = make_runtime(state);
    if (!runtime) {
        return;
    }
    Client client = runtime->client(0);
    Result<Handle> x = allocate_filled(client, 1.0f);
    Result<Handle> y = allocate_filled(client, 0.0f);
    if (!succeeded(state, x) || !succeeded(state, y)) {
        return;
    }
    for (auto _ : state) {
        Status launched = client.launch(
            kernels::Axpy::name, LaunchConfig::linear(axpy_threads, axpy_threads),
            {LaunchArgument{*x, AccessMode::Read, std::nullopt},
             LaunchArgument{*y, AccessMode::ReadWrite, std::nullopt}},
            KernelArgs().f64(axpy_alpha));
        if (!succeeded(state, launched) || !succeeded(state, client.sync())) {
            return;
        }
    }
    set_axpy_counters(state);
}

void host_axpy_plain(benchmark::State& state) {
    const std::vector<float> x(axpy_elements, 1.0f);
    std::vector<float> y(axpy_elements, 0.0f);
    for (auto _ : state) {
        for (std::uint64_t i = 0; i < axpy_elements; ++i) {
            y[i] = axpy_alpha * x[i] + y[i];
        }
        benchmark::DoNotOptimize(y.data());
        benchmark::ClobberMemory();
    }
    set_axpy_counters(state);
}

void host_axpy_plain_thread_order(benchmark::State& state) {
    const std::vector<float> x(axpy_elements, 1.0f);
    std::vector<float> y(axpy_elements, 0.0f);
    for (auto _ : state) {
        for (std::uint64_t thread = 0; thread < axpy_threads; ++thread) {
            for (std::uint64_t i = thread; i < axpy_elements; i += axpy_threads) {
                y[i] = axpy_alpha * x[i] + y[i];
            }
        }
        benchmark::DoNotOptimize(y.data());
        benchmark::ClobberMemory();
    }
    set_axpy_counters(state);
}

BENCHMARK(sim_axpy_checked)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(host_axpy_plain)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(host_axpy_plain_thread_order)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace tandem::bench
