#pragma once

// The catalog kernels as the simulator runs them: every thread of the launch in turn on the
// launch's fiber, with a point where the scheduler may switch after each block.

#include "kernel_context.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace tandem::sim {

using KernelRunner = void (*)(SimKernelContext& context, const LaunchConfig& config);

/// The runner of the kernel called `name`, or null.
KernelRunner find_kernel(std::string_view name);
std::vector<std::string> kernel_names();

}  // namespace tandem::sim
