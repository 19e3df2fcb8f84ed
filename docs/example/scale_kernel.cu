// The CUDA registration unit of the program's kernels: compiled only where the CUDA toolkit and
// tandem's cuda component exist (tandem_add_kernels in CMakeLists.txt).
#include "scale_kernel.hpp"

#include <tandem/cuda/kernel_registration.cuh>

TANDEM_REGISTER_CUDA_KERNEL(Scale);
