// A program's own CUDA under tandem, against the same CUDA without it, side by side in one run:
//   launch_pair_user_kernel   a typed launch of the program's own kernel (user_kernel.hpp) with
//                             two bindings, against the same loop as a raw kernel on two
//                             cudaMalloc pointers                             goal: at most 1.05
//   launch_pair_external      external work wrapping that raw launch, against the raw launch
//                                                                            goal: at most 1.10
//   launch_pair_external_alternating
//                             external work alternating between two names over the same buffers,
//                             so that no unit repeats the one before it (each gets a record of
//                             its own), against the raw launch
//   launch_pair_raw_full_block, launch_pair_raw_driver
//                             the raw launch made as tandem makes it (a block the size of
//                             `LaunchParams`, cudaLaunchKernel) and through the driver
//                             (cuLaunchKernel), each against the chevron launch: no tandem in
//                             either, what the way of launching alone costs
//   launch_pair_raw_checked   the raw launch followed by `cudaGetLastError`, as external work
//                             checks what its callable left, against the raw launch alone
//   launch_pair_raw_locked    the raw launch followed by taking and letting go of a recursive
//                             mutex (the engine's lock), against the raw launch alone: what a
//                             lock costs right after the driver's call
//   launch_pair_external_timed
//                             launch_pair_external with the driver's call timed on both sides:
//                             `raw_call_ns` and `tandem_call_ns`, the chevron launch's own time
//                             in the raw loop and inside external work (the rest of `added_ns` is
//                             tandem's path, as it runs between two driver calls)
//   external_work_alone       external work whose callable enqueues nothing, against the raw
//                             launch: `tandem_ns` is tandem's own host time per unit
//   gemm_pair_external        a 4096 x 4096 fp32 cuBLAS GEMM through external work, against the
//                             same call made directly       goal: at least 0.98 of its throughput
// Each is paired (bench_pairs.hpp): `ratio` is tandem's time over the raw time, `added_ns` what
// tandem adds to each unit of work.

#include "bench_pairs.hpp"
#include "raw_kernels.hpp"
#include "user_kernel.hpp"

#include <array>
#include <chrono>
#include <mutex>
#include <optional>

