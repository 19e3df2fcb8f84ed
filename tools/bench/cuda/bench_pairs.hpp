#pragma once

// What the CUDA benchmarks share: the runtime they all use, a batch of raw launches, and the
// paired comparison of a batch through tandem with a raw batch of the same work.

#include "bench_checks.hpp"

#include "tandem/cuda/runtime.hpp"

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <utility>
#include <vector>

namespace tandem::bench {

inline constexpr std::uint64_t mib = std::uint64_t{1} << 20;
/// Launches per timed batch; one sync per batch, as a program that launches many kernels does.
inline constexpr int launches_per_batch = 1000;

/// The process's CUDA runtime, created on first use; null, with `state` skipped, when it cannot
/// be created or has fewer than `devices` GPUs.
inline std::shared_ptr<cuda::CudaRuntime> runtime(benchmark::State& state, std::uint32_t devices) {
    static std::shared_ptr<cuda::CudaRuntime> shared;
    if (!shared) {
        auto created = cuda::CudaRuntime::create();
        if (!created) {
            state.SkipWithError(created.error().message().c_str());
            return nullptr;
        }
        shared = *created;
    }
    if (shared->device_count() < devices) {
        state.SkipWithError(devices == 1 ? "needs a GPU" : "needs two GPUs");
        return nullptr;
    }
    return shared;
}

/// A batch of raw launches: `launches_per_batch` calls of `launch_on` on a stream of GPU 0 of
/// its own, then a stream sync.
template <typename LaunchOn>
class RawBatch {
public:
    explicit RawBatch(LaunchOn launch_on) : launch_on_(std::move(launch_on)) {
        cudaSetDevice(0);
        cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
    }
    ~RawBatch() { cudaStreamDestroy(stream_); }
    RawBatch(const RawBatch&) = delete;
    RawBatch& operator=(const RawBatch&) = delete;

    void enqueue() {
        for (int launch = 0; launch < launches_per_batch; ++launch) {
            launch_on_(stream_);
        }
    }
    void sync() { cudaStreamSynchronize(stream_); }

private:
    LaunchOn launch_on_;
    cudaStream_t stream_ = nullptr;
};

/// `count` zero-filled cudaMalloc buffers of `bytes` each on GPU 0, freed when it goes.
class RawMemory {
public:
    RawMemory(benchmark::State& state, int count, std::uint64_t bytes) {
        cudaSetDevice(0);
        for (int index = 0; index < count; ++index) {
            void* pointer = nullptr;
            if (cudaMalloc(&pointer, bytes) != cudaSuccess) {
                state.SkipWithError("cudaMalloc failed");
                return;
            }
            cudaMemset(pointer, 0, bytes);
            pointers_.push_back(pointer);
        }
        cudaDeviceSynchronize();
    }
    ~RawMemory() {
        for (void* pointer : pointers_) {
            cudaFree(pointer);
        }
    }
    RawMemory(const RawMemory&) = delete;
    RawMemory& operator=(const RawMemory&) = delete;

    [[nodiscard]] bool ok(int count) const { return pointers_.size() == std::size_t(count); }
    [[nodiscard]] void* operator[](std::size_t index) const { return pointers_[index]; }

private:
    std::vector<void*> pointers_;
};

/// A batch through tandem and a raw batch of the same kernel, timed one after the other in each
/// iteration, the order alternating, so that both meet the machine as it is at that moment: the
/// load of other processes and the clock move over seconds, and move two benchmarks run apart by
/// more than tandem's cost. Reports the median of the per-iteration ratios (`ratio`, tandem time
/// over raw time) and each side's median batch time per launch (`tandem_ns`, `raw_ns`) and time
/// to enqueue it (`tandem_enqueue_ns`, `raw_enqueue_ns`); the iteration's time is the pair's. Each batch is `per_batch` units of work.
template <typename Tandem, typename Raw>
void launch_pair(benchmark::State& state, Tandem& tandem_batch, Raw& raw_batch,
                 int per_batch = launches_per_batch) {
    // The time to enqueue the batch is kept apart too: where it is most of the batch's time, the
    // host's path is what the pair measures; where it is not, the GPU's.
    std::vector<double> tandem_enqueue_seconds;
    std::vector<double> raw_enqueue_seconds;
    const auto timed = [](auto& batch, std::vector<double>& enqueue_seconds) {
        const auto begin = std::chrono::steady_clock::now();
        batch.enqueue();
        const auto enqueued = std::chrono::steady_clock::now();
        batch.sync();
        enqueue_seconds.push_back(std::chrono::duration<double>(enqueued - begin).count());
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    };
    std::vector<double> tandem_seconds;
    std::vector<double> raw_seconds;
    std::vector<double> ratios;
    bool tandem_first = true;
    for (auto _ : state) {
        double tandem = 0;
        double raw = 0;
        if (tandem_first) {
            tandem = timed(tandem_batch, tandem_enqueue_seconds);
            raw = timed(raw_batch, raw_enqueue_seconds);
        } else {
            raw = timed(raw_batch, raw_enqueue_seconds);
            tandem = timed(tandem_batch, tandem_enqueue_seconds);
        }
        tandem_first = !tandem_first;
        tandem_seconds.push_back(tandem);
        raw_seconds.push_back(raw);
        ratios.push_back(tandem / raw);
        state.SetIterationTime(tandem + raw);
    }
    state.counters["ratio"] = median(ratios);
    state.counters["tandem_ns"] = median(tandem_seconds) * 1e9 / per_batch;
    state.counters["raw_ns"] = median(raw_seconds) * 1e9 / per_batch;
    // What tandem adds to a launch, in host time: the raw launch's own cost differs from host to
    // host, so the ratio alone does not say it.
    state.counters["added_ns"] = state.counters["tandem_ns"] - state.counters["raw_ns"];
    state.counters["tandem_enqueue_ns"] = median(tandem_enqueue_seconds) * 1e9 / per_batch;
    state.counters["raw_enqueue_ns"] = median(raw_enqueue_seconds) * 1e9 / per_batch;
    state.SetItemsProcessed(state.iterations() * 2 * per_batch);
}

}  // namespace tandem::bench
