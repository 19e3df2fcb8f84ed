#pragma once

// One kernel as every backend of the process knows it: its name, for scenarios, the tool and
// reports, and how each backend runs it. There is one entry per kernel type
// (`kernel_entry<Kernel>`, in host_kernels.hpp), shared by every launch of it: a typed launch
// (`Client::launch<Kernel>`) carries a pointer to it, so nothing is looked up by name on its way.
//
// A kernel is a functor written once for every backend, as the catalog's are
// (kernels/catalog.hpp): a `static constexpr const char* name` and a
// `template <typename Context> TANDEM_HOST_DEVICE void operator()(Context&) const`. What a
// backend must know of it is declared on the functor itself:
//   `static constexpr bool reads_tensor_maps = true;`  it views buffers through tensor maps, so
//                                                      the CUDA backend passes them whole.

#include <atomic>
#include <string_view>
#include <type_traits>
#include <vector>

namespace tandem {

class HostKernelContext;
struct LaunchConfig;

/// How a host backend (the simulator, the reference backend) runs every thread of a launch.
using KernelRunner = void (*)(HostKernelContext& context, const LaunchConfig& config);
/// How the CUDA backend enqueues a launch of the kernel, as an untyped pointer (the CUDA
/// backend knows its type; host code never calls it).
using DeviceLauncher = void (*)();

/// One kernel of the process: its name and how each backend runs it.
struct KernelEntry {
    /// The kernel's name; unique among the registered kernels of the process.
    const char* name = nullptr;
    /// Runs it on a host backend; null for a kernel with no host build.
    KernelRunner host = nullptr;
    /// Enqueues it on a GPU, once known: a CUDA registration unit of the kernel
    /// (`TANDEM_REGISTER_CUDA_KERNEL`, tandem/cuda/kernel_registration.cuh) sets it by name, and
    /// the first CUDA launch of the entry keeps it here (`device_launcher`).
    mutable std::atomic<DeviceLauncher> cuda{nullptr};
};

/// Sets how the CUDA backend launches the kernel called `name` (what a CUDA registration unit
/// does, by name, so that it never instantiates a kernel for the host).
void set_device_launcher(std::string_view name, DeviceLauncher launcher);
/// How the CUDA backend launches `entry`'s kernel, or null when no registration unit of it is
/// linked in. Found by name the first time, then kept in the entry: one load after that.
DeviceLauncher device_launcher(const KernelEntry& entry);
/// Every CUDA launcher registration units have set so far, in the order they were first set.
std::vector<DeviceLauncher> device_launchers();

/// Whether `Kernel` views buffers through tensor maps (declared on the functor).
template <typename Kernel>
constexpr bool reads_tensor_maps() {
    if constexpr (requires { Kernel::reads_tensor_maps; }) {
        return Kernel::reads_tensor_maps;
    } else {
        return false;
    }
}

}  // namespace tandem

/// Pastes two tokens, after expanding them (for the names registration macros define).
#define TANDEM_DETAIL_CONCAT2(a, b) a##b
#define TANDEM_DETAIL_CONCAT(a, b) TANDEM_DETAIL_CONCAT2(a, b)
