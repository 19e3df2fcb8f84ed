// The GEMM of the external-work comparison: one cuBLAS call on a stream, the same call whether
// tandem hands over the stream and the pointers or the benchmark calls it directly.

#include "raw_kernels.hpp"

#include <cublas_v2.h>

namespace tandem::bench {

CublasGemm::CublasGemm() {
    cublasHandle_t handle = nullptr;
    if (cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS) {
        handle_ = handle;
    }
}

CublasGemm::~CublasGemm() {
    if (handle_ != nullptr) {
        cublasDestroy(static_cast<cublasHandle_t>(handle_));
    }
}

int CublasGemm::run(void* stream, const float* a, const float* b, float* c, int n) const {
    auto handle = static_cast<cublasHandle_t>(handle_);
    cublasSetStream(handle, static_cast<cudaStream_t>(stream));
    const float one = 1.0f;
    const float zero = 0.0f;
    return static_cast<int>(
        cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n));
}

}  // namespace tandem::bench
