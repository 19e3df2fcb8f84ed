// The CUDA registration unit of the suite's own kernels (tandem_add_kernels).
#include "user_kernels.hpp"

#include "tandem/cuda/kernel_registration.cuh"

TANDEM_REGISTER_CUDA_KERNEL(tandem::conformance::AddByte);
TANDEM_REGISTER_CUDA_KERNEL(tandem::conformance::FailOnNonzero);

#include <cuda_runtime.h>

#include <algorithm>

namespace tandem::conformance {

std::function<Status(const DeviceWorkContext&)> device_fill(std::uint8_t value) {
    return [value](const DeviceWorkContext& context) -> Status {
        cudaMemsetAsync(context.pointers[0], value, context.sizes[0],
                        static_cast<cudaStream_t>(context.stream));
        return {};
    };
}

std::function<Status(const DeviceWorkContext&)> device_copy() {
    return [](const DeviceWorkContext& context) -> Status {
        cudaMemcpyAsync(context.pointers[1], context.pointers[0],
                        std::min(context.sizes[0], context.sizes[1]), cudaMemcpyDeviceToDevice,
                        static_cast<cudaStream_t>(context.stream));
        return {};
    };
}

namespace {

__global__ void add_one_to_each_byte(std::uint8_t* bytes, std::uint64_t count) {
    const std::uint64_t index = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
    if (index < count) {
        bytes[index] = static_cast<std::uint8_t>(bytes[index] + 1);
    }
}

}  // namespace

std::function<Status(const DeviceWorkContext&)> device_add_one() {
    return [](const DeviceWorkContext& context) -> Status {
        constexpr unsigned threads = 256;
        const auto blocks = static_cast<unsigned>((context.sizes[0] + threads - 1) / threads);
        add_one_to_each_byte<<<blocks, threads, 0, static_cast<cudaStream_t>(context.stream)>>>(
            static_cast<std::uint8_t*>(context.pointers[0]), context.sizes[0]);
        return {};
    };
}

}  // namespace tandem::conformance

namespace tandem::conformance {
namespace {

/// The GPU's global timer, in nanoseconds.
__device__ std::uint64_t now_ns() {
    std::uint64_t ns = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    return ns;
}

/// Spins until the host sets `*flag`, reading it from mapped host memory each time, or until
/// `Gate::give_up_after` has passed: a test whose call waited for the gate then fails on what it
/// finds complete instead of hanging.
__global__ void wait_for_the_host(const volatile int* flag, std::uint64_t give_up_ns) {
    const std::uint64_t until = now_ns() + give_up_ns;
    while (*flag == 0 && now_ns() < until) {
        __nanosleep(1000);
    }
}

}  // namespace

DeviceGate device_gate() {
    // Never freed: a kernel may still be reading it when a test ends by a failed assertion.
    void* mapped = nullptr;
    if (cudaHostAlloc(&mapped, sizeof(int), cudaHostAllocMapped) != cudaSuccess) {
        return {};
    }
    auto* flag = static_cast<volatile int*>(mapped);
    *flag = 0;
    return {flag, [flag](const DeviceWorkContext& context) -> Status {
                void* on_device = nullptr;
                if (cudaHostGetDevicePointer(&on_device, const_cast<int*>(flag), 0) !=
                    cudaSuccess) {
                    return Error::invalid_argument("the gate's flag has no device address");
                }
                wait_for_the_host<<<1, 1, 0, static_cast<cudaStream_t>(context.stream)>>>(
                    static_cast<const volatile int*>(on_device), gate_gives_up_after_ns);
                return {};
            }};
}

void* device_malloc(std::uint64_t size_bytes) {
    void* pointer = nullptr;
    return cudaMalloc(&pointer, size_bytes) == cudaSuccess ? pointer : nullptr;
}

void device_free(void* pointer) { cudaFree(pointer); }

void device_to_host(void* to, const void* from, std::uint64_t size_bytes) {
    cudaMemcpy(to, from, size_bytes, cudaMemcpyDeviceToHost);
}

}  // namespace tandem::conformance
