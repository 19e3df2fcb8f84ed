// Host threads launching at once, each on a stream of its own of GPU 0:
//   launch_threads_user_kernel/N   N threads each enqueue `launches_per_batch` typed launches of
//                                  the user kernel on two buffers of their own, then sync their
//                                  stream; against N threads making the same raw launches, each
//                                  on a cudaStream of its own (`ratio`), and against tandem making
//                                  every call to the driver holding its lock
//                                  (`CudaOptions::unlocked_launch_calls = false`; `locked_ratio`).
//   launch_threads_own_devices/N   the same typed launches, each of N threads on a device of its
//                                  own (N devices placed on GPU 0, `CudaOptions::gpus`), whose
//                                  groups never join (`tandem_ns`); against the N threads on
//                                  streams of one device, one group (`one_group_ns`), and the raw
//                                  launches (`raw_ns`; `ratio`, `one_group_ratio`).
// The sides are timed one after another in each iteration, the order turning, and each side's
// time is the wall time from the threads' start to the last thread's sync, per launch of all the
// threads (`tandem_ns`, `raw_ns`, `locked_ns`): one thread's figure against N threads' says how
// the launch path scales with threads.

#include "bench_pairs.hpp"
#include "raw_kernels.hpp"
#include "user_kernel.hpp"

#include <array>
#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <thread>

