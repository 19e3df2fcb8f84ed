#pragma once

// What a kernel sees on the simulator: the host kernel context of core, every access checked.
// The names below keep the simulator's spelling of them.

#include "tandem/core/host_kernel_context.hpp"

namespace tandem::sim {

using tandem::BoundResource;
using tandem::KernelHost;
/// The sticky fault a kernel raises on the simulator (`HostFault`).
using SimFault = tandem::HostFault;
/// What a kernel sees on the simulator (`HostKernelContext`).
using SimKernelContext = tandem::HostKernelContext;
/// A checked view of a buffer on the simulator (`HostView`).
template <typename T>
using SimView = tandem::HostView<T>;
/// A checked tiled view of a tensor map on the simulator (`HostTiledView`).
template <typename T>
using SimTiledView = tandem::HostTiledView<T>;

}  // namespace tandem::sim
