// Allocate-and-free pairs per second: a handle is allocated and dropped in a loop, so its memory
// returns to the pool and the next allocation's sweep frees it. Measured through a simulator
// client (what a program pays) and directly on a core MemoryManager over host storage (what the
// pools alone pay), for a size the sliced pool serves and one that gets a region of its own.

#include "bench_support.hpp"

#include "tandem/backend/memory_manager.hpp"
#include "tandem/backend/storage.hpp"
#include "tandem/backend/stream_order.hpp"

namespace tandem::bench {
namespace {

/// ManualStreamOrder keeps every event it recorded until told it completed; completing them all
/// this often keeps its set, and so the loop's cost, from growing with the iteration count.
constexpr std::int64_t pairs_per_event_completion = 4096;

void sim_client_allocate_free(benchmark::State& state) {
    const auto size_bytes = static_cast<std::uint64_t>(state.range(0));
    auto runtime = make_runtime(state, 64 * mib);
    if (!runtime) {
        return;
    }
    Client client = runtime->client(0);
    for (auto _ : state) {
        Result<Handle> handle = client.allocate(size_bytes);
        if (!succeeded(state, handle)) {
            return;
        }
        benchmark::DoNotOptimize(handle->memory_id());
    }
    state.SetItemsProcessed(state.iterations());
}

void core_manager_allocate_free(benchmark::State& state) {
    const auto size_bytes = static_cast<std::uint64_t>(state.range(0));
    HostStorage storage(64 * mib);
    ManualStreamOrder order;
    MemoryManager manager(storage, order);
    const StreamId stream{1};
    std::int64_t pairs = 0;
    for (auto _ : state) {
        auto allocated = manager.allocate(size_bytes, stream);
        if (!succeeded(state, allocated)) {
            return;
        }
        benchmark::DoNotOptimize(allocated->allocation().address);
        if (++pairs % pairs_per_event_completion == 0) {
            order.complete_all();
        }
    }
    state.SetItemsProcessed(state.iterations());
}

/// The manager as the CUDA backend configures it: no address index, and releases that have always
/// completed (work holds its memory until resolved), so what remains is the pools' own path.
void core_manager_allocate_free_unindexed(benchmark::State& state) {
    const auto size_bytes = static_cast<std::uint64_t>(state.range(0));
    HostStorage storage(64 * mib);
    CompletedStreamOrder order;
    PoolOptions options;
    options.index_addresses = false;
    MemoryManager manager(storage, order, options);
    const StreamId stream{1};
    for (auto _ : state) {
        auto allocated = manager.allocate(size_bytes, stream);
        if (!succeeded(state, allocated)) {
            return;
        }
        benchmark::DoNotOptimize(allocated->allocation().address);
    }
    state.SetItemsProcessed(state.iterations());
}

BENCHMARK(sim_client_allocate_free)->Arg(4 * kib)->Arg(4 * mib)->UseRealTime();
BENCHMARK(core_manager_allocate_free)->Arg(4 * kib)->Arg(4 * mib)->UseRealTime();
BENCHMARK(core_manager_allocate_free_unindexed)->Arg(4 * kib)->Arg(4 * mib)->UseRealTime();

}  // namespace
}  // namespace tandem::bench
