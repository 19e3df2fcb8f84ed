// The cost-curve families (curves.hpp), written once against the core `Runtime`.

#include "curves.hpp"

#include "bench_checks.hpp"

#include <malloc.h>

#include <algorithm>
#include <array>
#include <optional>

namespace tandem::bench::curves {
namespace {

using Clock = std::chrono::steady_clock;

/// Timed launches per batch where a batch ends with a sync: enough that one sync is a small
/// part of a launch's figure, few enough that a batch's pending work stays small.
constexpr std::int64_t launches_per_batch = 256;
/// Allocate-and-free pairs per timed batch.
constexpr std::int64_t pairs_per_batch = 1024;
/// Claimed ranges sit this far apart, each `small_bytes` long: the gaps between them are clean
/// bytes a launch can read.
constexpr std::uint64_t claim_stride_bytes = 2 * small_bytes;
/// The buffers the pending family's pending launches write, in turn: more than one, so that no
/// buffer gathers every pending writer, and the same count at every size.
constexpr std::size_t pending_outputs = 64;
/// Reads between two drains of the read family's pending work, and the launches each of its
/// sources then holds pending while they are timed.
constexpr std::int64_t reads_per_drain = 64;

/// `size_bytes` on `client`'s device, written with zeros so that it reads clean.
std::optional<Handle> clean_buffer(benchmark::State& state, Client& client,
                                   std::uint64_t size_bytes) {
    Result<Handle> handle = client.allocate(size_bytes);
    if (!succeeded(state, handle) ||
        !succeeded(state, client.write(*handle, std::vector<std::byte>(size_bytes)))) {
        return std::nullopt;
    }
    return *handle;
}

/// `count` live allocations of `small_bytes` that the family holds while it runs.
std::optional<std::vector<Handle>> allocate_many(benchmark::State& state, Client& client,
                                                 std::int64_t count) {
    std::vector<Handle> handles;
    handles.reserve(static_cast<std::size_t>(count));
    for (std::int64_t index = 0; index < count; ++index) {
        Result<Handle> handle = client.allocate(small_bytes);
        if (!succeeded(state, handle)) {
            return std::nullopt;
        }
        handles.push_back(*handle);
    }
    return handles;
}

/// The arguments of the catalog's copy kernel from `from` (read) into `to` (write).
std::vector<LaunchArgument> copy_arguments(const Handle& from, const Handle& to) {
    return {LaunchArgument{from, AccessMode::Read, std::nullopt},
            LaunchArgument{to, AccessMode::Write, std::nullopt}};
}

/// `count` launches of the copy kernel on `arguments`, on `stream`.
bool launch_copies(benchmark::State& state, Client& client,
                   const std::vector<LaunchArgument>& arguments, std::int64_t count,
                   StreamId stream) {
    for (std::int64_t launch = 0; launch < count; ++launch) {
        if (!succeeded(state,
                       client.launch(kernels::Copy::name, tiny_config, arguments, {}, stream))) {
            return false;
        }
    }
    return true;
}

/// Runs the state's iterations, each `prepare` untimed and then `timed`, which does `ops`
/// operations; either returns false after skipping the state. Reports the time of one operation
/// (`ns_per_op`) and the size the family held (`size`, the benchmark's argument).
///
/// `ns_per_op` is the median iteration over `ops`, not the mean: on a shared machine one
/// iteration in a hundred that another process preempts would otherwise move a point of a curve
/// by more than the growth the curve is there to show.
template <typename Prepare, typename Timed>
void run_timed(benchmark::State& state, std::int64_t ops, Prepare prepare, Timed timed) {
    std::vector<double> seconds;
    seconds.reserve(static_cast<std::size_t>(state.max_iterations));
    for (auto _ : state) {
        if (!prepare()) {
            break;
        }
        const auto begin = Clock::now();
        const bool done = timed();
        const double elapsed = std::chrono::duration<double>(Clock::now() - begin).count();
        state.SetIterationTime(elapsed);
        if (!done) {
            break;
        }
        seconds.push_back(elapsed);
    }
    const auto iterations = static_cast<std::int64_t>(seconds.size());
    state.counters["ns_per_op"] = median(seconds) * 1e9 / static_cast<double>(ops);
    state.counters["size"] = static_cast<double>(state.range(0));
    state.SetItemsProcessed(iterations * ops);
}

bool nothing_to_prepare() { return true; }

// ---------------------------------------------------------------- 1. launch, N live allocations

/// A launch with two bindings (the copy kernel, one buffer read, one written) while N other
/// allocations are live on the device. Each batch ends with a sync, so pending work does not
/// grow with the iterations; the time of a launch includes running it and its share of the sync.
void launch_vs_allocations(benchmark::State& state, const Backend& backend) {
    auto runtime = backend.make_runtime(state, 1);
    if (!runtime) {
        return;
    }
    Client client = runtime->client(0);
    auto live = allocate_many(state, client, state.range(0));
    auto from = clean_buffer(state, client, small_bytes);
    auto to = live ? clean_buffer(state, client, small_bytes) : std::nullopt;
    if (!live || !from || !to || !succeeded(state, client.sync())) {
        return;
    }
    const auto arguments = copy_arguments(*from, *to);
    run_timed(state, launches_per_batch, nothing_to_prepare, [&] {
        return launch_copies(state, client, arguments, launches_per_batch,
                             client.default_stream()) &&
               succeeded(state, client.sync());
    });
}

// ---------------------------------------------------------------- 2. launch, N claims on its input

/// One allocation with N claimed ranges, `claim_stride_bytes` apart: the catalog's fail kernel
/// launched on each range (each launch its own failure). The launch of the timed kernel then reads
/// the clean gap after the middle claim, so its claim check must search the claims of its input's
/// allocation and find none there. Null after skipping the state.
std::optional<Handle> claimed_input(benchmark::State& state, Client& client, std::int64_t claims) {
    const auto count = static_cast<std::uint64_t>(claims);
    auto buffer = clean_buffer(state, client, (count + 1) * claim_stride_bytes);
    if (!buffer) {
        return std::nullopt;
    }
    for (std::uint64_t index = 0; index < count; ++index) {
        Result<Handle> range = buffer->slice(index * claim_stride_bytes, small_bytes);
        if (!succeeded(state, range) ||
            !succeeded(state, client.launch(kernels::FailWithCode::name, tiny_config,
                                            {LaunchArgument{*range, AccessMode::Write, {}}},
                                            KernelArgs().u64(1)))) {
            return std::nullopt;
        }
    }
    Result<Handle> clean = buffer->slice(count / 2 * claim_stride_bytes + small_bytes, small_bytes);
    Result<Handle> first_claimed = buffer->slice(0, small_bytes);
    if (!succeeded(state, clean) || !succeeded(state, first_claimed) ||
        !succeeded(state, client.sync())) {
        return std::nullopt;
    }
    // The set-up is what the curve is about: a claim that did not land, or a gap that is not
    // clean, would measure something else.
    if (client.read(*first_claimed) || !client.read(*clean)) {
        state.SkipWithError("the claimed ranges did not come out as claimed and clean");
        return std::nullopt;
    }
    return *clean;
}

void launch_vs_claims(benchmark::State& state, const Backend& backend) {
    auto runtime = backend.make_runtime(state, 1);
    if (!runtime) {
        return;
    }
    Client client = runtime->client(0);
    auto clean = claimed_input(state, client, state.range(0));
    auto to = clean ? clean_buffer(state, client, small_bytes) : std::nullopt;
    if (!to || !succeeded(state, client.sync())) {
        return;
    }
    const auto arguments = copy_arguments(*clean, *to);
    run_timed(state, launches_per_batch, nothing_to_prepare, [&] {
        return launch_copies(state, client, arguments, launches_per_batch,
                             client.default_stream()) &&
               succeeded(state, client.sync());
    });
}

// ---------------------------------------------------------------- 3. launch, N pending launches

/// Launches timed per iteration of the pending family at `pending` pending launches: a quarter of
/// them, from 1 to 64, so the count stays within a quarter of N while they are timed.
std::int64_t pending_batch(std::int64_t pending) {
    return std::clamp<std::int64_t>(pending / 4, 1, 64);
}

/// A launch with two bindings while N launches on other buffers are enqueued and not synced.
///
/// How the count is held at about N: a sync would run every pending launch, so the timed launches
/// cannot end with one. Instead each iteration, untimed, syncs (nothing is pending), enqueues N
/// copies into `pending_outputs` other buffers in turn, and only then times `pending_batch(N)`
/// launches of the measured copy, which are not synced either: while they are timed, from N to
/// N + N/4 launches are pending (N + 1 for N below 8). Only the enqueue is timed; running and
/// settling the launches is the next iteration's untimed sync.
void launch_vs_pending(benchmark::State& state, const Backend& backend) {
    auto runtime = backend.make_runtime(state, 1);
    if (!runtime) {
        return;
    }
    Client client = runtime->client(0);
    auto from = clean_buffer(state, client, small_bytes);
    auto to = clean_buffer(state, client, small_bytes);
    auto outputs = allocate_many(state, client, pending_outputs);
    if (!from || !to || !outputs || !succeeded(state, client.sync())) {
        return;
    }
    std::vector<std::vector<LaunchArgument>> pending_arguments;
    for (const Handle& output : *outputs) {
        pending_arguments.push_back(copy_arguments(*from, output));
    }
    const auto arguments = copy_arguments(*from, *to);
    const std::int64_t pending = state.range(0);
    const std::int64_t batch = pending_batch(pending);
    const auto prepare = [&] {
        if (!succeeded(state, client.sync())) {
            return false;
        }
        for (std::int64_t launch = 0; launch < pending; ++launch) {
            const auto& each =
                pending_arguments[static_cast<std::size_t>(launch) % pending_outputs];
            if (!launch_copies(state, client, each, 1, client.default_stream())) {
                return false;
            }
        }
        return true;
    };
    run_timed(state, batch, prepare, [&] {
        return launch_copies(state, client, arguments, batch, client.default_stream());
    });
    (void)client.sync();
}

// ---------------------------------------------------------------- 4. allocate+free, N live

/// An allocation of `small_bytes` dropped at once (its bytes go back at the next allocation's
/// sweep) while N other allocations are live.
void allocate_free_vs_allocations(benchmark::State& state, const Backend& backend) {
    auto runtime = backend.make_runtime(state, 1);
    if (!runtime) {
        return;
    }
    Client client = runtime->client(0);
    auto live = allocate_many(state, client, state.range(0));
    if (!live) {
        return;
    }
    run_timed(state, pairs_per_batch, nothing_to_prepare, [&] {
        for (std::int64_t pair = 0; pair < pairs_per_batch; ++pair) {
            Result<Handle> handle = client.allocate(small_bytes);
            if (!succeeded(state, handle)) {
                return false;
            }
            benchmark::DoNotOptimize(handle->memory_id());
        }
        return true;
    });
}

// ---------------------------------------------------------------- 5. read, K sources pending

/// A read of a clean `read_bytes` buffer on device 0 while K other sources (devices on the
/// simulator, streams on one GPU) have pending work. Every `reads_per_drain` reads, untimed, all
/// work is synced and each source gets `reads_per_drain` copy launches it then holds pending
/// while the reads are timed one by one, back to back: the read waits for nothing of theirs, so
/// what it costs beyond K = 0 is what their pending work makes it look at. (Enqueueing before each
/// read instead would time the read just after the enqueues, in the caches and allocator state
/// they leave, and measure that.)
void read_vs_pending_sources(benchmark::State& state, const Backend& backend) {
    const auto others = static_cast<std::uint32_t>(state.range(0));
    auto runtime = backend.make_runtime(state, backend.read_devices(others));
    if (!runtime) {
        return;
    }
    Client reader = runtime->client(0);
    auto source = clean_buffer(state, reader, read_bytes);
    auto sources = backend.pending_sources(state, *runtime, others);
    if (!source || sources.size() != others) {
        return;
    }
    std::vector<std::vector<LaunchArgument>> arguments;
    for (auto& [client, stream] : sources) {
        auto from = clean_buffer(state, client, small_bytes);
        auto to = from ? clean_buffer(state, client, small_bytes) : std::nullopt;
        if (!to) {
            return;
        }
        arguments.push_back(copy_arguments(*from, *to));
    }
    if (!succeeded(state, runtime->sync_all())) {
        return;
    }
    std::int64_t reads = 0;
    const auto prepare = [&] {
        if (reads++ % reads_per_drain != 0) {
            return true;
        }
        if (!succeeded(state, runtime->sync_all())) {
            return false;
        }
        for (std::size_t index = 0; index < sources.size(); ++index) {
            auto& [client, stream] = sources[index];
            if (!launch_copies(state, client, arguments[index], reads_per_drain, stream)) {
                return false;
            }
        }
        return true;
    };
    run_timed(state, 1, prepare, [&] {
        auto bytes = reader.read(*source);
        benchmark::DoNotOptimize(bytes);
        return succeeded(state, bytes);
    });
    (void)runtime->sync_all();
}

// ---------------------------------------------------------------- 6. host bytes per object

/// Heap bytes in use now, by the allocator's own count: the chunks every arena handed out and
/// the blocks it mapped for large requests. A chunk in a per-thread cache counts as in use; a
/// few of them are noise against the thousands of objects a figure is taken over.
std::uint64_t heap_bytes() {
    const struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
}

/// Times `make`, which creates the state's N objects (false after skipping the state), and
/// reports the heap bytes they added per object as `counter`, and the time per object.
template <typename Make>
void count_bytes(benchmark::State& state, const char* counter, Make make) {
    const auto objects = state.range(0);
    for (auto _ : state) {
        const std::uint64_t before = heap_bytes();
        const auto begin = Clock::now();
        const bool made = make();
        const double elapsed = std::chrono::duration<double>(Clock::now() - begin).count();
        const std::uint64_t after = heap_bytes();
        state.SetIterationTime(elapsed);
        if (!made) {
            return;
        }
        // Signed: a heap that shrank (a cache trimmed) gives a figure below zero, not a wrap.
        state.counters[counter] = (static_cast<double>(after) - static_cast<double>(before)) /
                                  static_cast<double>(objects);
        state.counters["ns_per_op"] = elapsed * 1e9 / static_cast<double>(objects);
    }
    state.counters["size"] = static_cast<double>(objects);
}

/// Host bytes per live allocation of `small_bytes`. The vector that holds the handles is sized
/// first, and one allocation made and dropped, so neither counts: what is left is what tandem
/// keeps per allocation (its record, its reference, its share of a pool page's bookkeeping).
void memory_per_allocation(benchmark::State& state, const Backend& backend) {
    auto runtime = backend.make_runtime(state, 1);
    if (!runtime) {
        return;
    }
    Client client = runtime->client(0);
    std::vector<Handle> handles;
    handles.reserve(static_cast<std::size_t>(state.range(0)));
    if (!succeeded(state, client.allocate(small_bytes))) {
        return;
    }
    count_bytes(state, "bytes_per_allocation", [&] {
        for (std::int64_t index = 0; index < state.range(0); ++index) {
            Result<Handle> handle = client.allocate(small_bytes);
            if (!succeeded(state, handle)) {
                return false;
            }
            handles.push_back(*handle);
        }
        return true;
    });
}

/// Host bytes per claimed range, as the claim family makes them: one failed launch per range, so
/// the figure holds the claim and the failure that names its cause. The buffer and the launch
/// arguments are made first and do not count.
void memory_per_claim(benchmark::State& state, const Backend& backend) {
    auto runtime = backend.make_runtime(state, 1);
    if (!runtime) {
        return;
    }
    Client client = runtime->client(0);
    const auto count = static_cast<std::uint64_t>(state.range(0));
    auto buffer = clean_buffer(state, client, (count + 1) * claim_stride_bytes);
    if (!buffer || !succeeded(state, client.sync())) {
        return;
    }
    std::vector<std::vector<LaunchArgument>> arguments;
    for (std::uint64_t index = 0; index < count; ++index) {
        arguments.push_back({LaunchArgument{
            *buffer->slice(index * claim_stride_bytes, small_bytes), AccessMode::Write, {}}});
    }
    count_bytes(state, "bytes_per_claim", [&] {
        for (const auto& each : arguments) {
            if (!succeeded(state, client.launch(kernels::FailWithCode::name, tiny_config, each,
                                                KernelArgs().u64(1)))) {
                return false;
            }
        }
        return succeeded(state, client.sync());
    });
}

/// Host bytes per launch enqueued and not synced: the copy kernel into `pending_outputs` buffers
/// in turn, as the pending family enqueues them.
void memory_per_pending_launch(benchmark::State& state, const Backend& backend) {
    auto runtime = backend.make_runtime(state, 1);
    if (!runtime) {
        return;
    }
    Client client = runtime->client(0);
    auto from = clean_buffer(state, client, small_bytes);
    auto outputs = allocate_many(state, client, pending_outputs);
    if (!from || !outputs || !succeeded(state, client.sync())) {
        return;
    }
    std::vector<std::vector<LaunchArgument>> arguments;
    for (const Handle& output : *outputs) {
        arguments.push_back(copy_arguments(*from, output));
    }
    count_bytes(state, "bytes_per_pending_launch", [&] {
        for (std::int64_t launch = 0; launch < state.range(0); ++launch) {
            const auto& each = arguments[static_cast<std::size_t>(launch) % pending_outputs];
            if (!launch_copies(state, client, each, 1, client.default_stream())) {
                return false;
            }
        }
        return true;
    });
    (void)client.sync();
}

/// Iterations of the pending family at `pending`: about 2000 timed launches, and at least 20
/// iterations (each one enqueues and runs N launches untimed).
std::int64_t pending_iterations(std::int64_t pending) {
    return std::max<std::int64_t>(20, 2000 / pending_batch(pending));
}

/// Iterations of the claim family at `claims`: fewer where the set-up is long (10,000 failed
/// launches). At least 20, so that the median is not an iteration that holds the simulator's walk
/// of its books (every iteration just after the set-up, and every ~40 at 10,000 claims): with 3
/// iterations, one walk and its aftermath made the median of the largest point.
std::int64_t claims_iterations(std::int64_t claims) {
    return claims <= 100 ? 200 : 20;
}

using Family = void (*)(benchmark::State&, const Backend&);

benchmark::internal::Benchmark* add(const Backend& backend, const char* family, Family run) {
    const std::string name = backend.name + "_curve_" + family;
    return benchmark::RegisterBenchmark(
               name.c_str(), [run, backend](benchmark::State& state) { run(state, backend); })
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
}

}  // namespace

void register_families(const Backend& backend) {
    add(backend, "launch_vs_allocations", launch_vs_allocations)
        ->RangeMultiplier(10)
        ->Range(1, 1'000'000)
        ->Iterations(200);
    for (const std::int64_t claims : {1, 10, 100, 1'000, 10'000}) {
        add(backend, "launch_vs_claims", launch_vs_claims)
            ->Arg(claims)
            ->Iterations(claims_iterations(claims));
    }
    for (const std::int64_t pending : {1, 10, 100, 1'000, 10'000, 30'000}) {
        add(backend, "launch_vs_pending", launch_vs_pending)
            ->Arg(pending)
            ->Iterations(pending_iterations(pending));
    }
    add(backend, "allocate_free_vs_allocations", allocate_free_vs_allocations)
        ->RangeMultiplier(10)
        ->Range(1, 1'000'000)
        ->Iterations(200);
    add(backend, "read_vs_pending_sources", read_vs_pending_sources)
        ->DenseRange(0, 7)
        ->Iterations(2000);
    add(backend, "memory_per_allocation", memory_per_allocation)
        ->Arg(1'000)
        ->Arg(100'000)
        ->Iterations(1);
    add(backend, "memory_per_claim", memory_per_claim)->Arg(100)->Arg(1'000)->Iterations(1);
    add(backend, "memory_per_pending_launch", memory_per_pending_launch)
        ->Arg(100)
        ->Arg(10'000)
        ->Iterations(1);
}

}  // namespace tandem::bench::curves
