#pragma once

// Kernels as a host backend runs them (the simulator, the reference backend): every thread of
// the launch in turn, with a point where a scheduler may switch after each block. The core
// catalog is always registered; programs and tests add their own single-source kernels with
// `register_kernel`, for every host backend of the process.

#include "tandem/core/host_kernel_context.hpp"
#include "tandem/core/result.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace tandem {

using KernelRunner = void (*)(HostKernelContext& context, const LaunchConfig& config);

/// Runs every thread of a launch of `Kernel`, yielding between blocks.
template <typename Kernel>
void run_kernel(HostKernelContext& context, const LaunchConfig& config) {
    const Kernel kernel{};
    const std::uint64_t block = config.block.count();
    const std::uint64_t threads = config.thread_count();  // A whole number of blocks.
    // Block by block rather than a division per thread to find the block's end: a 64-bit
    // division costs tens of cycles, which was most of an empty kernel's time.
    for (std::uint64_t first = 0; first < threads; first += block) {
        if (first != 0) {
            context.host().yield();
        }
        for (std::uint64_t thread = first; thread < first + block; ++thread) {
            context.set_thread(thread);
            kernel(context);
        }
    }
}

/// The runner of the kernel called `name`, or null.
KernelRunner find_kernel(std::string_view name);
std::vector<std::string> kernel_names();

/// Registers `runner` as `name` for every host backend's runtime of this process.
/// `InvalidArgument` when the name is empty or already registered.
Status register_kernel(std::string name, KernelRunner runner);

template <typename Kernel>
Status register_kernel() {
    return register_kernel(Kernel::name, &run_kernel<Kernel>);
}

}  // namespace tandem
