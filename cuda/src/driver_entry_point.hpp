#pragma once

// Driver functions found through the runtime's entry points, so the backend needs no link
// against the driver library and runs on any driver that provides them.

namespace tandem::cuda {

/// The driver's function `name` of ABI `version` (as `cudaGetDriverEntryPointByVersion` takes it,
/// 12000 for 12.0); null when the driver does not provide it. Look it up once and keep it: the
/// look-up is not meant for hot paths.
void* driver_entry_point(const char* name, unsigned int version);

/// `driver_entry_point` as the function pointer type `Function` (a `PFN_...` of cudaTypedefs.h).
template <typename Function>
Function driver_function(const char* name, unsigned int version) {
    return reinterpret_cast<Function>(driver_entry_point(name, version));
}

}  // namespace tandem::cuda
