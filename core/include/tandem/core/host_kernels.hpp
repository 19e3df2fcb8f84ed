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

/// What a host backend calls to run a launch of one kernel: every thread of `config` on `context`.
using KernelRunner = void (*)(HostKernelContext& context, const LaunchConfig& config);

/// Runs every thread of a launch of `Kernel`, yielding between blocks.
template <typename Kernel>
void run_kernel(HostKernelContext& context, const LaunchConfig& config) {
    const Kernel kernel{};
    const std::uint64_t block = config.block.count();
    const std::uint64_t threads = config.thread_count();
    for (std::uint64_t thread = 0; thread < threads; ++thread) {
        context.set_thread(thread);
        kernel(context);
        if ((thread + 1) % block == 0 && thread + 1 < threads) {
            context.host().yield();
        }
    }
}

/// The runner of the kernel called `name`, or null.
KernelRunner find_kernel(std::string_view name);
/// The names of every registered kernel, the catalog's and those added with `register_kernel`.
std::vector<std::string> kernel_names();

/// Registers `runner` as `name` for every host backend's runtime of this process.
/// `InvalidArgument` when the name is empty or already registered.
Status register_kernel(std::string name, KernelRunner runner);

template <typename Kernel>
/// Registers `Kernel` (a functor type with a `name`) for every host backend of the process;
/// `InvalidArgument` when its name is empty or already registered.
Status register_kernel() {
    return register_kernel(Kernel::name, &run_kernel<Kernel>);
}

}  // namespace tandem
