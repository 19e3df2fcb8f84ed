// The CUDA side of the example's GEMM: one cuBLAS call on the stream tandem hands over.
#include "gemm.hpp"

#include <cublas_v2.h>

#include <memory>
#include <string>

std::function<tandem::Status(const tandem::DeviceWorkContext&)> cublas_gemm(GemmShape shape) {
    // One handle for every call of this work: creating one costs far more than a GEMM this size.
    auto handle = std::shared_ptr<cublasHandle_t>(new cublasHandle_t{}, [](cublasHandle_t* h) {
        if (*h != nullptr) {
            cublasDestroy(*h);
        }
        delete h;
    });
    return [shape, handle](const tandem::DeviceWorkContext& context) -> tandem::Status {
        if (*handle == nullptr && cublasCreate(handle.get()) != CUBLAS_STATUS_SUCCESS) {
            return tandem::Error::invalid_argument("cublasCreate failed");
        }
        cublasSetStream(*handle, static_cast<cudaStream_t>(context.stream));
        const float one = 1.0f;
        const float zero = 0.0f;
        // Row-major C = A B is column-major C^T = B^T A^T: swap the operands, no transposes.
        const cublasStatus_t status = cublasSgemm(
            *handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(shape.n), static_cast<int>(shape.m),
            static_cast<int>(shape.k), &one, context.pointer<const float>(1),
            static_cast<int>(shape.n), context.pointer<const float>(0), static_cast<int>(shape.k),
            &zero, context.pointer<float>(2), static_cast<int>(shape.n));
        if (status != CUBLAS_STATUS_SUCCESS) {
            return tandem::Error::invalid_argument("cublasSgemm failed: " +
                                                   std::string(cublasGetStatusString(status)));
        }
        return {};
    };
}
