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

}  // namespace

int launch_raw_user_copy(void* stream, const void* from, void* to, std::uint64_t bytes,
                         std::uint32_t blocks, std::uint32_t threads) {
    raw_user_copy<<<blocks, threads, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const std::uint8_t*>(from), static_cast<std::uint8_t*>(to), bytes);
    return static_cast<int>(cudaGetLastError());
}

}  // namespace tandem::bench
