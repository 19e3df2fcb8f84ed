#pragma once

// The catalog kernels compiled for the GPU, found by name. Host code calls through this header
// without seeing any CUDA syntax.

#include "tandem/cuda/launch_params.hpp"

#include <string_view>

namespace tandem::cuda {

/// Enqueues one launch on `stream` (a cudaStream_t); returns the cudaError_t of the launch. The
/// kernel receives `params` whole if it reads tensor maps, and its `LaunchParams` part otherwise.
using Launcher = int (*)(const LaunchConfig& config, void* stream,
                         const TensorLaunchParams& params);

/// The launcher of the catalog kernel called `name`, or null.
Launcher find_launcher(std::string_view name);

/// Enqueues a kernel that spins for `microseconds` on `stream`: how a stream delay is injected.
int launch_delay(void* stream, std::uint64_t microseconds);

}  // namespace tandem::cuda
