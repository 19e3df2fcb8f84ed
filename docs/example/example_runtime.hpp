// The runtime the examples run on: CUDA where the example was built with its CUDA units and a GPU
// is visible, the simulator otherwise, or what the first argument names (sim, reference, cuda).
#pragma once

#include <tandem/core/reference_runtime.hpp>
#include <tandem/sim/runtime.hpp>
#if TANDEM_HAS_CUDA_KERNELS
#include <tandem/cuda/runtime.hpp>
#endif

#include <cstdio>
#include <memory>
#include <string_view>

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
