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
#include <functional>
#include <memory>
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
/// simulator's threads mode, a kernel spinning on a flag in mapped host memory on CUDA. Only for
/// backends whose waits leave the runtime to other threads (`waits_apart`): elsewhere the thread
/// that opens the gate is the one that would run the held-back work. Opened when it goes out of
/// scope, so declare it after the runtime: a failed assertion never leaves work waiting on it;
/// and gated work gives up after `gate_gives_up_after_ns`, so a call that wrongly waits for it
/// fails its test instead of hanging it.
class Gate {
public:
    Gate() : open_(std::make_shared<std::atomic<bool>>(false)) {
#if TANDEM_HAS_CUDA_KERNELS
        device_ = device_gate();
#endif
    }
    Gate(const Gate&) = delete;
    Gate& operator=(const Gate&) = delete;
    ~Gate() { open(); }

    /// The work that waits for the gate, on every backend built here.
    [[nodiscard]] ExternalCallables work() const {
        ExternalCallables run;
        run.host = [open = open_](HostKernelContext&) -> Status {
            const auto until = std::chrono::steady_clock::now() +
                               std::chrono::nanoseconds(gate_gives_up_after_ns);
            while (!open->load() && std::chrono::steady_clock::now() < until) {
                std::this_thread::sleep_for(std::chrono::microseconds(50));
            }
            return {};
        };
#if TANDEM_HAS_CUDA_KERNELS
        run.cuda = device_.wait;
#endif
        return run;
    }
    /// Lets the held-back work end.
    void open() {
        open_->store(true);
#if TANDEM_HAS_CUDA_KERNELS
        if (device_.flag != nullptr) {
            *device_.flag = 1;
        }
#endif
    }

private:
    std::shared_ptr<std::atomic<bool>> open_;
#if TANDEM_HAS_CUDA_KERNELS
    DeviceGate device_;
#endif
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
