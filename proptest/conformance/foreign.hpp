// Work and memory from outside tandem, as the suites' host code makes them on every backend
// built here: external work that copies, and memory of another allocator to adopt. Kept out of
// user_kernels.hpp, which the CUDA registration unit includes too.
#pragma once

#include "user_kernels.hpp"

#include "tandem/core/external_work.hpp"
#include "tandem/core/runtime.hpp"

#include <algorithm>
#include <atomic>
#include <functional>

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
