// Work and memory from outside tandem, as the suites' host code makes them on every backend
// built here: external work that copies, and memory of another allocator to adopt. Kept out of
// user_kernels.hpp, which the CUDA registration unit includes too.
#pragma once

#include "user_kernels.hpp"

#include "tandem/core/external_work.hpp"
#include "tandem/core/runtime.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace tandem::conformance {

/// Copies argument 0 into argument 1 on a host backend, as many bytes as the smaller holds.
inline Status host_copy(HostKernelContext& context) {
    auto in = context.buffer<std::uint8_t>(0);
    auto out = context.buffer<std::uint8_t>(1);
    for (std::uint64_t i = 0; i < std::min(in.size(), out.size()); ++i) {
        out.store(i, in.load(i));
    }
    return {};
}

/// A copy of argument 0 into argument 1 as external work, on every backend built here.
inline ExternalCallables external_copy() {
    ExternalCallables run;
    run.host = host_copy;
#if TANDEM_HAS_CUDA_KERNELS
    run.cuda = device_copy();
#endif
    return run;
}

/// Work a test holds a stream back with until it opens the gate, instead of a delay assumed to
/// outlast what the test does meanwhile: a host callable that waits for the gate on the
/// simulator's threads mode, a wait of the CUDA stream on a flag in mapped host memory on CUDA.
/// Only for backends whose waits leave the runtime to other threads (`waits_apart`): elsewhere
/// the thread that opens the gate is the one that would run the held-back work. Opened when it
/// goes out of scope, so declare it after the runtime: a failed assertion never leaves work
/// waiting on it. It also opens by itself after `gives_up_after`, far past any test's calls, so
/// that a call that wrongly waits for the gate fails its test (the work is found complete)
/// instead of hanging it.
class Gate {
public:
    static constexpr std::chrono::seconds gives_up_after{60};

    Gate() : state_(std::make_shared<State>()) {
#if TANDEM_HAS_CUDA_KERNELS
        state_->device = device_gate();
#endif
        watchdog_ = std::thread([state = state_] {
            std::unique_lock lock(state->mutex);
            state->changed.wait_for(lock, gives_up_after, [&] { return state->open.load(); });
            lock.unlock();
            state->let_go();
        });
    }
    Gate(const Gate&) = delete;
    Gate& operator=(const Gate&) = delete;
    ~Gate() {
        open();
        watchdog_.join();
    }

    /// The work that waits for the gate, on every backend built here.
    [[nodiscard]] ExternalCallables work() const {
        ExternalCallables run;
        run.host = [state = state_](HostKernelContext&) -> Status {
            std::unique_lock lock(state->mutex);
            state->changed.wait(lock, [&] { return state->open.load(); });
            return {};
        };
#if TANDEM_HAS_CUDA_KERNELS
        run.cuda = state_->device.wait;
#endif
        return run;
    }
    /// Lets the held-back work go on.
    void open() { state_->let_go(); }

private:
    struct State {
        std::mutex mutex;
        std::condition_variable changed;
        std::atomic<bool> open{false};
#if TANDEM_HAS_CUDA_KERNELS
        DeviceGate device;
#endif
        void let_go() {
            {
                const std::lock_guard lock(mutex);
                open = true;
            }
            changed.notify_all();
#if TANDEM_HAS_CUDA_KERNELS
            if (device.flag != nullptr) {
                *device.flag = 1;
            }
#endif
        }
    };
    std::shared_ptr<State> state_;
    std::thread watchdog_;
};

/// Memory of the allocator a program would use next to tandem on `runtime`'s backend: the GPU's
/// on CUDA, the host's elsewhere. Freed by `release`.
struct Foreign {
    void* pointer = nullptr;
    std::function<void()> release;
};

/// `size_bytes` of foreign memory for `runtime`; its release frees them and counts one more in
/// `*releases`, which must outlive the runtime. Atomic: a release runs on whichever thread drops
/// the last reference (a worker of the simulator's threads mode, say).
inline Foreign foreign_memory([[maybe_unused]] const Runtime& runtime, std::uint64_t size_bytes,
                              std::atomic<int>* releases) {
#if TANDEM_HAS_CUDA_KERNELS
    if (runtime.backend() == "cuda") {
        void* pointer = device_malloc(size_bytes);
        return {pointer, [pointer, releases] {
                    device_free(pointer);
                    ++*releases;
                }};
    }
#endif
    auto* bytes = new std::byte[size_bytes];
    return {bytes, [bytes, releases] {
                delete[] bytes;
                ++*releases;
            }};
}

}  // namespace tandem::conformance
