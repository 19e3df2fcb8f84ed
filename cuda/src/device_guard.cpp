#include "device_guard.hpp"

#include "driver_entry_point.hpp"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <array>
#include <atomic>

namespace tandem::cuda {

namespace {

/// Devices whose contexts are remembered; a device past them always asks the runtime.
constexpr int remembered_devices = 64;

/// For each device, a context that was current on some thread while the runtime said the device
/// was current. A context belongs to one device for its whole life, so finding it current again
/// means the device is current. (Were it destroyed and its handle reused for a context of
/// another device, the guard would skip a switch it needs; tandem never destroys contexts.)
std::array<std::atomic<CUcontext>, remembered_devices> seen_current{};

/// The driver's `cuCtxGetCurrent`, looked up once; null when the driver does not provide it.
PFN_cuCtxGetCurrent_v4000 current_context_function() {
    static const auto function =
        driver_function<PFN_cuCtxGetCurrent_v4000>("cuCtxGetCurrent", 4000);
    return function;
}

/// The calling thread's current context, or null when none is or the driver cannot say.
CUcontext current_context() {
    const PFN_cuCtxGetCurrent_v4000 get = current_context_function();
    CUcontext context = nullptr;
    if (get == nullptr || get(&context) != CUDA_SUCCESS) {
        return nullptr;
    }
    return context;
}

bool remembered(int ordinal) { return ordinal >= 0 && ordinal < remembered_devices; }

}  // namespace

DeviceGuard::DeviceGuard(int ordinal) {
    if (remembered(ordinal)) {
        const CUcontext current = current_context();
        if (current != nullptr &&
            current == seen_current[ordinal].load(std::memory_order_relaxed)) {
            context_ = current;
            return;
        }
    }
    int previous = -1;
    cudaGetDevice(&previous);
    if (previous != ordinal) {
        cudaSetDevice(ordinal);
        previous_ = previous;
    }
    const CUcontext current = current_context();
    context_ = current;
    if (remembered(ordinal)) {
        seen_current[ordinal].store(current, std::memory_order_relaxed);
    }
}

DeviceGuard::~DeviceGuard() {
    if (previous_ >= 0) {
        cudaSetDevice(previous_);
    }
}

}  // namespace tandem::cuda
