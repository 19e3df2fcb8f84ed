#pragma once

// How a kernel's wrapper reaches the GPU: through the driver's `cuLaunchKernel`, on the driver's
// handle of the wrapper found at its first launch. The runtime's `cudaLaunchKernel` looks the
// function up again in every call; on H200 hosts the driver's call measured about 190 ns a launch
// faster (docs/PERFORMANCE.md), most of what tandem adds to a launch. Where the driver's function
// or the handle cannot be had, and on a thread with no current context yet, the runtime's call is
// made instead, with the same result.
//
// Inline, in the registration unit that compiles the wrapper: the handle is asked of the CUDA
// runtime the unit registered its kernels with.

#include "tandem/core/kernel.hpp"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>

namespace tandem::cuda::detail {

/// The driver's `cuLaunchKernel`, found once; null where the driver does not provide it.
inline PFN_cuLaunchKernel_v4000 driver_launch_function() {
    static const PFN_cuLaunchKernel_v4000 function = [] {
        void* entry = nullptr;
        cudaDriverEntryPointQueryResult found{};
        if (cudaGetDriverEntryPointByVersion("cuLaunchKernel", &entry, 4000, cudaEnableDefault,
                                             &found) != cudaSuccess ||
            found != cudaDriverEntryPointSuccess) {
            (void)cudaGetLastError();  // Launched through the runtime instead.
            return PFN_cuLaunchKernel_v4000{nullptr};
        }
        return reinterpret_cast<PFN_cuLaunchKernel_v4000>(entry);
    }();
    return function;
}

/// The driver's handle of the kernel `function`, kept in `slot` from its first launch: a
/// `cudaKernel_t`, which belongs to no context and is launched in the current one. Null where
/// the runtime cannot give one.
inline CUfunction driver_kernel(const void* function, std::atomic<CUfunction>& slot) {
    CUfunction kernel = slot.load(std::memory_order_acquire);
    if (kernel == nullptr) {
        cudaKernel_t found = nullptr;
        if (cudaGetKernel(&found, function) != cudaSuccess) {
            (void)cudaGetLastError();
            return nullptr;
        }
        kernel = reinterpret_cast<CUfunction>(found);
        slot.store(kernel, std::memory_order_release);
    }
    return kernel;
}

/// Enqueues one launch of the wrapper `function` with `params` on `stream`, through the driver
/// where it can (`slot` keeps the wrapper's handle); returns the launch's cudaError_t. For a
/// launch the driver's error codes are the runtime's.
template <typename Params>
int launch_wrapper(const void* function, std::atomic<CUfunction>& slot, const LaunchConfig& config,
                   void* stream, const Params& params, std::size_t shared_bytes) {
    void* arguments[] = {const_cast<Params*>(&params)};
    const PFN_cuLaunchKernel_v4000 launch = driver_launch_function();
    if (const CUfunction kernel = launch != nullptr ? driver_kernel(function, slot) : nullptr) {
        const CUresult result =
            launch(kernel, config.grid.x, config.grid.y, config.grid.z, config.block.x,
                   config.block.y, config.block.z, static_cast<unsigned int>(shared_bytes),
                   static_cast<CUstream>(stream), arguments, nullptr);
        if (result != CUDA_ERROR_INVALID_CONTEXT) {
            return static_cast<int>(result);
        }
        // No context is current on this thread yet: the runtime's call makes the device's own.
    }
    // One runtime call, where the chevron syntax makes three (push and pop of the
    // configuration, then the launch) and a fourth to read its error.
    const cudaError_t status = cudaLaunchKernel(
        function, dim3(config.grid.x, config.grid.y, config.grid.z),
        dim3(config.block.x, config.block.y, config.block.z), arguments, shared_bytes,
        static_cast<cudaStream_t>(stream));
    if (status != cudaSuccess) {
        (void)cudaGetLastError();  // Reported here: do not leave it for an unrelated call.
    }
    return static_cast<int>(status);
}

}  // namespace tandem::cuda::detail
