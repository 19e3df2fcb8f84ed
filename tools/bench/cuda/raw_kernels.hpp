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
/// The same with the compact block most tandem launches now take (`CompactLaunchParams`).
void launch_raw_empty_with_compact_params(void* stream);
/// The catalog's copy kernel launched on raw pointers, without tandem: the same code a tandem
/// launch runs, with no binding resolution, scopes or status resolution around it.
void launch_raw_copy(void* stream, std::uint8_t* to, const std::uint8_t* from, std::uint64_t bytes,
                     std::uint32_t blocks, std::uint32_t threads);
/// A kernel that keeps the GPU busy for about `microseconds` on `stream`.
void launch_raw_spin(void* stream, std::uint64_t microseconds);
/// The catalog's axpy kernel (`y = alpha * x + y`, float) launched raw on `count` floats.
void launch_raw_axpy(void* stream, const float* x, float* y, std::uint64_t count, double alpha,
                     std::uint32_t blocks, std::uint32_t threads);
/// The user kernel's loop (user_kernel.hpp) as a raw kernel on two pointers, launched with the
/// chevron syntax; returns the launch's cudaError_t.
int launch_raw_user_copy(void* stream, const void* from, void* to, std::uint64_t bytes,
                         std::uint32_t blocks, std::uint32_t threads);
/// The same loop taking its arguments in a block the size of `LaunchParams`, the block a direct
/// tandem launch passes, launched with `cudaLaunchKernel` as tandem launches: what the block's
/// size and that call cost a raw launch.
int launch_raw_user_copy_full(void* stream, const void* from, void* to, std::uint64_t bytes,
                              std::uint32_t blocks, std::uint32_t threads);
/// The raw kernel launched through the driver (`cuLaunchKernel` on its function, looked up once),
/// without the runtime's call in between.
int launch_raw_user_copy_driver(void* stream, const void* from, void* to, std::uint64_t bytes,
                                std::uint32_t blocks, std::uint32_t threads);
/// The same loop taking its arguments in a block the size of `CompactLaunchParams`, the block
/// tandem's graph nodes take: what the size of the block alone costs a graph node.
int launch_raw_user_copy_padded(void* stream, const void* from, void* to, std::uint64_t bytes,
                                std::uint32_t blocks, std::uint32_t threads);

/// One cuBLAS handle and a square fp32 GEMM on it (`c = a b`, n x n, column-major), enqueued on
/// a given stream: the work of the GEMM comparison, called directly or through tandem.
class CublasGemm {
public:
    CublasGemm();
    ~CublasGemm();
    CublasGemm(const CublasGemm&) = delete;
    CublasGemm& operator=(const CublasGemm&) = delete;

    /// Whether the handle was created.
    [[nodiscard]] bool ok() const { return handle_ != nullptr; }
    /// Enqueues the GEMM on `stream` (a cudaStream_t); returns the cublasStatus_t.
    int run(void* stream, const float* a, const float* b, float* c, int n) const;

private:
    void* handle_ = nullptr;  // A cublasHandle_t, kept opaque for host code without cuBLAS.
};

}  // namespace tandem::bench
