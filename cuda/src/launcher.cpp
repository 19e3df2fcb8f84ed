// Finding a launch's kernel on the GPU: host code, so that nothing CUDA compiles instantiates a
// kernel for the host.

#include "launcher.hpp"

#include "tandem/core/host_kernels.hpp"

namespace tandem::cuda {

Launcher launcher_of(LaunchRequest& request) {
    if (request.entry == nullptr) {
        request.entry = find_kernel(request.kernel);
    }
    return launcher_of(request.entry);
}

Launcher launcher_of(const KernelEntry* entry) {
    return entry == nullptr ? nullptr : reinterpret_cast<Launcher>(device_launcher(*entry));
}

}  // namespace tandem::cuda
