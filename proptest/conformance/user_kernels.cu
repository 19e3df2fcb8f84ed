// The CUDA registration unit of the suite's own kernels (tandem_add_kernels).
#include "user_kernels.hpp"

#include "tandem/cuda/kernel_registration.cuh"

TANDEM_REGISTER_CUDA_KERNEL(tandem::conformance::AddByte);
TANDEM_REGISTER_CUDA_KERNEL(tandem::conformance::FailOnNonzero);

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

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

/// `cuStreamWaitValue32`, found through the runtime (no link to the driver library), or null.
using WaitValue32 = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
WaitValue32 wait_value32() {
    static const WaitValue32 found = [] {
        void* entry = nullptr;
        cudaDriverEntryPointQueryResult result{};
        if (cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", &entry, 12000,
                                             cudaEnableDefault, &result) != cudaSuccess ||
            result != cudaDriverEntryPointSuccess) {
            (void)cudaGetLastError();
            return WaitValue32{nullptr};
        }
        return reinterpret_cast<WaitValue32>(entry);
    }();
    return found;
}

}  // namespace

DeviceGate device_gate() {
    // Never freed: the stream may still be waiting on it when a test ends by a failed assertion.
    void* mapped = nullptr;
    if (cudaHostAlloc(&mapped, sizeof(int), cudaHostAllocMapped) != cudaSuccess) {
        return {};
    }
    auto* flag = static_cast<volatile int*>(mapped);
    *flag = 0;
    // A wait of the stream itself, not a kernel: a tool that runs kernels one at a time
    // (compute-sanitizer) still runs the other streams' kernels meanwhile.
    return {flag, [flag](const DeviceWorkContext& context) -> Status {
                void* on_device = nullptr;
                const WaitValue32 wait = wait_value32();
                if (wait == nullptr ||
                    cudaHostGetDevicePointer(&on_device, const_cast<int*>(flag), 0) !=
                        cudaSuccess) {
                    return Error::invalid_argument("no stream wait on the gate's flag here");
                }
                const CUresult waited =
                    wait(static_cast<CUstream>(context.stream),
                         reinterpret_cast<CUdeviceptr>(on_device), 1, CU_STREAM_WAIT_VALUE_GEQ);
                if (waited != CUDA_SUCCESS) {
                    return Error::invalid_argument("cuStreamWaitValue32 failed: " +
                                                   std::to_string(static_cast<int>(waited)));
                }
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
