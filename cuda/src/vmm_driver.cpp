#include "vmm_driver.hpp"

#include "driver_entry_point.hpp"

namespace tandem::cuda {
namespace {

/// Looks every function up; the table is whole or the result is false.
bool find_all(VmmDriver& driver) {
    const auto find = [](auto& slot, const char* name, unsigned int version) {
        slot = driver_function<std::remove_reference_t<decltype(slot)>>(name, version);
        return slot != nullptr;
    };
    // Every lookup is made, so that a missing one does not hide another in a report.
    bool found = find(driver.device_get, "cuDeviceGet", 2000);
    found = find(driver.device_attribute, "cuDeviceGetAttribute", 2000) && found;
    found = find(driver.granularity, "cuMemGetAllocationGranularity", 10020) && found;
    found = find(driver.create, "cuMemCreate", 10020) && found;
    found = find(driver.release, "cuMemRelease", 10020) && found;
    found = find(driver.address_reserve, "cuMemAddressReserve", 10020) && found;
    found = find(driver.address_free, "cuMemAddressFree", 10020) && found;
    found = find(driver.map, "cuMemMap", 10020) && found;
    found = find(driver.unmap, "cuMemUnmap", 10020) && found;
    found = find(driver.set_access, "cuMemSetAccess", 10020) && found;
    found = find(driver.export_handle, "cuMemExportToShareableHandle", 10020) && found;
    found = find(driver.import_handle, "cuMemImportFromShareableHandle", 10020) && found;
    found = find(driver.error_name, "cuGetErrorName", 6000) && found;
    found = find(driver.error_string, "cuGetErrorString", 6000) && found;
    return found;
}

}  // namespace

const VmmDriver* VmmDriver::get() {
    static const VmmDriver* const found = [] {
        static VmmDriver driver;
        return find_all(driver) ? &driver : nullptr;
    }();
    return found;
}

std::string VmmDriver::error_text(CUresult result) const {
    const char* name = nullptr;
    const char* text = nullptr;
    if (error_name(result, &name) != CUDA_SUCCESS || name == nullptr) {
        return "CUDA driver error " + std::to_string(static_cast<int>(result));
    }
    if (error_string(result, &text) != CUDA_SUCCESS || text == nullptr) {
        return name;
    }
    return std::string(name) + ": " + text;
}

CUmemAllocationProp exportable_memory_on(CUdevice device) {
    CUmemAllocationProp properties{};
    properties.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    properties.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    properties.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    properties.location.id = device;
    return properties;
}

CUmemAccessDesc read_write_access(CUdevice device) {
    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = device;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return access;
}

}  // namespace tandem::cuda
