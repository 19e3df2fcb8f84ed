#pragma once

// How a kernel's wrapper reaches the GPU: through the driver's `cuLaunchKernel`, on the driver's
// function of the wrapper in the current context, found at its first launch there. The runtime's
// `cudaLaunchKernel` looks the function up again in every call; on H200 hosts the driver's call
// measured 250 ns a launch faster (docs/PERFORMANCE.md), most of what tandem adds to a launch.
// Where the driver's function cannot be had, and on a thread with no current context yet, the
// runtime's call is made instead, with the same result.
//
// Inline, in the registration unit that compiles the wrapper: the handle is asked of the CUDA
// runtime the unit registered its kernels with.

#include "tandem/core/kernel.hpp"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <mutex>

namespace tandem::cuda::detail {

/// The driver's function `name` of ABI 4000 as `Function` (a `PFN_..._v4000` of cudaTypedefs.h),
/// through the runtime's entry points; null where the driver does not provide it. For a lookup
/// kept once (a function-local static): it is not meant for hot paths.
template <typename Function>
Function driver_entry(const char* name) {
    void* entry = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion(name, &entry, 4000, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
        (void)cudaGetLastError();  // Reported as null: launched through the runtime instead.
        return nullptr;
    }
    return reinterpret_cast<Function>(entry);
}

/// The driver's `cuLaunchKernel`, found once; null where the driver does not provide it.
inline PFN_cuLaunchKernel_v4000 driver_launch_function() {
    static const auto function = driver_entry<PFN_cuLaunchKernel_v4000>("cuLaunchKernel");
    return function;
}

/// The driver's `cuCtxGetCurrent`, found once; null where the driver does not provide it.
inline PFN_cuCtxGetCurrent_v4000 driver_current_context_function() {
    static const auto function = driver_entry<PFN_cuCtxGetCurrent_v4000>("cuCtxGetCurrent");
    return function;
}

/// The driver's functions of one kernel wrapper, one per context it was launched in: a
/// `CUfunction` belongs to one context (a context-free `cudaKernel_t` measured no faster to launch
/// than the runtime's call, the driver looking its function up in every launch). Found lock-free;
/// added under a lock, at most `contexts_max` (a launch in a context past them goes through the
/// runtime).
struct DriverFunctions {
    static constexpr int contexts_max = 16;
    std::atomic<CUcontext> contexts[contexts_max] = {};
    std::atomic<CUfunction> functions[contexts_max] = {};
    std::atomic<int> count{0};

    /// The function of the wrapper `wrapper` in `context` (the calling thread's current one),
    /// or null where there is none to be had.
    CUfunction in(CUcontext context, const void* wrapper) {
        const CUfunction known = find(context, count.load(std::memory_order_acquire));
        return known != nullptr ? known : add(context, wrapper);
    }

private:
    /// The function kept for `context` among the first `known`, or null.
    CUfunction find(CUcontext context, int known) const {
        for (int index = 0; index < known; ++index) {
            if (contexts[index].load(std::memory_order_relaxed) == context) {
                return functions[index].load(std::memory_order_relaxed);
            }
        }
        return nullptr;
    }
    CUfunction add(CUcontext context, const void* wrapper);
};

/// A lock of its own for the additions of every wrapper: they happen once per wrapper and
/// context.
inline std::mutex& driver_functions_lock() {
    static std::mutex lock;
    return lock;
}

inline CUfunction DriverFunctions::add(CUcontext context, const void* wrapper) {
    std::lock_guard guard(driver_functions_lock());
    const int known = count.load(std::memory_order_relaxed);
    if (const CUfunction added = find(context, known)) {
        return added;  // Another thread added it meanwhile.
    }
    cudaFunction_t found = nullptr;
    if (known == contexts_max || cudaGetFuncBySymbol(&found, wrapper) != cudaSuccess) {
        (void)cudaGetLastError();
        return nullptr;
    }
    functions[known].store(reinterpret_cast<CUfunction>(found), std::memory_order_relaxed);
    contexts[known].store(context, std::memory_order_relaxed);
    count.store(known + 1, std::memory_order_release);
    return reinterpret_cast<CUfunction>(found);
}

/// The driver's function of `wrapper` for the calling thread's current context (`known`, where
/// the caller knows it), kept in `functions`; null where no context is current or the driver
/// cannot say.
inline CUfunction driver_function_of(const void* wrapper, DriverFunctions& functions, void* known) {
    auto context = static_cast<CUcontext>(known);
    const PFN_cuCtxGetCurrent_v4000 current = driver_current_context_function();
    if (context == nullptr &&
        (current == nullptr || current(&context) != CUDA_SUCCESS || context == nullptr)) {
        return nullptr;  // The runtime's call makes the device's own context current.
    }
    return functions.in(context, wrapper);
}

/// Loads each of `functions` (null ones skipped) into the current context, as its first launch
/// would; returns the first error, as a cudaError_t. With lazy loading (the default since CUDA
/// 12.2) a kernel's first launch loads it, and loading waits for the kernels running in the
/// context: a kernel that waits for another one (a handoff, a producer on another stream)
/// would then wait for ever if the other is launched for the first time after it.
template <std::size_t Count>
int load_functions(const void* const (&functions)[Count]) {
    cudaError_t first = cudaSuccess;
    for (const void* function : functions) {
        cudaFuncAttributes attributes{};
        if (function == nullptr) {
            continue;
        }
        if (const cudaError_t status = cudaFuncGetAttributes(&attributes, function);
            status != cudaSuccess && first == cudaSuccess) {
            first = status;
            (void)cudaGetLastError();  // Reported here: do not leave it for an unrelated call.
        }
    }
    return static_cast<int>(first);
}

/// Enqueues one launch of the wrapper `function` with `params` on `stream`, through the driver
/// where it can (`functions` keeps the wrapper's functions; `context` is the current one, or
/// null when the caller does not know it); returns the launch's cudaError_t. For a launch the
/// driver's error codes are the runtime's.
template <typename Params>
int launch_wrapper(const void* function, DriverFunctions& functions, const LaunchConfig& config,
                   void* stream, const Params& params, std::size_t shared_bytes, void* context) {
    void* arguments[] = {const_cast<Params*>(&params)};
    const PFN_cuLaunchKernel_v4000 launch = driver_launch_function();
    if (const CUfunction kernel =
            launch != nullptr ? driver_function_of(function, functions, context) : nullptr) {
        return static_cast<int>(launch(kernel, config.grid.x, config.grid.y, config.grid.z,
                                       config.block.x, config.block.y, config.block.z,
                                       static_cast<unsigned int>(shared_bytes),
                                       static_cast<CUstream>(stream), arguments, nullptr));
    }
    // One runtime call, where the chevron syntax makes three (push and pop of the
    // configuration, then the launch) and a fourth to read its error.
    const cudaError_t status =
        cudaLaunchKernel(function, dim3(config.grid.x, config.grid.y, config.grid.z),
                         dim3(config.block.x, config.block.y, config.block.z), arguments,
                         shared_bytes, static_cast<cudaStream_t>(stream));
    if (status != cudaSuccess) {
        (void)cudaGetLastError();  // Reported here: do not leave it for an unrelated call.
    }
    return static_cast<int>(status);
}

}  // namespace tandem::cuda::detail
