#include "raw_kernels.hpp"

#include "tandem/core/kernels/catalog.hpp"
#include "tandem/cuda/kernel_context.cuh"

#include <cuda_runtime.h>

#include <bit>

namespace tandem::bench {
namespace {

__global__ void raw_empty() {}

__global__ void raw_empty_with_params(cuda::LaunchParams params) {
    if (params.status == reinterpret_cast<unsigned long long*>(1)) {
        *params.status = 0;  // Never true: keeps the parameter from being optimised away.
    }
}

__global__ void raw_empty_with_compact_params(cuda::CompactLaunchParams params) {
    if (params.status == reinterpret_cast<unsigned long long*>(1)) {
        *params.status = 0;  // Never true: keeps the parameter from being optimised away.
    }
}

__global__ void raw_copy(cuda::LaunchParams params) {
    cuda::CudaKernelContext context(params);
    kernels::Copy{}(context);
}

__global__ void raw_spin(std::uint64_t microseconds) {
    for (std::uint64_t waited = 0; waited < microseconds; ++waited) {
        __nanosleep(1000);
    }
}

__global__ void raw_axpy(cuda::LaunchParams params) {
    cuda::CudaKernelContext context(params);
    kernels::Axpy{}(context);
}

}  // namespace

void launch_raw_empty(void* stream) { raw_empty<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(); }

void launch_raw_empty_with_params(void* stream) {
    const cuda::LaunchParams params;
    raw_empty_with_params<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(params);
}

void launch_raw_empty_with_compact_params(void* stream) {
    const cuda::CompactLaunchParams params;
    raw_empty_with_compact_params<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(params);
}

void launch_raw_copy(void* stream, std::uint8_t* to, const std::uint8_t* from, std::uint64_t bytes,
                     std::uint32_t blocks, std::uint32_t threads) {
    cuda::LaunchParams params;
    params.resource_count = 2;
    params.resources[0] = cuda::DeviceResource{const_cast<std::uint8_t*>(from), bytes};
    params.resources[1] = cuda::DeviceResource{to, bytes};
    raw_copy<<<blocks, threads, 0, static_cast<cudaStream_t>(stream)>>>(params);
}

void launch_raw_spin(void* stream, std::uint64_t microseconds) {
    raw_spin<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(microseconds);
}

void launch_raw_axpy(void* stream, const float* x, float* y, std::uint64_t count, double alpha,
                     std::uint32_t blocks, std::uint32_t threads) {
    cuda::LaunchParams params;
    params.resource_count = 2;
    params.resources[0] = cuda::DeviceResource{reinterpret_cast<std::uint8_t*>(const_cast<float*>(x)),
                                               count * sizeof(float)};
    params.resources[1] = cuda::DeviceResource{reinterpret_cast<std::uint8_t*>(y), count * sizeof(float)};
    params.args[0] = std::bit_cast<std::uint64_t>(alpha);
    raw_axpy<<<blocks, threads, 0, static_cast<cudaStream_t>(stream)>>>(params);
}

}  // namespace tandem::bench