namespace tandem::bench {
namespace {

/// The buffers and block of the launch comparisons: small, so the launch path dominates.
constexpr std::uint64_t small_bytes = 256;
constexpr std::uint32_t small_threads = 256;
constexpr LaunchConfig small_config = LaunchConfig::linear(small_threads, small_threads);
/// The GEMM's side, and GEMMs per timed batch.
constexpr int gemm_n = 4096;
constexpr int gemms_per_batch = 10;

/// Two zero-filled tandem buffers of `bytes` on GPU 0 as the launch's input and output.
std::optional<std::vector<LaunchArgument>> tandem_buffers(benchmark::State& state, Client& client,
                                                          std::uint64_t bytes) {
    auto from = client.allocate(bytes);
    auto to = client.allocate(bytes);
    if (!from || !to || !client.write(*from, std::vector<std::byte>(bytes)) ||
        !client.write(*to, std::vector<std::byte>(bytes)) || !client.sync()) {
        state.SkipWithError("allocation failed");
        return std::nullopt;
    }
    return std::vector<LaunchArgument>{{*from, AccessMode::Read, std::nullopt},
                                       {*to, AccessMode::Write, std::nullopt}};
}

/// `launches_per_batch` typed launches of `UserCopy` on two bindings, then a sync.
class TypedBatch {
public:
    TypedBatch(Client client, std::vector<LaunchArgument> arguments)
        : client_(std::move(client)), arguments_(std::move(arguments)) {}
    void enqueue() {
        for (int launch = 0; launch < launches_per_batch; ++launch) {
            (void)client_.launch<UserCopy>(small_config, arguments_, {});
        }
    }
    void sync() { (void)client_.sync(); }

private:
    Client client_;
    std::vector<LaunchArgument> arguments_;
};

/// `per_batch` units of external work `work`, each enqueued as a program would (a copy of the
/// description per call), then a sync.
class ExternalBatch {
public:
    ExternalBatch(Client client, ExternalWork work, int per_batch)
        : client_(std::move(client)), work_(std::move(work)), per_batch_(per_batch) {}
    void enqueue() {
        for (int unit = 0; unit < per_batch_; ++unit) {
            (void)client_.enqueue(work_);
        }
    }
    void sync() { (void)client_.sync(); }

private:
    Client client_;
    ExternalWork work_;
    int per_batch_;
};

/// `per_batch` units of external work alternating between two descriptions `works`, so that
/// no unit repeats the one before it (each gets a record of its own), then a sync.
class AlternatingExternalBatch {
public:
    AlternatingExternalBatch(Client client, std::array<ExternalWork, 2> works, int per_batch)
        : client_(std::move(client)), works_(std::move(works)), per_batch_(per_batch) {}
    void enqueue() {
        for (int unit = 0; unit < per_batch_; ++unit) {
            (void)client_.enqueue(works_[static_cast<std::size_t>(unit % 2)]);
        }
    }
    void sync() { (void)client_.sync(); }

private:
    Client client_;
    std::array<ExternalWork, 2> works_;
    int per_batch_;
};

/// What external work returns for a raw launch that returned `status`.
Status launch_status(int status) {
    return status == 0 ? Status{} : Status{Error::invalid_argument("raw launch failed")};
}

/// The raw copy launch on `context`'s two pointers: the CUDA side of external work.
Status raw_copy_on(const DeviceWorkContext& context) {
    return launch_status(launch_raw_user_copy(context.stream, context.pointers[0],
                                              context.pointers[1], small_bytes, 1, small_threads));
}

/// The tandem batch `make(client, arguments)` builds on two small buffers, paired with
/// `raw_launch(stream, from, to)` on two cudaMalloc buffers.
template <typename MakeBatch, typename RawLaunch>
void pair_with_raw_copy(benchmark::State& state, MakeBatch make, RawLaunch raw_launch) {
    auto rt = runtime(state, 1);
    if (!rt) {
        return;
    }
    Client client = rt->client(0);
    auto arguments = tandem_buffers(state, client, small_bytes);
    const RawMemory raw_memory(state, 2, small_bytes);
    if (!arguments || !raw_memory.ok(2)) {
        return;
    }
    auto tandem = make(client, *arguments);
    RawBatch raw([raw_launch, from = raw_memory[0], to = raw_memory[1]](void* stream) {
        raw_launch(stream, from, to);
    });
    launch_pair(state, tandem, raw);
}

/// The tandem batch `make(client, arguments)` builds, paired with the raw copy launch.
template <typename MakeBatch>
void pair_with_raw_copy(benchmark::State& state, MakeBatch make) {
    pair_with_raw_copy(state, make, [](void* stream, const void* from, void* to) {
        (void)launch_raw_user_copy(stream, from, to, small_bytes, 1, small_threads);
    });
}

void launch_pair_user_kernel(benchmark::State& state) {
    pair_with_raw_copy(state, [](Client& client, const std::vector<LaunchArgument>& arguments) {
        return TypedBatch(client, arguments);
    });
}

/// A raw launch in another way (`launch`, with the raw copy's arguments) against the chevron
/// launch: what the way alone costs, without tandem.
void pair_raw_with_raw_copy(benchmark::State& state,
                            int (*launch)(void*, const void*, void*, std::uint64_t, std::uint32_t,
                                          std::uint32_t)) {
    const RawMemory raw_memory(state, 4, small_bytes);
    if (!raw_memory.ok(4)) {
        return;
    }
    RawBatch other([launch, from = raw_memory[2], to = raw_memory[3]](void* stream) {
        (void)launch(stream, from, to, small_bytes, 1, small_threads);
    });
    RawBatch raw([from = raw_memory[0], to = raw_memory[1]](void* stream) {
        (void)launch_raw_user_copy(stream, from, to, small_bytes, 1, small_threads);
    });
    launch_pair(state, other, raw);
}

void launch_pair_raw_full_block(benchmark::State& state) {
    pair_raw_with_raw_copy(state, launch_raw_user_copy_full);
}

void launch_pair_raw_driver(benchmark::State& state) {
    pair_raw_with_raw_copy(state, launch_raw_user_copy_driver);
}

/// The raw launch and the CUDA error check external work makes after its callable.
int launch_raw_user_copy_checked(void* stream, const void* from, void* to, std::uint64_t bytes,
                                 std::uint32_t blocks, std::uint32_t threads) {
    const int launched = launch_raw_user_copy(stream, from, to, bytes, blocks, threads);
    return cudaGetLastError() == cudaSuccess ? launched : 1;
}

void launch_pair_raw_checked(benchmark::State& state) {
    pair_raw_with_raw_copy(state, launch_raw_user_copy_checked);
}

/// The raw launch, then the engine's kind of lock taken and let go, as tandem's path does once
/// the driver's call returns.
int launch_raw_user_copy_locked(void* stream, const void* from, void* to, std::uint64_t bytes,
                                std::uint32_t blocks, std::uint32_t threads) {
    static std::recursive_mutex lock;
    const int launched = launch_raw_user_copy(stream, from, to, bytes, blocks, threads);
    lock.lock();
    lock.unlock();
    return launched;
}

void launch_pair_raw_locked(benchmark::State& state) {
    pair_raw_with_raw_copy(state, launch_raw_user_copy_locked);
}

void external_work_alone(benchmark::State& state) {
    pair_with_raw_copy(state, [](Client& client, const std::vector<LaunchArgument>& arguments) {
        const auto nothing = [](const DeviceWorkContext&) { return Status{}; };
        return ExternalBatch(client, ExternalWork{"nothing", arguments, {nullptr, nothing}},
                             launches_per_batch);
    });
}

void launch_pair_external(benchmark::State& state) {
    pair_with_raw_copy(state, [](Client& client, const std::vector<LaunchArgument>& arguments) {
        return ExternalBatch(client, ExternalWork{"raw_copy", arguments, {nullptr, raw_copy_on}},
                             launches_per_batch);
    });
}

/// External work whose units alternate between two names over the same buffers, so that none
/// repeats the one before it: what a unit costs with a record of its own, on the same bytes as
/// `launch_pair_external`.
void launch_pair_external_alternating(benchmark::State& state) {
    pair_with_raw_copy(state, [](Client& client, const std::vector<LaunchArgument>& arguments) {
        return AlternatingExternalBatch(
            client,
            {ExternalWork{"raw_copy", arguments, {nullptr, raw_copy_on}},
             ExternalWork{"raw_copy_again", arguments, {nullptr, raw_copy_on}}},
            launches_per_batch);
    });
}

/// The time of each chevron launch made through `timed_copy_on`, per side.
struct CallClock {
    std::chrono::steady_clock::duration spent{};
    std::uint64_t calls = 0;