namespace tandem::bench {
namespace {

constexpr std::uint64_t small_bytes = 256;
constexpr std::uint32_t small_threads = 256;
constexpr LaunchConfig small_config = LaunchConfig::linear(small_threads, small_threads);

/// Runs `work(thread)` on `threads` threads released at once; returns the seconds from their
/// release to the last one's return.
double run_threads(int threads, const std::function<void(int)>& work) {
    std::atomic<bool> go{false};
    std::vector<std::thread> team;
    team.reserve(static_cast<std::size_t>(threads));
    for (int thread = 0; thread < threads; ++thread) {
        team.emplace_back([&go, &work, thread] {
            while (!go.load(std::memory_order_acquire)) {
                std::this_thread::yield();
            }
            work(thread);
        });
    }
    const auto begin = std::chrono::steady_clock::now();
    go.store(true, std::memory_order_release);
    for (std::thread& each : team) {
        each.join();
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
}

/// One tandem runtime's side: a stream and two buffers per thread on GPU 0, on device 0, or with
/// `own_devices` on device `thread` of the runtime.
class TandemThreads {
public:
    TandemThreads(benchmark::State& state, std::shared_ptr<cuda::CudaRuntime> runtime, int threads,
                  bool own_devices = false)
        : runtime_(std::move(runtime)), own_devices_(own_devices) {
        for (int thread = 0; thread < threads; ++thread) {
            Client client = runtime_->client(device_of(thread));
            Result<StreamId> stream = client.create_stream();
            Result<Handle> from = client.allocate(small_bytes);
            Result<Handle> to = client.allocate(small_bytes);
            if (!stream || !from || !to ||
                !client.write(*from, std::vector<std::byte>(small_bytes))) {
                state.SkipWithError("tandem set-up failed");
                return;
            }
            streams_.push_back(*stream);
            arguments_.push_back(
                {{*from, AccessMode::Read, std::nullopt}, {*to, AccessMode::Write, std::nullopt}});
            ok_ = client.sync().ok();
        }
    }
    [[nodiscard]] bool ok() const { return ok_; }
    double batch() {
        return run_threads(static_cast<int>(streams_.size()), [this](int thread) {
            Client client = runtime_->client(device_of(thread));
            const auto index = static_cast<std::size_t>(thread);
            for (int launch = 0; launch < launches_per_batch; ++launch) {
                (void)client.launch<UserCopy>(small_config, arguments_[index], {}, streams_[index]);
            }
            (void)client.sync_stream(streams_[index]);
        });
    }

private:
    [[nodiscard]] std::size_t device_of(int thread) const {
        return own_devices_ ? static_cast<std::size_t>(thread) : 0;
    }

    std::shared_ptr<cuda::CudaRuntime> runtime_;
    bool own_devices_ = false;
    std::vector<StreamId> streams_;
    std::vector<std::vector<LaunchArgument>> arguments_;
    bool ok_ = false;
};

/// The raw side: a cudaStream and two cudaMalloc buffers per thread.
class RawThreads {
public:
    RawThreads(benchmark::State& state, int threads) : memory_(state, 2 * threads, small_bytes) {
        cudaSetDevice(0);
        for (int thread = 0; thread < threads; ++thread) {
            cudaStream_t stream = nullptr;
            cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
            streams_.push_back(stream);
        }
    }
    ~RawThreads() {
        for (cudaStream_t stream : streams_) {
            cudaStreamDestroy(stream);
        }
    }
    RawThreads(const RawThreads&) = delete;
    RawThreads& operator=(const RawThreads&) = delete;
    [[nodiscard]] bool ok() const { return memory_.ok(2 * static_cast<int>(streams_.size())); }
    double batch() {
        return run_threads(static_cast<int>(streams_.size()), [this](int thread) {
            cudaSetDevice(0);
            const auto index = static_cast<std::size_t>(thread);
            for (int launch = 0; launch < launches_per_batch; ++launch) {
                (void)launch_raw_user_copy(streams_[index], memory_[2 * index],
                                           memory_[2 * index + 1], small_bytes, 1, small_threads);
            }
            cudaStreamSynchronize(streams_[index]);
        });
    }

private:
    RawMemory memory_;
    std::vector<cudaStream_t> streams_;
};

/// Times two tandem sides and the raw side, one after another in each iteration in an order that
/// turns, and reports each side's time per launch of all `threads` threads (`first_name`_ns,
/// `second_name`_ns, raw_ns) and the tandem sides' medians over raw (`ratio` for the first,
/// `second_name`_ratio).
void time_against_raw(benchmark::State& state, int threads, TandemThreads& first,
                      TandemThreads& second, RawThreads& raw, const std::string& first_name,
                      const std::string& second_name) {
    std::array<std::vector<double>, 3> seconds;
    std::vector<double> ratios;
    std::vector<double> second_ratios;
    int turn = 0;
    for (auto _ : state) {
        double times[3] = {};  // First, second, raw.
        for (int step = 0; step < 3; ++step) {
            const int side = (turn + step) % 3;
            times[side] = side == 0 ? first.batch() : side == 1 ? second.batch() : raw.batch();
        }
        turn = (turn + 1) % 3;
        for (std::size_t side = 0; side < 3; ++side) {
            seconds[side].push_back(times[side]);
        }
        ratios.push_back(times[0] / times[2]);
        second_ratios.push_back(times[1] / times[2]);
        state.SetIterationTime(times[0] + times[1] + times[2]);
    }
    const double launches = double{launches_per_batch} * threads;
    state.counters["ratio"] = median(ratios);
    state.counters[second_name + "_ratio"] = median(second_ratios);
    state.counters[first_name + "_ns"] = median(seconds[0]) * 1e9 / launches;
    state.counters[second_name + "_ns"] = median(seconds[1]) * 1e9 / launches;
    state.counters["raw_ns"] = median(seconds[2]) * 1e9 / launches;
    state.SetItemsProcessed(state.iterations() * 3 * static_cast<std::int64_t>(launches));
}

/// A second runtime whose launches make their driver calls holding its lock.
std::shared_ptr<cuda::CudaRuntime> locked_runtime(benchmark::State& state) {
    static std::shared_ptr<cuda::CudaRuntime> shared;
    if (!shared) {
        cuda::CudaOptions options;
        options.devices = 1;
        options.unlocked_launch_calls = false;
        auto created = cuda::CudaRuntime::create(options);
        if (!created) {
            state.SkipWithError(created.error().message().c_str());
            return nullptr;
        }
        shared = *created;
    }
    return shared;
}

void launch_threads_user_kernel(benchmark::State& state) {
    const auto threads = static_cast<int>(state.range(0));
    auto unlocked_runtime = runtime(state, 1);
    auto serialised_runtime = unlocked_runtime ? locked_runtime(state) : nullptr;
    if (!serialised_runtime) {
        return;
    }
    TandemThreads unlocked(state, unlocked_runtime, threads);
    TandemThreads locked(state, serialised_runtime, threads);
    RawThreads raw(state, threads);
    if (!unlocked.ok() || !locked.ok() || !raw.ok()) {
        return;
    }
    time_against_raw(state, threads, unlocked, locked, raw, "tandem", "locked");
}

/// A runtime of `devices` devices, all on GPU 0.
std::shared_ptr<cuda::CudaRuntime> devices_on_one_gpu(benchmark::State& state, int devices) {
    cuda::CudaOptions options;
    options.devices = static_cast<std::uint32_t>(devices);
    options.gpus = std::vector<int>(static_cast<std::size_t>(devices), 0);
    auto created = cuda::CudaRuntime::create(options);
    if (!created) {
        state.SkipWithError(created.error().message().c_str());
        return nullptr;
    }
    return *created;
}

void launch_threads_own_devices(benchmark::State& state) {
    const auto threads = static_cast<int>(state.range(0));
    auto apart_runtime = devices_on_one_gpu(state, threads);
    auto one_runtime = apart_runtime ? runtime(state, 1) : nullptr;
    if (!one_runtime) {
        return;
    }
    TandemThreads apart(state, apart_runtime, threads, true);
    TandemThreads together(state, one_runtime, threads);
    RawThreads raw(state, threads);
    if (!apart.ok() || !together.ok() || !raw.ok()) {
        return;
    }
    time_against_raw(state, threads, apart, together, raw, "tandem", "one_group");
}

/// 1, 2, 4 and 8 threads, each side timed by hand.
void thread_counts(benchmark::internal::Benchmark* bench) {
    bench->Arg(1)->Arg(2)->Arg(4)->Arg(8)->UseManualTime()->Unit(benchmark::kMillisecond);
}

BENCHMARK(launch_threads_own_devices)->Apply(thread_counts);
BENCHMARK(launch_threads_user_kernel)->Apply(thread_counts);

}  // namespace
}  // namespace tandem::bench
