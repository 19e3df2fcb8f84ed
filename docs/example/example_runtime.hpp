// What the examples share: the runtime they run on (CUDA where the example was built with its
// CUDA units and a GPU is visible, the simulator otherwise, or what the first argument names:
// sim, reference, cuda), and floats as the bytes a write takes. An example asked for CUDA where
// there is none exits with `skipped_exit_code`, which ctest counts as skipped.
#pragma once

#include <tandem/core/reference_runtime.hpp>
#include <tandem/sim/runtime.hpp>
#if TANDEM_HAS_CUDA_KERNELS
#include <tandem/cuda/runtime.hpp>
#endif

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

/// The exit code of an example that cannot run where it is (no GPU, no CUDA units).
inline constexpr int skipped_exit_code = 77;

/// The runtime `wanted` names, or null after saying why there is none.
inline std::shared_ptr<tandem::Runtime> open_runtime(std::string_view wanted) {
    using namespace tandem;
#if TANDEM_HAS_CUDA_KERNELS
    if (wanted == "cuda" || wanted.empty()) {
        auto gpu = cuda::CudaRuntime::create({.devices = 1});
        if (gpu && (*gpu)->device_count() > 0) {
            return *gpu;
        }
        if (wanted == "cuda") {
            std::printf("no GPU: %s\n", gpu ? "none visible" : gpu.error().report().c_str());
            return nullptr;
        }
    }
#endif
    if (wanted == "cuda") {
        std::puts("built without its CUDA units");
        return nullptr;
    }
    if (wanted == "reference") {
        return *reference::ReferenceRuntime::create({.devices = 1});
    }
    return *sim::SimRuntime::create({.devices = 1});
}

/// The bytes of `values`, as a write takes them.
inline std::vector<std::byte> as_bytes(const std::vector<float>& values) {
    std::vector<std::byte> bytes(values.size() * sizeof(float));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return bytes;
}
