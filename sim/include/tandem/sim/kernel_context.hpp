#pragma once

// What a kernel sees on the simulator: the host kernel context of core, every access checked.
// The names below keep the simulator's spelling of them.

#include "tandem/core/host_kernel_context.hpp"

namespace tandem::sim {

using tandem::BoundResource;
using tandem::KernelHost;
using SimFault = tandem::HostFault;
using SimKernelContext = tandem::HostKernelContext;
template <typename T>
using SimView = tandem::HostView<T>;
template <typename T>
using SimTiledView = tandem::HostTiledView<T>;

}  // namespace tandem::sim
