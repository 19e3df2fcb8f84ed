// tandem on GPUs against plain CUDA, side by side in one run:
//   pool allocate+free      against cudaMallocAsync/cudaFreeAsync and cudaMalloc/cudaFree
//   a launch through tandem against a raw launch of the same kernel: empty, copying between two
//                           bindings, and updating one binding in place (axpy); each also
//                           paired (`launch_pair_*`), batch against batch in one loop
//   a kernel reading peer memory through a PeerBinding against the same kernel on the raw pointer
//   a tandem peer copy      against cudaMemcpyPeerAsync
// `tandem bench` runs it and prints the medians and the ratios the CUDA issue sets goals for.

#include "bench_pairs.hpp"
#include "raw_kernels.hpp"

#include "tandem/cuda/runtime.hpp"

#include <benchmark/benchmark.h>
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace tandem::bench {
namespace {

constexpr std::uint64_t peer_bytes = 256 * mib;
constexpr std::uint32_t copy_blocks = 132 * 8;
constexpr std::uint32_t copy_threads = 256;
/// The buffers and block of the bound-launch comparison: small, so the launch path dominates.
constexpr std::uint64_t bound_bytes = 256;
constexpr std::uint32_t bound_threads = 256;


/// Splits a batch of launches into the host time to enqueue them and the time the sync then
/// waits, reported per launch (`enqueue_ns`, `sync_ns`): where a launch ratio comes from.
class SplitTimer {
public:
    void start() { begin_ = std::chrono::steady_clock::now(); }
    void enqueued() { enqueued_at_ = std::chrono::steady_clock::now(); }
    void synced() {
        const auto now = std::chrono::steady_clock::now();
        enqueue_ += enqueued_at_ - begin_;
        sync_ += now - enqueued_at_;
        ++batches_;
    }
    void report(benchmark::State& state) const {
        if (batches_ == 0) {
            return;
        }
        const double launches = static_cast<double>(batches_) * launches_per_batch;
        state.counters["enqueue_ns"] =
            std::chrono::duration<double, std::nano>(enqueue_).count() / launches;
        state.counters["sync_ns"] =
            std::chrono::duration<double, std::nano>(sync_).count() / launches;
    }

private:
    std::chrono::steady_clock::time_point begin_;
    std::chrono::steady_clock::time_point enqueued_at_;
    std::chrono::steady_clock::duration enqueue_{};
    std::chrono::steady_clock::duration sync_{};
    std::int64_t batches_ = 0;
};

void tandem_allocate_free(benchmark::State& state) {
    auto rt = runtime(state, 1);
    if (!rt) {
        return;
    }
    Client client = rt->client(0);
    const auto bytes = static_cast<std::uint64_t>(state.range(0));
    for (auto _ : state) {
        auto handle = client.allocate(bytes);
        benchmark::DoNotOptimize(handle);
    }
    state.SetItemsProcessed(state.iterations());
}

void cuda_malloc_async_free(benchmark::State& state) {
    cudaSetDevice(0);
    cudaStream_t stream = nullptr;
    cudaStreamCreate(&stream);
    const auto bytes = static_cast<std::size_t>(state.range(0));
    for (auto _ : state) {
        void* pointer = nullptr;
        cudaMallocAsync(&pointer, bytes, stream);
        cudaFreeAsync(pointer, stream);
    }
    cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
    state.SetItemsProcessed(state.iterations());
}

void cuda_malloc_free(benchmark::State& state) {
    cudaSetDevice(0);
    const auto bytes = static_cast<std::size_t>(state.range(0));
    for (auto _ : state) {
        void* pointer = nullptr;
        cudaMalloc(&pointer, bytes);
        cudaFree(pointer);
    }
    state.SetItemsProcessed(state.iterations());
}

/// A batch through tandem: `launches_per_batch` launches of one kernel on device 0, then a sync.
class TandemBatch {
public:
    TandemBatch(Client client, const char* kernel, std::vector<LaunchArgument> arguments = {},
                LaunchConfig config = LaunchConfig::linear(1, 1), KernelArgs args = {})
        : client_(std::move(client)),
          kernel_(kernel),
          arguments_(std::move(arguments)),
          config_(config),
          args_(args) {}

    void enqueue() {
        for (int launch = 0; launch < launches_per_batch; ++launch) {
            (void)client_.launch(kernel_, config_, arguments_, args_);
        }
    }
    void sync() { (void)client_.sync(); }

private:
    Client client_;
    const char* kernel_;
    std::vector<LaunchArgument> arguments_;
    LaunchConfig config_;
    KernelArgs args_;
};


/// Batches of `batch`, each timed apart into enqueue and sync (`SplitTimer`).
template <typename Batch>
void split_batches(benchmark::State& state, Batch& batch) {
    SplitTimer split;
    for (auto _ : state) {
        split.start();
        batch.enqueue();
        split.enqueued();
        batch.sync();
        split.synced();
    }
    split.report(state);
    state.SetItemsProcessed(state.iterations() * launches_per_batch);
}

/// Two buffers of `bound_bytes` on GPU 0, zero-filled; empty, with the state skipped, on failure.
std::optional<std::pair<Handle, Handle>> bound_buffers(benchmark::State& state) {
    auto rt = runtime(state, 1);
    if (!rt) {
        return std::nullopt;
    }
    Client client = rt->client(0);
    auto first = client.allocate(bound_bytes);
    auto second = client.allocate(bound_bytes);
    if (!first || !second || !client.write(*first, std::vector<std::byte>(bound_bytes)) ||
        !client.write(*second, std::vector<std::byte>(bound_bytes)) || !client.sync()) {
        state.SkipWithError("allocation failed");
        return std::nullopt;
    }
    return std::pair{*first, *second};
}

/// The block of the bound-launch comparisons.
constexpr LaunchConfig bound_config = LaunchConfig::linear(bound_threads, bound_threads);

/// The catalog's copy kernel from the first of `buffers` into the second, through tandem.
TandemBatch bound_copy(Client client, const std::pair<Handle, Handle>& buffers) {
    return TandemBatch(std::move(client), "copy",
                       {LaunchArgument{buffers.first, AccessMode::Read, std::nullopt},
                        LaunchArgument{buffers.second, AccessMode::Write, std::nullopt}},
                       bound_config);
}

/// The same copy kernel on raw pointers.
auto raw_bound_copy(const RawMemory& buffers) {
    return [from = buffers[0], to = buffers[1]](void* stream) {
        launch_raw_copy(stream, static_cast<std::uint8_t*>(to),
                        static_cast<const std::uint8_t*>(from), bound_bytes, 1, bound_threads);
    };
}

/// The catalog's axpy kernel updating the second of `buffers` in place from the first, through
/// tandem.
TandemBatch bound_axpy(Client client, const std::pair<Handle, Handle>& buffers) {
    return TandemBatch(std::move(client), "axpy",
                       {LaunchArgument{buffers.first, AccessMode::Read, std::nullopt},
                        LaunchArgument{buffers.second, AccessMode::ReadWrite, std::nullopt}},
                       bound_config, KernelArgs().f64(0.5));
}

/// The same axpy kernel on raw pointers.
auto raw_bound_axpy(const RawMemory& buffers) {
    return [x = buffers[0], y = buffers[1]](void* stream) {
        launch_raw_axpy(stream, static_cast<const float*>(x), static_cast<float*>(y),
                        bound_bytes / sizeof(float), 0.5, 1, bound_threads);
    };
}

void tandem_launch_empty(benchmark::State& state) {
    auto rt = runtime(state, 1);
    if (!rt) {
        return;
    }
    TandemBatch batch(rt->client(0), "empty");
    split_batches(state, batch);
}

/// The catalog's copy kernel on two bound buffers of `bound_bytes`: binding resolution, claims on
/// the input and output, the pending writer and the status word, per launch.
void tandem_launch_bound_copy(benchmark::State& state) {
    auto rt = runtime(state, 1);
    auto buffers = bound_buffers(state);
    if (!rt || !buffers) {
        return;
    }
    TandemBatch batch = bound_copy(rt->client(0), *buffers);
    split_batches(state, batch);
}

/// The catalog's axpy kernel updating one bound buffer in place, launch after launch: each launch
/// reads what the one before it wrote, so it finds that producer among the pending writers and
/// checks its status word on the GPU before it computes.
void tandem_launch_in_place_axpy(benchmark::State& state) {
    auto rt = runtime(state, 1);
    auto buffers = bound_buffers(state);
    if (!rt || !buffers) {
        return;
    }
    TandemBatch batch = bound_axpy(rt->client(0), *buffers);
    split_batches(state, batch);
}

/// A launch of a kernel name that is not registered: tandem's whole host path (request,
/// bookkeeping, resolution at the sync) without the CUDA launch. Not a goal; a breakdown.
void tandem_launch_unregistered(benchmark::State& state) {
    auto rt = runtime(state, 1);
    if (!rt) {
        return;
    }
    TandemBatch batch(rt->client(0), "not-registered");
    split_batches(state, batch);
}

/// The runtime's answer to which device is current: what a device guard asked before it
/// compared contexts instead (`cuda_current_context`).
void cuda_get_device(benchmark::State& state) {
    cudaSetDevice(0);
    int device = -1;
    for (auto _ : state) {
        cudaGetDevice(&device);
        benchmark::DoNotOptimize(device);
    }
}

/// The driver call each device guard makes, part of every tandem launch: the thread's current
/// context.
void cuda_current_context(benchmark::State& state) {
    cudaSetDevice(0);
    void* entry = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &entry, 4000, cudaEnableDefault,
                                         &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
        state.SkipWithError("the driver has no cuCtxGetCurrent");
        return;
    }
    const auto get = reinterpret_cast<PFN_cuCtxGetCurrent_v4000>(entry);
    CUcontext context = nullptr;
    for (auto _ : state) {
        get(&context);
        benchmark::DoNotOptimize(context);
    }
}

void raw_launch_empty(benchmark::State& state) {
    RawBatch batch(launch_raw_empty);
    split_batches(state, batch);
}

/// 1000 raw empty launches enqueued behind a 20 ms kernel, timed until the last is enqueued: what
/// a launch costs the host while the GPU cannot have finished any of them. Close to
/// `raw_launch_empty` means launches are bound by the host, not by the GPU.
void raw_launch_empty_gpu_busy(benchmark::State& state) {
    cudaSetDevice(0);
    cudaStream_t stream = nullptr;
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    for (auto _ : state) {
        state.PauseTiming();
        launch_raw_spin(stream, 20000);
        state.ResumeTiming();
        for (int launch = 0; launch < launches_per_batch; ++launch) {
            launch_raw_empty(stream);
        }
        state.PauseTiming();
        cudaStreamSynchronize(stream);
        state.ResumeTiming();
    }
    cudaStreamDestroy(stream);
    state.SetItemsProcessed(state.iterations() * launches_per_batch);
}

/// The same copy kernel on two buffers from cudaMalloc, launched raw.
void raw_launch_bound_copy(benchmark::State& state) {
    const RawMemory buffers(state, 2, bound_bytes);
    if (!buffers.ok(2)) {
        return;
    }
    RawBatch batch(raw_bound_copy(buffers));
    split_batches(state, batch);
}

/// The same axpy kernel on two buffers from cudaMalloc, launched raw.
void raw_launch_in_place_axpy(benchmark::State& state) {
    const RawMemory buffers(state, 2, bound_bytes);
    if (!buffers.ok(2)) {
        return;
    }
    RawBatch batch(raw_bound_axpy(buffers));
    split_batches(state, batch);
}

void raw_launch_empty_with_params(benchmark::State& state) {
    RawBatch batch(launch_raw_empty_with_params);
    split_batches(state, batch);
}

/// What the size of a launch's parameters costs it, paired in one loop: an empty raw kernel
/// taking tandem's compact block (144 bytes) against one taking the whole `LaunchParams` (about
/// 300 bytes), and against one with no parameters.
void params_pair_compact_against_whole(benchmark::State& state) {
    RawBatch compact(launch_raw_empty_with_compact_params);
    RawBatch whole(launch_raw_empty_with_params);
    launch_pair(state, compact, whole);
}

void params_pair_compact_against_none(benchmark::State& state) {
    RawBatch compact(launch_raw_empty_with_compact_params);
    RawBatch none(launch_raw_empty);
    launch_pair(state, compact, none);
}



/// `tandem_launch_empty` and `raw_launch_empty`, paired.
void launch_pair_empty(benchmark::State& state) {
    auto rt = runtime(state, 1);
    if (!rt) {
        return;
    }
    TandemBatch tandem(rt->client(0), "empty");
    RawBatch raw(launch_raw_empty);
    launch_pair(state, tandem, raw);
}

/// `tandem_launch_bound_copy` and `raw_launch_bound_copy`, paired.
void launch_pair_bound_copy(benchmark::State& state) {
    auto rt = runtime(state, 1);
    auto buffers = bound_buffers(state);
    const RawMemory raw_buffers(state, 2, bound_bytes);
    if (!rt || !buffers || !raw_buffers.ok(2)) {
        return;
    }
    TandemBatch tandem = bound_copy(rt->client(0), *buffers);
    RawBatch raw(raw_bound_copy(raw_buffers));
    launch_pair(state, tandem, raw);
}

/// `tandem_launch_in_place_axpy` and `raw_launch_in_place_axpy`, paired.
void launch_pair_in_place_axpy(benchmark::State& state) {
    auto rt = runtime(state, 1);
    auto buffers = bound_buffers(state);
    const RawMemory raw_buffers(state, 2, bound_bytes);
    if (!rt || !buffers || !raw_buffers.ok(2)) {
        return;
    }
    TandemBatch tandem = bound_axpy(rt->client(0), *buffers);
    RawBatch raw(raw_bound_axpy(raw_buffers));
    launch_pair(state, tandem, raw);
}

struct PeerSetup {
    Handle shared;
    Handle local;
};

std::optional<PeerSetup> peer_setup(benchmark::State& state, cuda::CudaRuntime& rt) {
    Client owner = rt.client(0);
    Client peer = rt.client(1);
    if (!owner.grant_peer_access(peer.service())) {
        state.SkipWithError("peer access refused");
        return std::nullopt;
    }
    auto allocated = owner.allocate(peer_bytes);
    auto local = peer.allocate(peer_bytes);
    if (!allocated || !local) {
        state.SkipWithError("allocation failed");
        return std::nullopt;
    }
    auto shared = owner.share_with_peers(*allocated);
    (void)owner.launch("fill", LaunchConfig{Dim3{copy_blocks, 1, 1}, Dim3{copy_threads, 1, 1}},
                       {LaunchArgument{*shared, AccessMode::Write, std::nullopt}},
                       KernelArgs().u64(1));
    (void)owner.sync();
    return PeerSetup{*shared, *local};
}

void tandem_peer_read_kernel(benchmark::State& state) {
    auto rt = runtime(state, 2);
    std::optional<PeerSetup> setup = rt ? peer_setup(state, *rt) : std::nullopt;
    if (!setup) {
        return;
    }
    Client peer = rt->client(1);
    for (auto _ : state) {
        (void)peer.launch("copy", LaunchConfig{Dim3{copy_blocks, 1, 1}, Dim3{copy_threads, 1, 1}},
                          {LaunchArgument{setup->shared, AccessMode::Read, std::nullopt},
                           LaunchArgument{setup->local, AccessMode::Write, std::nullopt}});
        (void)peer.sync();
    }
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(peer_bytes));
}

