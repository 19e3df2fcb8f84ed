#include "launcher.hpp"

#include "tandem/core/kernels/catalog.hpp"
#include "tandem/cuda/kernel_context.cuh"

#include <cuda_runtime.h>

#include <array>
#include <type_traits>
#include <utility>

namespace tandem::cuda {
namespace {

/// Every launch checks, before it computes, that no producer of its inputs failed (C13 on the
/// device): a consumer of failed work never computes on garbage.
/// Kernels that read tensor maps, and so receive the larger parameter block.
template <typename Kernel>
inline constexpr bool reads_tensor_maps = false;
template <>
inline constexpr bool reads_tensor_maps<kernels::TiledCopy> = true;

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

template <typename Kernel>
int launch(const LaunchConfig& config, void* stream, const TensorLaunchParams& block) {
    using Params = std::conditional_t<reads_tensor_maps<Kernel>, TensorLaunchParams, LaunchParams>;
    const Params& params = block;
    const dim3 grid(config.grid.x, config.grid.y, config.grid.z);
    const dim3 threads(config.block.x, config.block.y, config.block.z);
    // cudaLaunchKernel returns the launch's own error: one runtime call, where the chevron syntax
    // makes three (push and pop of the configuration, then the launch) and a fourth to read it.
    // A TMA launch stages one tile per thread in dynamic shared memory, then its barriers.
    const std::size_t shared_bytes =
        reads_tensor_maps<Kernel> && block.tma_slot_bytes != 0
            ? std::size_t{block.tma_slot_bytes + tma_barrier_bytes} * config.block.count()
            : 0;
    void* arguments[] = {const_cast<Params*>(&params)};
    const cudaError_t status =
        cudaLaunchKernel(reinterpret_cast<const void*>(&run_launch<Kernel, Params>), grid, threads,
                         arguments, shared_bytes, static_cast<cudaStream_t>(stream));
    if (status != cudaSuccess) {
        (void)cudaGetLastError();  // Reported here: do not leave it for an unrelated call.
    }
    return static_cast<int>(status);
}

template <typename Kernel>
struct LauncherOf {
    static constexpr Launcher value = &launch<Kernel>;
};

constexpr auto catalog = kernels::Catalog::table<LauncherOf>();

__global__ void spin(std::uint64_t microseconds) {
    for (std::uint64_t waited = 0; waited < microseconds; ++waited) {
        __nanosleep(1000);
    }
}

}  // namespace

Launcher find_launcher(std::string_view name) {
    for (const auto& [kernel, launcher] : catalog) {
        if (kernel == name) {
            return launcher;
        }
    }
    return nullptr;
}

int launch_delay(void* stream, std::uint64_t microseconds) {
    spin<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(microseconds);
    return static_cast<int>(cudaGetLastError());
}

}  // namespace tandem::cuda
