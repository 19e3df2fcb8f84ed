#pragma once

// Which GPU the calling thread works on. CUDA runtime calls act on the thread's current device,
// and a launch into a stream of another device fails, so every call that reaches a device first
// makes it current, and makes the previous one current again afterwards.
//
// Nearly always the device is current already. Asking the runtime (`cudaGetDevice`) costs about
// 32 ns on the H200 hosts, 1 percent of a launch; the guard asks the driver for the thread's
// current context instead and compares it with the contexts it saw current on each device.

namespace tandem::cuda {

/// Makes `ordinal` the calling thread's current device for a scope.
class DeviceGuard {
public:
    explicit DeviceGuard(int ordinal);
    ~DeviceGuard();
    DeviceGuard(const DeviceGuard&) = delete;
    DeviceGuard& operator=(const DeviceGuard&) = delete;

    /// The driver context current in the scope (a `CUcontext`), or null when the driver did
    /// not say: what a launcher needs to find its kernel's function without asking again.
    [[nodiscard]] void* context() const { return context_; }

private:
    void* context_ = nullptr;
    /// The device current before, to make current again; -1 when it was `ordinal` already.
    int previous_ = -1;
};

}  // namespace tandem::cuda
