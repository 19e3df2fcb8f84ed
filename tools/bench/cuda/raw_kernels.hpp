#pragma once

// Plain CUDA, for side-by-side comparisons with the same work through tandem.

#include "tandem/cuda/launch_params.hpp"

#include <cstdint>

namespace tandem::bench {

/// An empty kernel launched raw: <<<1, 1>>> on `stream`.
void launch_raw_empty(void* stream);
/// An empty kernel that takes tandem's parameter block by value, launched raw: what the size of
/// that block alone costs a launch.
void launch_raw_empty_with_params(void* stream);
/// The catalog's copy kernel launched on raw pointers, without tandem: the same code a tandem
/// launch runs, with no binding resolution, scopes or status resolution around it.
void launch_raw_copy(void* stream, std::uint8_t* to, const std::uint8_t* from, std::uint64_t bytes,
                     std::uint32_t blocks, std::uint32_t threads);
/// A kernel that keeps the GPU busy for about `microseconds` on `stream`.
void launch_raw_spin(void* stream, std::uint64_t microseconds);
/// The catalog's axpy kernel (`y = alpha * x + y`, float) launched raw on `count` floats.
void launch_raw_axpy(void* stream, const float* x, float* y, std::uint64_t count, double alpha,
                     std::uint32_t blocks, std::uint32_t threads);

}  // namespace tandem::bench
