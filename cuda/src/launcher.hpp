#pragma once

// How the CUDA device finds a launch's kernel on the GPU. Host code calls through this header
// without seeing any CUDA syntax.

#include "tandem/backend/server.hpp"
#include "tandem/cuda/launch_params.hpp"

namespace tandem::cuda {

/// Makes every catalog kernel launchable on CUDA (once per process; cheap after).
void register_catalog_launchers();

/// The launcher of `request`'s kernel, found once by name for a launch by name (and kept in
/// `request.entry`); null for a kernel no one registered or with no CUDA build.
Launcher launcher_of(LaunchRequest& request);
/// The launcher of `entry`'s kernel; null for a null entry or one with no CUDA build.
Launcher launcher_of(const KernelEntry* entry);

/// The kernel a plain replay runs after its graph (`CudaGraph`): it takes the graph's status
/// word, a replay's status slot and that slot's host copy (or null), copies the word into both
/// and clears it.
const void* publish_replay_kernel();

/// Enqueues a kernel that spins for `microseconds` on `stream`: how a stream delay is injected.
int launch_delay(void* stream, std::uint64_t microseconds);

/// Loads every kernel a device may launch (the catalog's, the program's registered ones, and
/// the backend's own) into the current context, so that no first launch loads one while other
/// kernels run: loading waits for them, and a kernel waiting for a kernel not yet loaded (a
/// handoff between streams or devices of one GPU) would wait for ever. Returns the first error,
/// as a cudaError_t.
int load_kernels();

}  // namespace tandem::cuda