    int launch(void* stream, const void* from, void* to) {
        const auto begin = std::chrono::steady_clock::now();
        const int status = launch_raw_user_copy(stream, from, to, small_bytes, 1, small_threads);
        spent += std::chrono::steady_clock::now() - begin;
        ++calls;
        return status;
    }
    [[nodiscard]] double mean_ns() const {
        return calls == 0 ? 0.0
                          : std::chrono::duration<double, std::nano>(spent).count() /
                                static_cast<double>(calls);
    }
};

void launch_pair_external_timed(benchmark::State& state) {
    CallClock in_tandem;
    CallClock in_raw;
    pair_with_raw_copy(
        state,
        [&in_tandem](Client& client, const std::vector<LaunchArgument>& arguments) {
            const auto timed_copy_on = [&in_tandem](const DeviceWorkContext& context) {
                return launch_status(
                    in_tandem.launch(context.stream, context.pointers[0], context.pointers[1]));
            };
            return ExternalBatch(client,
                                 ExternalWork{"raw_copy", arguments, {nullptr, timed_copy_on}},
                                 launches_per_batch);
        },
        [&in_raw](void* stream, const void* from, void* to) {
            (void)in_raw.launch(stream, from, to);
        });
    state.counters["raw_call_ns"] = in_raw.mean_ns();
    state.counters["tandem_call_ns"] = in_tandem.mean_ns();
}

/// `gemms_per_batch` direct GEMMs on three cudaMalloc matrices, then a stream sync.
class RawGemmBatch {
public:
    RawGemmBatch(const CublasGemm& gemm, const RawMemory& matrices)
        : gemm_(gemm), matrices_(matrices) {
        cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
    }
    ~RawGemmBatch() { cudaStreamDestroy(stream_); }
    RawGemmBatch(const RawGemmBatch&) = delete;
    RawGemmBatch& operator=(const RawGemmBatch&) = delete;
    void enqueue() {
        for (int gemm = 0; gemm < gemms_per_batch; ++gemm) {
            (void)gemm_.run(stream_, static_cast<const float*>(matrices_[0]),
                            static_cast<const float*>(matrices_[1]),
                            static_cast<float*>(matrices_[2]), gemm_n);
        }
    }
    void sync() { cudaStreamSynchronize(stream_); }

private:
    const CublasGemm& gemm_;
    const RawMemory& matrices_;
    cudaStream_t stream_ = nullptr;
};

void gemm_pair_external(benchmark::State& state) {
    auto rt = runtime(state, 1);
    const CublasGemm gemm;
    if (!rt || !gemm.ok()) {
        if (rt) {
            state.SkipWithError("cublasCreate failed");
        }
        return;
    }
    constexpr std::uint64_t matrix_bytes = std::uint64_t{gemm_n} * gemm_n * sizeof(float);
    Client client = rt->client(0);
    auto inputs = tandem_buffers(state, client, matrix_bytes);
    auto output = client.allocate(matrix_bytes);
    const RawMemory raw_memory(state, 3, matrix_bytes);
    if (!inputs || !output || !raw_memory.ok(3)) {
        return;
    }
    std::vector<LaunchArgument> arguments = {
        (*inputs)[0], (*inputs)[1], {*output, AccessMode::Write, std::nullopt}};
    arguments[1].access = AccessMode::Read;
    auto on_gpu = [&gemm](const DeviceWorkContext& context) -> Status {
        const int status =
            gemm.run(context.stream, context.pointer<const float>(0),
                     context.pointer<const float>(1), context.pointer<float>(2), gemm_n);
        return status == 0 ? Status{} : Status{Error::invalid_argument("cublasSgemm failed")};
    };
    ExternalBatch tandem(client, ExternalWork{"cublas_sgemm", arguments, {nullptr, on_gpu}},
                         gemms_per_batch);
    RawGemmBatch raw(gemm, raw_memory);
    launch_pair(state, tandem, raw, gemms_per_batch);
    // Throughput is the inverse of time: tandem's share of the direct call's.
    state.counters["throughput_ratio"] = 1.0 / state.counters["ratio"];
    state.counters["tflops"] =
        2.0 * gemm_n * double{gemm_n} * gemm_n / (state.counters["tandem_ns"] * 1e3);
}

BENCHMARK(launch_pair_user_kernel)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(launch_pair_external)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(launch_pair_external_alternating)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(launch_pair_raw_full_block)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(launch_pair_raw_driver)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(launch_pair_raw_checked)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(launch_pair_raw_locked)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(launch_pair_external_timed)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(external_work_alone)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(gemm_pair_external)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(20);

}  // namespace
}  // namespace tandem::bench
