#include "cuda_storage.hpp"

#include "device_guard.hpp"
#include "engine.hpp"

#include "tandem/backend/held_ranges.hpp"

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <algorithm>

namespace tandem::cuda {

CudaStorage::CudaStorage(int ordinal, std::uint64_t capacity_bytes, bool exportable,
                         std::vector<int> peer_ordinals)
    : ordinal_(ordinal), capacity_bytes_(capacity_bytes) {
    if (exportable) {
        choose_exportable(peer_ordinals);
    } else {
        why_not_exportable_ =
            "CudaOptions::exportable_memory is off (set false, or unset on a runtime that serves "
            "no rank of a job)";
    }
}

CudaStorage::~CudaStorage() {
    std::lock_guard lock(mutex_);
    std::vector<std::uint64_t> addresses;
    regions_.for_each([&](const OwnedRegion& region) { addresses.push_back(region.address); });
    for (const std::uint64_t address : addresses) {
        give_back(*regions_.remove(address));
    }
}

void CudaStorage::choose_exportable(const std::vector<int>& peer_ordinals) {
    const VmmDriver* driver = VmmDriver::get();
    if (driver == nullptr) {
        why_not_exportable_ = "the driver offers no virtual memory management calls";
        return;
    }
    DeviceGuard guard(ordinal_);
    int managed = 0;
    int descriptors = 0;
    if (driver->device_get(&device_, ordinal_) != CUDA_SUCCESS ||
        driver->device_attribute(&managed, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                                 device_) != CUDA_SUCCESS ||
        driver->device_attribute(&descriptors,
                                 CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
                                 device_) != CUDA_SUCCESS ||
        managed == 0 || descriptors == 0) {
        why_not_exportable_ = "GPU " + std::to_string(ordinal_) +
                              " offers no virtual memory management with POSIX file descriptors";
        return;
    }
    const CUmemAllocationProp properties = exportable_memory_on(device_);
    std::size_t granularity = 0;
    if (driver->granularity(&granularity, &properties, CU_MEM_ALLOC_GRANULARITY_MINIMUM) !=
            CUDA_SUCCESS ||
        granularity == 0) {
        why_not_exportable_ =
            "the driver gave no allocation granularity for GPU " + std::to_string(ordinal_);
        return;
    }
    access_.push_back(read_write_access(device_));
    for (const int peer : peer_ordinals) {
        CUdevice peer_device = 0;
        if (driver->device_get(&peer_device, peer) == CUDA_SUCCESS) {
            access_.push_back(read_write_access(peer_device));
        }
    }
    granularity_bytes_ = granularity;
    vmm_ = driver;
}

Result<StorageRegion> CudaStorage::reserve(std::uint64_t size_bytes) {
    std::lock_guard lock(mutex_);
    if (OwnedRegion* kept = regions_.take_kept(size_bytes)) {
        return StorageRegion{kept->address, kept->requested_bytes};
    }
    std::optional<std::uint64_t> mapped =
        vmm_ != nullptr ? round_up_to_granularity(size_bytes, granularity_bytes_)
                        : std::optional<std::uint64_t>(size_bytes);
    if (!mapped || *mapped > capacity_bytes_ - std::min(capacity_bytes_, regions_.mapped_bytes())) {
        const std::uint64_t kept = regions_.kept_bytes();
        return out_of_memory(
            size_bytes,
            "device pools are at their capacity" +
                (kept == 0 ? std::string()
                           : " (" + std::to_string(kept) +
                                 " bytes of it are regions another process maps, kept for "
                                 "later allocations)"));
    }
    return vmm_ != nullptr ? reserve_exportable(size_bytes, *mapped) : reserve_malloc(size_bytes);
}

Result<StorageRegion> CudaStorage::reserve_exportable(std::uint64_t size_bytes,
                                                      std::uint64_t mapped_bytes) {
    DeviceGuard guard(ordinal_);
    const CUmemAllocationProp properties = exportable_memory_on(device_);
    CUmemGenericAllocationHandle handle = 0;
    if (const CUresult created = vmm_->create(&handle, mapped_bytes, &properties, 0);
        created != CUDA_SUCCESS) {
        return out_of_memory(size_bytes, "cuMemCreate of " + std::to_string(mapped_bytes) +
                                             " bytes failed: " + vmm_->error_text(created));
    }
    // Reserved, mapped and granted in turn; a step that fails undoes the ones before it.
    CUdeviceptr address = 0;
    const char* step = "cuMemAddressReserve";
    CUresult status = vmm_->address_reserve(&address, mapped_bytes, granularity_bytes_, 0, 0);
    if (status == CUDA_SUCCESS) {
        step = "cuMemMap";
        status = vmm_->map(address, mapped_bytes, 0, handle, 0);
        if (status == CUDA_SUCCESS) {
            step = "cuMemSetAccess";
            status = vmm_->set_access(address, mapped_bytes, access_.data(), access_.size());
            if (status != CUDA_SUCCESS) {
                vmm_->unmap(address, mapped_bytes);
            }
        }
        if (status != CUDA_SUCCESS) {
            vmm_->address_free(address, mapped_bytes);
        }
    }
    if (status != CUDA_SUCCESS) {
        vmm_->release(handle);
        return out_of_memory(size_bytes, std::string(step) + " for " +
                                             std::to_string(mapped_bytes) +
                                             " bytes failed: " + vmm_->error_text(status));
    }
    const auto base = static_cast<std::uint64_t>(address);
    (void)HeldRanges::process().hold(base, mapped_bytes);  // Fresh: no one else holds it.
    regions_.add(OwnedRegion{base, size_bytes, mapped_bytes, handle, -1, false});
    return StorageRegion{base, size_bytes};
}

Result<StorageRegion> CudaStorage::reserve_malloc(std::uint64_t size_bytes) {
    DeviceGuard guard(ordinal_);
    void* pointer = nullptr;
    const cudaError_t status = cudaMalloc(&pointer, size_bytes);
    if (status != cudaSuccess) {
        cudaGetLastError();  // Out of memory is not sticky: clear it.
        return out_of_memory(size_bytes, "cudaMalloc of " + std::to_string(size_bytes) +
                                             " bytes failed: " + cuda_error_text(status));
    }
    const auto address = reinterpret_cast<std::uint64_t>(pointer);
    (void)HeldRanges::process().hold(address, size_bytes);  // Fresh: no one else holds it.
    regions_.add(OwnedRegion{address, size_bytes, size_bytes, 0, -1, false});
    return StorageRegion{address, size_bytes};
}

Error CudaStorage::out_of_memory(std::uint64_t size_bytes, const std::string& why) const {
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    {
        DeviceGuard guard(ordinal_);
        cudaMemGetInfo(&free_bytes, &total_bytes);
    }
    const std::uint64_t reserved = regions_.mapped_bytes();
    const std::uint64_t room = capacity_bytes_ - std::min(capacity_bytes_, reserved);
    return Error::out_of_memory(
        why, OutOfMemoryDetails{size_bytes, std::min<std::uint64_t>(free_bytes, room), reserved,
                                std::min<std::uint64_t>(free_bytes, room)});
}

void CudaStorage::release(StorageRegion region) {
    std::lock_guard lock(mutex_);
    OwnedRegion* owned = regions_.at(region.address);
    if (owned == nullptr || owned->kept) {
        return;
    }
    if (owned->descriptor >= 0) {
        owned->kept = true;  // Another process maps it: its address keeps naming this memory.
        return;
    }
    give_back(*regions_.remove(region.address));
}

void CudaStorage::give_back(const OwnedRegion& region) {
    DeviceGuard guard(ordinal_);
    HeldRanges::process().release(region.address);
    if (region.handle == 0) {
        cudaFree(reinterpret_cast<void*>(region.address));
        return;
    }
    vmm_->unmap(region.address, region.mapped_bytes);
    vmm_->address_free(region.address, region.mapped_bytes);
    vmm_->release(region.handle);
    if (region.descriptor >= 0) {
        ::close(region.descriptor);
    }
}

std::uint64_t CudaStorage::reserved_bytes() const {
    std::lock_guard lock(mutex_);
    return regions_.mapped_bytes();
}

std::uint64_t CudaStorage::largest_reservable_bytes() const {
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    {
        DeviceGuard guard(ordinal_);
        cudaMemGetInfo(&free_bytes, &total_bytes);
    }
    const std::uint64_t reserved = reserved_bytes();
    return std::min<std::uint64_t>(free_bytes,
                                   capacity_bytes_ - std::min(capacity_bytes_, reserved));
}

Result<ExportedRegion> CudaStorage::export_region(std::uint64_t address, std::uint64_t size_bytes) {
    std::lock_guard lock(mutex_);
    if (vmm_ == nullptr) {
        return Error::invalid_argument(
            "the memory of GPU " + std::to_string(ordinal_) +
            " comes from cudaMalloc, which no other process can map: " + why_not_exportable_);
    }
    OwnedRegion* region = regions_.holding(address, size_bytes);
    if (region == nullptr) {
        return Error::invalid_argument(
            "the " + std::to_string(size_bytes) + " bytes at device address " +
            std::to_string(address) + " are in no region of GPU " + std::to_string(ordinal_) +
            "'s pools (memory adopted from elsewhere stays in its process)");
    }
    if (region->descriptor < 0) {
        int descriptor = -1;
        DeviceGuard guard(ordinal_);
        if (const CUresult exported = vmm_->export_handle(
                &descriptor, region->handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
            exported != CUDA_SUCCESS) {
            return Error::invalid_argument("cuMemExportToShareableHandle of a region of GPU " +
                                           std::to_string(ordinal_) +
                                           " failed: " + vmm_->error_text(exported));
        }
        region->descriptor = descriptor;
    }
    ExportedRegion exported;
    exported.descriptor = region->descriptor;
    exported.base_address = region->address;
    exported.size_bytes = region->mapped_bytes;
    return exported;
}

}  // namespace tandem::cuda
