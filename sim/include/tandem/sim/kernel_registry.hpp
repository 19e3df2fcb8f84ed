#pragma once

// The kernels the simulator runs: core's host kernels, registered once for every host backend.

#include "tandem/core/host_kernels.hpp"
#include "tandem/sim/kernel_context.hpp"

namespace tandem::sim {

using tandem::find_kernel;
using tandem::kernel_names;
using tandem::KernelRunner;
using tandem::register_kernel;
using tandem::run_kernel;

}  // namespace tandem::sim
