// The CUDA registration unit of the suite's own kernels (tandem_add_kernels).
#include "user_kernels.hpp"

#include "tandem/cuda/kernel_registration.cuh"

TANDEM_REGISTER_CUDA_KERNEL(tandem::conformance::AddByte);

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

}  // namespace tandem::conformance
