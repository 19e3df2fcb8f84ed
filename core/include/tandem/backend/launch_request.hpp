#pragma once

// A launch as a device receives it, and what a replay of a capture graph runs.

#include "tandem/core/error.hpp"
#include "tandem/core/external_work.hpp"
#include "tandem/core/ids.hpp"
#include "tandem/core/kernel.hpp"
#include "tandem/core/kernel_entry.hpp"
#include "tandem/core/kernel_resource.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tandem {

/// An injected kernel fault drawn for one launch (`FaultPlan::kernel_fault_due`): the code the
/// launch reports, and which of the device's injected faults it is, so that its report names it.
struct InjectedFault {
    /// The failure code the launch reports.
    std::uint32_t code = 0;
    /// The fault's number among those injected into the device, from 1 in the order
    /// `Client::inject` took them.
    std::uint32_t entry = 0;

    /// The failure a launch of `kernel` on `device`'s `stream` reports for it, without running
    /// (as a GPU would): `KernelFailed`, marked injected and naming the fault.
    [[nodiscard]] Error failure(std::string kernel, ServiceId device, StreamId stream) const;
};

/// A launch as a server receives it: bindings already checked against the device.
struct LaunchRequest {
    /// The kernel's name, as reports give it.
    std::string kernel;
    /// The kernel: set by a typed launch, or by the Server once it found `kernel` by name. Null
    /// for a name no one registered (refused, C10), and for external work.
    const KernelEntry* entry = nullptr;
    /// Set for work tandem did not write (`Client::enqueue`): what runs instead of a kernel.
    ExternalRef external;
    /// Blocks and threads.
    LaunchConfig config;
    /// What the kernel binds, in the order its parameters take them.
    std::vector<KernelResource> resources;
    /// Its scalar arguments.
    KernelArgs args;
    /// The stream it is enqueued on.
    StreamId stream;
    /// The injected kernel fault that hits this launch, or none: drawn by
    /// `Server::launch` from the device's `FaultPlan`, once for every launch the device takes, in
    /// program order, before the backend sees it. A backend reports it as the launch's failure
    /// without running the kernel, as a GPU would. A launch recorded in a capture window carries
    /// none: a replay draws again for each launch it runs.
    std::optional<InjectedFault> injected;
};

/// What a replay of a capture graph runs: the launches recorded, in enqueue order, and what the
/// backend built to replay them (a CUDA graph on GPUs; null where it replays the launches one by
/// one).
struct CapturedWork {
    /// The launches recorded, in enqueue order.
    std::vector<LaunchRequest> launches;
    /// The backend's own replay of them, or null.
    std::shared_ptr<void> native;
};

}  // namespace tandem
