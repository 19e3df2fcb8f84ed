// The user kernel's CUDA registration unit, and the same loop as a raw kernel on two pointers:
// what a program launches without tandem.

#include "raw_kernels.hpp"
#include "user_kernel.hpp"

#include "tandem/cuda/kernel_registration.cuh"

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstddef>

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

/// The raw kernel's arguments padded to `Bytes`, the size of a block tandem passes: what the
/// block's size alone costs a launch.
template <std::size_t Bytes>
struct PaddedCopyArguments {
    const std::uint8_t* from;
    std::uint8_t* to;
    std::uint64_t bytes;
    std::uint8_t padding[Bytes - 3 * sizeof(std::uint64_t)];
};
/// The block tandem's graph nodes take, and the one a direct tandem launch passes.
using CompactCopyArguments = PaddedCopyArguments<sizeof(cuda::CompactLaunchParams)>;
using FullCopyArguments = PaddedCopyArguments<sizeof(cuda::LaunchParams)>;
static_assert(sizeof(CompactCopyArguments) == sizeof(cuda::CompactLaunchParams));
static_assert(sizeof(FullCopyArguments) == sizeof(cuda::LaunchParams));

template <typename Arguments>
__global__ void raw_user_copy_padded(const __grid_constant__ Arguments arguments) {
    const std::uint64_t threads = std::uint64_t{gridDim.x} * blockDim.x;
    for (std::uint64_t i = std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
         i < arguments.bytes; i += threads) {
        arguments.to[i] = arguments.from[i];
    }
}

}  // namespace

int launch_raw_user_copy_full(void* stream, const void* from, void* to, std::uint64_t bytes,
                              std::uint32_t blocks, std::uint32_t threads) {
    FullCopyArguments arguments{
        static_cast<const std::uint8_t*>(from), static_cast<std::uint8_t*>(to), bytes, {}};
    void* parameters[] = {&arguments};
    return static_cast<int>(cudaLaunchKernel(
        reinterpret_cast<const void*>(&raw_user_copy_padded<FullCopyArguments>), dim3(blocks),
        dim3(threads), parameters, 0, static_cast<cudaStream_t>(stream)));
}

int launch_raw_user_copy_driver(void* stream, const void* from, void* to, std::uint64_t bytes,
                                std::uint32_t blocks, std::uint32_t threads) {
    // Device 0's function, looked up once: the bench launches on GPU 0 only.
    static const CUfunction function = [] {
        cudaFunction_t found = nullptr;
        cudaGetFuncBySymbol(&found, reinterpret_cast<const void*>(&raw_user_copy));
        return reinterpret_cast<CUfunction>(found);
    }();
    const auto* source = static_cast<const std::uint8_t*>(from);
    auto* target = static_cast<std::uint8_t*>(to);
    void* parameters[] = {&source, &target, &bytes};
    return static_cast<int>(
        cuda::detail::driver_launch_function()(function, blocks, 1, 1, threads, 1, 1, 0,
                                               static_cast<CUstream>(stream), parameters, nullptr));
}

int launch_raw_user_copy_padded(void* stream, const void* from, void* to, std::uint64_t bytes,
                                std::uint32_t blocks, std::uint32_t threads) {
    CompactCopyArguments arguments{
        static_cast<const std::uint8_t*>(from), static_cast<std::uint8_t*>(to), bytes, {}};
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