void raw_peer_read_kernel(benchmark::State& state) {
    auto rt = runtime(state, 2);
    std::optional<PeerSetup> setup = rt ? peer_setup(state, *rt) : std::nullopt;
    if (!setup) {
        return;
    }
    auto* from = reinterpret_cast<const std::uint8_t*>(setup->shared.peer()->address());
    auto* to = reinterpret_cast<std::uint8_t*>(
        PeerBinding::make(
            setup->local.with_peer(*rt->client(1).share_with_peers(setup->local)->peer()).binding())
            ->address());
    cudaSetDevice(1);
    cudaStream_t stream = nullptr;
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    for (auto _ : state) {
        launch_raw_copy(stream, to, from, peer_bytes, copy_blocks, copy_threads);
        cudaStreamSynchronize(stream);
    }
    cudaStreamDestroy(stream);
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(peer_bytes));
}

void tandem_peer_copy(benchmark::State& state) {
    auto rt = runtime(state, 2);
    std::optional<PeerSetup> setup = rt ? peer_setup(state, *rt) : std::nullopt;
    if (!setup) {
        return;
    }
    Client peer = rt->client(1);
    for (auto _ : state) {
        (void)peer.copy(setup->shared, setup->local);
        (void)peer.sync();
    }
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(peer_bytes));
}

