#pragma once

// The driver's virtual memory management, which the CUDA backend's storage reserves regions with
// so that another process can map them (phase 2 of docs/DESIGN.md: jobs). The runtime API has no
// such calls; the functions come through the runtime's driver entry points
// (driver_entry_point.hpp), looked up once a process, so the backend still links no driver
// library and runs on a driver without them (its storage then falls back to cudaMalloc).

#include <cuda.h>
#include <cudaTypedefs.h>

#include <string>

namespace tandem::cuda {

/// The driver functions a storage of exportable memory and an importer of other processes'
/// memory call: each at the ABI version its type names.
struct VmmDriver {
    PFN_cuDeviceGet_v2000 device_get = nullptr;
    PFN_cuDeviceGetAttribute_v2000 device_attribute = nullptr;
    PFN_cuMemGetAllocationGranularity_v10020 granularity = nullptr;
    PFN_cuMemCreate_v10020 create = nullptr;
    PFN_cuMemRelease_v10020 release = nullptr;
    PFN_cuMemAddressReserve_v10020 address_reserve = nullptr;
    PFN_cuMemAddressFree_v10020 address_free = nullptr;
    PFN_cuMemMap_v10020 map = nullptr;
    PFN_cuMemUnmap_v10020 unmap = nullptr;
    PFN_cuMemSetAccess_v10020 set_access = nullptr;
    PFN_cuMemExportToShareableHandle_v10020 export_handle = nullptr;
    PFN_cuMemImportFromShareableHandle_v10020 import_handle = nullptr;
    PFN_cuGetErrorName_v6000 error_name = nullptr;
    PFN_cuGetErrorString_v6000 error_string = nullptr;

    /// The functions, found on the first call; null when the driver lacks any of them (or there
    /// is no driver): the caller then has no exportable memory.
    static const VmmDriver* get();
    /// "CUDA_ERROR_OUT_OF_MEMORY: out of memory": a driver result in words.
    [[nodiscard]] std::string error_text(CUresult result) const;
};

/// The properties of pinned device memory on `device` that exports to a POSIX file descriptor:
/// what `cuMemCreate` takes and what the granularity is asked of.
CUmemAllocationProp exportable_memory_on(CUdevice device);

/// Read and write access for `device`, as `cuMemSetAccess` takes it.
CUmemAccessDesc read_write_access(CUdevice device);

}  // namespace tandem::cuda
