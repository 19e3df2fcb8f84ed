// The catalog's axpy (y = a*x + y over float32) on the simulator, where every load and store
// is checked, against the same loop in plain C++ on host vectors. The issue asks that the
// checked kernel take at most five times as long as the plain loop.
//
// The launch the issue names is one block of 256 threads, so each thread walks the arrays with a
// stride of 256 elements, as a grid-stride loop does on a GPU. The simulator runs those threads
// one after another, which visits memory in a different order from the plain loop. Two more
// figures tell the cost of the checks from the cost of that order: the plain loop run in the
// simulator's order, and the kernel launched with one thread per element, whose threads run in
// memory order but with a scheduler yield after every block of 256.

#include "bench_support.hpp"

#include "tandem/core/kernels/catalog.hpp"

#include <algorithm>
#include <span>
#include <vector>

namespace tandem::bench {
namespace {

constexpr std::uint64_t axpy_elements = 16 * mib;
/// Threads of the launch the issue names, all in one block.
constexpr std::uint32_t axpy_threads = 256;
constexpr std::uint32_t axpy_block_threads = 256;
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
    const auto threads = static_cast<std::uint64_t>(state.range(0));
    auto runtime = make_runtime(state);
    if (!runtime) {
        return;
    }
    Client client = runtime->client(0);
    Result<Handle> x = allocate_filled(client, 1.0f);
    Result<Handle> y = allocate_filled(client, 0.0f);
    // The writes are queued work: land them now so the first timed sync does not run them.
    if (!succeeded(state, x) || !succeeded(state, y) || !succeeded(state, client.sync())) {
        return;
    }
    for (auto _ : state) {
        Status launched = client.launch(
            kernels::Axpy::name,
            LaunchConfig::linear(threads, static_cast<std::uint32_t>(
                                              std::min<std::uint64_t>(threads, axpy_block_threads))),
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

BENCHMARK(sim_axpy_checked)
    ->Arg(1)
    ->Arg(axpy_threads)
    ->Arg(axpy_elements)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(host_axpy_plain)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(host_axpy_plain_thread_order)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace tandem::bench