void raw_peer_copy(benchmark::State& state) {
    auto rt = runtime(state, 2);
    std::optional<PeerSetup> setup = rt ? peer_setup(state, *rt) : std::nullopt;
    if (!setup) {
        return;
    }
    void* from = reinterpret_cast<void*>(setup->shared.peer()->address());
    void* to =
        reinterpret_cast<void*>(rt->client(1).share_with_peers(setup->local)->peer()->address());
    cudaSetDevice(1);
    cudaStream_t stream = nullptr;
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    for (auto _ : state) {
        cudaMemcpyPeerAsync(to, 1, from, 0, peer_bytes, stream);
        cudaStreamSynchronize(stream);
    }
    cudaStreamDestroy(stream);
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(peer_bytes));
}

BENCHMARK(tandem_allocate_free)->Arg(1 << 20)->UseRealTime();
BENCHMARK(cuda_malloc_async_free)->Arg(1 << 20)->UseRealTime();
BENCHMARK(cuda_malloc_free)->Arg(1 << 20)->UseRealTime();
BENCHMARK(tandem_launch_empty)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(raw_launch_empty)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(raw_launch_empty_gpu_busy)->Unit(benchmark::kMicrosecond)->Iterations(20);
BENCHMARK(tandem_launch_bound_copy)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(raw_launch_bound_copy)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(tandem_launch_in_place_axpy)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(raw_launch_in_place_axpy)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(raw_launch_empty_with_params)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(params_pair_compact_against_whole)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(params_pair_compact_against_none)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(launch_pair_empty)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(launch_pair_bound_copy)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(launch_pair_in_place_axpy)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(tandem_launch_unregistered)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(cuda_get_device)->UseRealTime();
BENCHMARK(cuda_current_context)->UseRealTime();
BENCHMARK(tandem_peer_read_kernel)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(raw_peer_read_kernel)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(tandem_peer_copy)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(raw_peer_copy)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tandem::bench

BENCHMARK_MAIN();
