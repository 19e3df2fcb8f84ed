// The user kernel's CUDA registration unit, and the same loop as a raw kernel on two pointers:
// what a program launches without tandem.

#include "raw_kernels.hpp"
#include "user_kernel.hpp"

#include "tandem/cuda/kernel_registration.cuh"

#include <cuda_runtime.h>

TANDEM_REGISTER_CUDA_KERNEL(tandem::bench::UserCopy);

namespace tandem::bench {
namespace {

__global__ void raw_user_copy(const std::uint8_t* from, std::uint8_t* to, std::uint64_t bytes) {
    const std::uint64_t threads = std::uint64_t{gridDim.x} * blockDim.x;
    for (std::uint64_t i = std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < bytes;
         i += threads) {
        to[i] = from[i];
    }
}

/// The raw kernel's arguments padded to the size of the block tandem's graph nodes take.
struct PaddedCopyArguments {
    const std::uint8_t* from;
    std::uint8_t* to;
    std::uint64_t bytes;
    std::uint8_t padding[sizeof(cuda::CompactLaunchParams) - 3 * sizeof(std::uint64_t)];
};
static_assert(sizeof(PaddedCopyArguments) == sizeof(cuda::CompactLaunchParams));

__global__ void raw_user_copy_padded(const __grid_constant__ PaddedCopyArguments arguments) {
    const std::uint64_t threads = std::uint64_t{gridDim.x} * blockDim.x;
    for (std::uint64_t i = std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
         i < arguments.bytes; i += threads) {
        arguments.to[i] = arguments.from[i];
    }
}

}  // namespace

int launch_raw_user_copy_padded(void* stream, const void* from, void* to, std::uint64_t bytes,
                                std::uint32_t blocks, std::uint32_t threads) {
    PaddedCopyArguments arguments{static_cast<const std::uint8_t*>(from),
                                  static_cast<std::uint8_t*>(to), bytes, {}};
    raw_user_copy_padded<<<blocks, threads, 0, static_cast<cudaStream_t>(stream)>>>(arguments);
    return static_cast<int>(cudaGetLastError());
}

int launch_raw_user_copy(void* stream, const void* from, void* to, std::uint64_t bytes,
                         std::uint32_t blocks, std::uint32_t threads) {
    raw_user_copy<<<blocks, threads, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const std::uint8_t*>(from), static_cast<std::uint8_t*>(to), bytes);
    return static_cast<int>(cudaGetLastError());
}

}  // namespace tandem::bench
