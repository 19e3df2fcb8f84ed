#include "driver_entry_point.hpp"

#include <cuda_runtime.h>

namespace tandem::cuda {

void* driver_entry_point(const char* name, unsigned int version) {
    void* entry = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion(name, &entry, version, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
        (void)cudaGetLastError();  // Reported as null: do not leave it for an unrelated call.
        return nullptr;
    }
    return entry;
}

}  // namespace tandem::cuda
