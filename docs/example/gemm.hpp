// C = A * B over row-major float32 matrices, as external work: cuBLAS on CUDA, a plain host loop
// on the simulator and the reference backend, one declaration of what it reads and writes.
#pragma once

#include <tandem/core/external_work.hpp>

#include <cstdint>
#include <functional>

struct GemmShape {
    std::uint32_t m = 0;  // Rows of A and C.
    std::uint32_t n = 0;  // Columns of B and C.
    std::uint32_t k = 0;  // Columns of A, rows of B.
};

/// The cuBLAS implementation (gemm_cublas.cu): arguments A, B (read) and C (write).
std::function<tandem::Status(const tandem::DeviceWorkContext&)> cublas_gemm(GemmShape shape);
