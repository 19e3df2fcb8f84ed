#pragma once

// Where a GPU's pools get their regions. Where the GPU and its driver offer virtual memory
// management with POSIX file descriptors, each region is physical memory of its own (`cuMemCreate`)
// mapped at addresses of its own, which another process of the host maps too once the region is
// exported (a job's other ranks: docs/DESIGN.md, phase 2): one descriptor a region, exported the
// first time another process needs it and kept while the region lives, so sharing a second
// allocation of a mapped region costs its offset, not another import. Elsewhere, and where a
// program asks for it (`CudaOptions::exportable_memory`), regions come from cudaMalloc as before,
// and an export is refused saying why.
//
// A region costs its driver calls when the pools take a new page (8 MiB by default) or a large
// allocation, never on an allocation the pools serve, so the allocation path is the pools'.

#include "region_book.hpp"
#include "vmm_driver.hpp"

#include "tandem/backend/job_member.hpp"
#include "tandem/backend/storage.hpp"

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace tandem::cuda {

/// Regions of one GPU's memory, which the core pools carve, held in `HeldRanges` while they live
/// (memory adopted from elsewhere never aliases them). Every call may come from any thread.
class CudaStorage final : public Storage {
public:
    /// Storage of GPU `ordinal`, at most `capacity_bytes` reserved at once. With `exportable`, its
    /// regions are exportable memory where the GPU and driver offer it, mapped for the GPU and for
    /// the GPUs `peer_ordinals` names (other GPUs of the runtime that can reach this one's memory:
    /// a mapping of such memory grants access per GPU, where cudaMalloc memory needs one
    /// `cudaDeviceEnablePeerAccess`); otherwise cudaMalloc memory.
    CudaStorage(int ordinal, std::uint64_t capacity_bytes, bool exportable,
                std::vector<int> peer_ordinals);
    /// Gives every region back, kept ones included (the pools gave theirs back first).
    ~CudaStorage() override;
    CudaStorage(const CudaStorage&) = delete;
    CudaStorage& operator=(const CudaStorage&) = delete;

    /// A region of `size_bytes`: a kept region of that size if there is one, else a new one (its
    /// physical memory rounded up to the allocation granularity). `OutOfMemory` past the capacity
    /// (counting what is mapped) or when the driver has no memory for it, with the figures.
    Result<StorageRegion> reserve(std::uint64_t size_bytes) override;
    /// Gives `region` back to the driver; a region another process maps is kept instead, for a
    /// later reserve of its size. A region this storage did not reserve changes nothing.
    void release(StorageRegion region) override;
    [[nodiscard]] std::uint64_t capacity_bytes() const override { return capacity_bytes_; }
    /// Bytes mapped by its regions, kept ones included.
    [[nodiscard]] std::uint64_t reserved_bytes() const override;
    [[nodiscard]] std::uint64_t largest_reservable_bytes() const override;

    /// Whether its regions can be exported to another process.
    [[nodiscard]] bool exportable() const { return vmm_ != nullptr; }
    /// Why its regions cannot be exported, when they cannot.
    [[nodiscard]] const std::string& why_not_exportable() const { return why_not_exportable_; }
    /// The granularity regions are mapped in (0 for cudaMalloc memory).
    [[nodiscard]] std::uint64_t granularity_bytes() const { return granularity_bytes_; }
    /// The region holding every byte of `[address, address + size_bytes)`, with a descriptor of
    /// it: exported the first time, then the same one, open while the storage lives (the caller
    /// borrows it). `InvalidArgument`, and nothing changes, for bytes of no region of this
    /// storage (memory adopted from elsewhere) or a storage of cudaMalloc memory, saying why; the
    /// driver's error when the export fails.
    Result<ExportedRegion> export_region(std::uint64_t address, std::uint64_t size_bytes);

private:
    /// Takes virtual memory management for the storage where the driver and GPU offer it with
    /// POSIX file descriptors; otherwise notes why not.
    void choose_exportable(const std::vector<int>& peer_ordinals);
    /// A new region of exportable memory: `size_bytes` asked, `mapped_bytes` made.
    Result<StorageRegion> reserve_exportable(std::uint64_t size_bytes, std::uint64_t mapped_bytes);
    /// A new region from cudaMalloc.
    Result<StorageRegion> reserve_malloc(std::uint64_t size_bytes);
    /// `OutOfMemory` for a reserve of `size_bytes` that failed for `why`, with the figures.
    [[nodiscard]] Error out_of_memory(std::uint64_t size_bytes, const std::string& why) const;
    /// Unmaps `region` and gives its memory back to the driver; under the lock.
    void give_back(const OwnedRegion& region);

    int ordinal_;
    std::uint64_t capacity_bytes_;
    /// The driver's functions where regions are exportable; null for cudaMalloc memory.
    const VmmDriver* vmm_ = nullptr;
    /// The GPU, as the driver names it.
    CUdevice device_ = 0;
    /// Read and write access for the GPU and each peer GPU, as every new region is granted.
    std::vector<CUmemAccessDesc> access_;
    std::uint64_t granularity_bytes_ = 0;
    std::string why_not_exportable_;
    mutable std::mutex mutex_;
    RegionBook regions_;
};

}  // namespace tandem::cuda
