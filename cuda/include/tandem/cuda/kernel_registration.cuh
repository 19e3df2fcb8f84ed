#pragma once

// A kernel functor compiled for the GPU: the wrapper every launch of it runs, and the
// registration that makes it launchable on the CUDA backend. Included by a `.cu` registration
// unit, the catalog's (inside tandem) or a program's own:
//
//     // my_kernels.cu, compiled where the CUDA toolkit exists (tandem_add_kernels in CMake)
//     #include "my_kernels.hpp"                        // struct Scale { name; operator() }
//     #include "tandem/cuda/kernel_registration.cuh"
//     TANDEM_REGISTER_CUDA_KERNEL(Scale);
//
// The wrapper gives a user's kernel what a catalog kernel gets: before it computes, it checks
// the status words of the producers of its inputs (C13 on the device: a consumer of failed work
// never computes), then a fault injected for the launch, and reports through the launch's status
// word. The unit registers the kernel's launcher by name only, so that nothing in it instantiates
// the kernel for the host: a program registers the kernel itself in a C++ source
// (`TANDEM_REGISTER_KERNEL`) for launches by name; typed launches need nothing more.

#include "tandem/core/kernel_entry.hpp"
#include "tandem/cuda/driver_launch.cuh"
#include "tandem/cuda/kernel_context.cuh"
#include "tandem/cuda/launch_params.hpp"

#include <cuda_runtime.h>

#include <atomic>
#include <type_traits>

namespace tandem::cuda {
namespace detail {

// `__grid_constant__`: the tensor maps in the block are read by the TMA where they are, in the
// kernel's parameter space, which needs the parameter const and never copied.
template <typename Kernel, typename Params>
__global__ void run_launch(const __grid_constant__ Params params) {
    CudaKernelContext context(params);
    // A failed producer comes first (C9: the launch is skipped with its input's failure), then a
    // fault injected for this launch, as on the simulator.
    const bool skipped = context.producer_failed();
    if (skipped || context.injected_code() != 0) {
        if (context.thread_index() == 0) {
            context.claim_status(skipped ? skipped_code : context.injected_code());
        }
        return;
    }
    Kernel{}(context);
}

/// The wrapper of a plain graph node (`plain_node`): no producer, ticket or injected fault to
/// check, so the kernel runs at once. `Linear` for a launch of one dimension.
template <typename Kernel, bool Linear>
__global__ void run_plain_node(const __grid_constant__ CompactLaunchParams params) {
    CudaKernelContext<CompactLaunchParams, Linear> context(params, plain_node);
    Kernel{}(context);
}

/// Enqueues one launch of `Kernel` with `params` in the current `context` (null when unknown);
/// returns the launch's cudaError_t.
template <typename Kernel, typename Params>
int launch_with(const LaunchConfig& config, void* stream, const Params& params,
                std::size_t shared_bytes, void* context) {
    static DriverFunctions functions;
    return launch_wrapper(reinterpret_cast<const void*>(&run_launch<Kernel, Params>), functions,
                          config, stream, params, shared_bytes, context);
}

/// Enqueues one launch of `Kernel` as a plain graph node (`run_plain_node`).
template <typename Kernel>
int launch_plain_node(const LaunchConfig& config, void* stream, const CompactLaunchParams& params,
                      void* context) {
    const bool linear = config.grid.y == 1 && config.grid.z == 1 && config.block.y == 1 &&
                        config.block.z == 1;
    static DriverFunctions linear_functions;
    static DriverFunctions functions;
    const void* wrapper = linear ? reinterpret_cast<const void*>(&run_plain_node<Kernel, true>)
                                 : reinterpret_cast<const void*>(&run_plain_node<Kernel, false>);
    return launch_wrapper(wrapper, linear ? linear_functions : functions, config, stream, params, 0,
                          context);
}

/// Loads every wrapper a launch of `Kernel` may run into the current context
/// (`Launcher`'s loading call); returns the first error, as a cudaError_t.
template <typename Kernel>
int load_wrappers() {
    const void* wrappers[4] = {};
    if constexpr (reads_tensor_maps<Kernel>()) {
        wrappers[0] = reinterpret_cast<const void*>(&run_launch<Kernel, TensorLaunchParams>);
    } else {
        wrappers[0] = reinterpret_cast<const void*>(&run_launch<Kernel, LaunchParams>);
        wrappers[1] = reinterpret_cast<const void*>(&run_launch<Kernel, CompactLaunchParams>);
        wrappers[2] = reinterpret_cast<const void*>(&run_plain_node<Kernel, true>);
        wrappers[3] = reinterpret_cast<const void*>(&run_plain_node<Kernel, false>);
    }
    return load_functions(wrappers);
}

/// Enqueues one launch of `Kernel` (a `Launcher`): with the whole block if it reads tensor maps,
/// with the compact block for a graph node that fits it, with `LaunchParams` otherwise. A
/// config of no threads loads its wrappers instead (`load_wrappers`).
template <typename Kernel>
int launch(const LaunchConfig& config, void* stream, const TensorLaunchParams& block) {
    if (config.block.count() == 0) [[unlikely]] {
        return load_wrappers<Kernel>();
    }
    if constexpr (reads_tensor_maps<Kernel>()) {
        // A TMA launch stages one tile per thread in dynamic shared memory, then its barriers.
        const std::size_t shared_bytes =
            block.tma_slot_bytes != 0
                ? std::size_t{block.tma_slot_bytes + tma_barrier_bytes} * config.block.count()
                : 0;
        return launch_with<Kernel>(config, stream, block, shared_bytes, block.current_context);
    } else if (block.graph_node == plain_node && block.producer_count == 0 &&
               CompactLaunchParams::fits(block)) {
        return launch_plain_node<Kernel>(config, stream, CompactLaunchParams::of(block),
                                         block.current_context);
    } else if (block.graph_node != not_a_node && CompactLaunchParams::fits(block)) {
        return launch_with<Kernel>(config, stream, CompactLaunchParams::of(block), 0,
                                   block.current_context);
    } else {
        return launch_with<Kernel>(config, stream, static_cast<const LaunchParams&>(block), 0,
                                   block.current_context);
    }
}

}  // namespace detail

/// Makes `Kernel` launchable on the CUDA backend, typed or by name (by name also needs it
/// registered on the host: `TANDEM_REGISTER_KERNEL` in a C++ source).
template <typename Kernel>
void register_cuda_kernel() {
    const Launcher launcher = &detail::launch<Kernel>;
    set_device_launcher(Kernel::name, reinterpret_cast<DeviceLauncher>(launcher));
}

namespace detail {
/// Registers `Kernel` for CUDA when constructed; what `TANDEM_REGISTER_CUDA_KERNEL` defines.
template <typename Kernel>
struct CudaKernelRegistration {
    CudaKernelRegistration() { register_cuda_kernel<Kernel>(); }
};
}  // namespace detail

}  // namespace tandem::cuda

/// Registers the kernel functor `Kernel` for the CUDA backend at static initialisation, in a
/// `.cu` source of the program.
#define TANDEM_REGISTER_CUDA_KERNEL(Kernel)                                                    \
    static const ::tandem::cuda::detail::CudaKernelRegistration<Kernel> TANDEM_DETAIL_CONCAT(  \
        tandem_cuda_kernel_registration_, __COUNTER__) {}
