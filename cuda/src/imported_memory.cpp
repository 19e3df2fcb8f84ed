#include "imported_memory.hpp"

#include "device_guard.hpp"
#include "vmm_driver.hpp"

#include "tandem/backend/held_ranges.hpp"

#include <unistd.h>

#include <algorithm>
#include <string>

namespace tandem::cuda {

ImportedMemory::~ImportedMemory() {
    const VmmDriver* driver = VmmDriver::get();
    const std::vector<ImportedMapping> mapped = mappings_.take_all();
    if (driver == nullptr || mapped.empty()) {
        return;
    }
    DeviceGuard guard(unmap_ordinal_);
    for (const ImportedMapping& mapping : mapped) {
        HeldRanges::process().release(mapping.local_address);
        driver->unmap(mapping.local_address, mapping.size_bytes);
        driver->address_free(mapping.local_address, mapping.size_bytes);
    }
}

Status ImportedMemory::import(const ExportedRegion& region, std::span<const int> ordinals) {
    std::lock_guard lock(import_mutex_);
    const VmmDriver* driver = VmmDriver::get();
    const auto refused = [&](const std::string& why) -> Status {
        if (region.descriptor >= 0) {
            ::close(region.descriptor);
        }
        return Error::invalid_argument("cannot map a region of " + to_string(region.owner) + " (" +
                                       std::to_string(region.size_bytes) + " bytes): " + why);
    };
    if (region.descriptor < 0) {
        return refused("no descriptor came with it");
    }
    if (region.size_bytes == 0 || ordinals.empty()) {
        return refused(region.size_bytes == 0 ? "it is empty" : "this runtime has no GPU");
    }
    if (driver == nullptr) {
        return refused("the driver offers no virtual memory management calls");
    }
    switch (mappings_.find(region.owner.runtime_id, region.base_address, region.size_bytes)) {
        case ImportedMappings::Found::same:
            ::close(region.descriptor);
            return {};
        case ImportedMappings::Found::conflict:
            return refused("it overlaps another region of that owner mapped already");
        case ImportedMappings::Found::none:
            break;
    }
    DeviceGuard guard(ordinals.front());
    CUmemGenericAllocationHandle handle = 0;
    // A POSIX descriptor goes in by value, in the pointer's place.
    const CUresult imported = driver->import_handle(
        &handle, reinterpret_cast<void*>(static_cast<std::uintptr_t>(region.descriptor)),
        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    ::close(region.descriptor);  // The handle holds the memory from here on.
    if (imported != CUDA_SUCCESS) {
        return Error::invalid_argument("cuMemImportFromShareableHandle of a region of " +
                                       to_string(region.owner) +
                                       " failed: " + driver->error_text(imported));
    }
    Result<std::uint64_t> local = map(handle, region, ordinals);
    driver->release(handle);  // The mapping holds the memory now, or nothing does.
    if (!local) {
        return local.error();
    }
    const Status added = mappings_.add(
        ImportedMapping{region.owner.runtime_id, region.base_address, region.size_bytes, *local});
    if (!added) {
        driver->unmap(*local, region.size_bytes);
        driver->address_free(*local, region.size_bytes);
        return added;
    }
    (void)HeldRanges::process().hold(*local, region.size_bytes);  // Fresh addresses.
    if (unmap_ordinal_ < 0) {
        unmap_ordinal_ = ordinals.front();
    }
    return {};
}

Result<std::uint64_t> ImportedMemory::map(std::uint64_t handle, const ExportedRegion& region,
                                          std::span<const int> ordinals) {
    const VmmDriver& driver = *VmmDriver::get();
    const auto failed = [&](const char* step, CUresult status) {
        return Error::invalid_argument(std::string(step) + " of a region of " +
                                       to_string(region.owner) +
                                       " failed: " + driver.error_text(status));
    };
    CUdeviceptr address = 0;
    if (const CUresult reserved = driver.address_reserve(&address, region.size_bytes, 0, 0, 0);
        reserved != CUDA_SUCCESS) {
        return failed("cuMemAddressReserve", reserved);
    }
    if (const CUresult mapped = driver.map(address, region.size_bytes, 0, handle, 0);
        mapped != CUDA_SUCCESS) {
        driver.address_free(address, region.size_bytes);
        return failed("cuMemMap", mapped);
    }
    // Each GPU apart: one that cannot reach the owner's GPU is left out, not the whole grant.
    CUresult last = CUDA_ERROR_INVALID_DEVICE;
    std::size_t granted = 0;
    std::vector<int> tried;
    for (const int ordinal : ordinals) {
        CUdevice device = 0;
        if (std::ranges::count(tried, ordinal) != 0 ||
            driver.device_get(&device, ordinal) != CUDA_SUCCESS) {
            continue;
        }
        tried.push_back(ordinal);
        const CUmemAccessDesc access = read_write_access(device);
        last = driver.set_access(address, region.size_bytes, &access, 1);
        granted += last == CUDA_SUCCESS ? 1 : 0;
    }
    if (granted == 0) {
        driver.unmap(address, region.size_bytes);
        driver.address_free(address, region.size_bytes);
        return failed("cuMemSetAccess", last);
    }
    return static_cast<std::uint64_t>(address);
}

}  // namespace tandem::cuda
