// The CUDA registration unit of the suite's own kernels (tandem_add_kernels).
#include "user_kernels.hpp"

#include "tandem/cuda/kernel_registration.cuh"

TANDEM_REGISTER_CUDA_KERNEL(tandem::conformance::AddByte);
