#pragma once

// The books of the CUDA backend's memory across processes, kept apart from the driver calls so
// that their rules are tested on machines without a GPU:
// - `RegionBook`: the regions one device's storage holds. A region another process maps is never
//   given back to the driver while the storage lives: the pools may return it, and it is kept
//   whole for a later reserve of the same size. So an address of the owner names the same
//   physical memory for the storage's life, and a peer's mapping of it, made once, stays right.
//   (The peer's mapping holds the memory anyway until that peer ends: giving it back would free
//   nothing.)
// - `ImportedMappings`: the regions of other processes mapped here, found by owner and address.
//   Two processes on one GPU address their own memory from the same place, so an owner's address
//   may be one of this process's own: a region is keyed by its owner's runtime too, and a lookup
//   for another process's memory never lands in this process's own.

#include "tandem/core/result.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <shared_mutex>
#include <utility>
#include <vector>

namespace tandem::cuda {

/// `size_bytes` rounded up to a multiple of `granularity_bytes`: none for a granularity of 0, a
/// size of 0, or a size whose rounding would wrap.
std::optional<std::uint64_t> round_up_to_granularity(std::uint64_t size_bytes,
                                                     std::uint64_t granularity_bytes);

/// A region of device memory a storage reserved, and what backs it.
struct OwnedRegion {
    /// The region's first device address.
    std::uint64_t address = 0;
    /// What the pools asked for: the region as `Storage::reserve` returned it.
    std::uint64_t requested_bytes = 0;
    /// What is mapped: `requested_bytes` rounded up to the allocation granularity (the same for
    /// memory from cudaMalloc).
    std::uint64_t mapped_bytes = 0;
    /// The driver's handle of the physical memory (a `CUmemGenericAllocationHandle`); 0 for memory
    /// from cudaMalloc, which no other process can map.
    std::uint64_t handle = 0;
    /// The descriptor the region was exported to, open while the region lives; -1 until the first
    /// export.
    int descriptor = -1;
    /// Given back by the pools after it was exported: kept whole for a later reserve of the same
    /// size (`RegionBook::take_kept`).
    bool kept = false;
};

/// The regions of one storage, by address. The storage serialises every call.
class RegionBook {
public:
    /// Adds `region`, whose addresses no region of the book holds.
    void add(const OwnedRegion& region);
    /// The region that starts at `address`, or null.
    [[nodiscard]] OwnedRegion* at(std::uint64_t address);
    /// The region (kept or not) holding every byte of `[address, address + size_bytes)`, or null;
    /// an empty range is held by the region holding `address`.
    [[nodiscard]] OwnedRegion* holding(std::uint64_t address, std::uint64_t size_bytes);
    /// Takes the region at `address` out of the book; none when there is none.
    std::optional<OwnedRegion> remove(std::uint64_t address);
    /// A kept region of exactly `requested_bytes`, handed out again (no longer kept); null when
    /// none is kept of that size.
    [[nodiscard]] OwnedRegion* take_kept(std::uint64_t requested_bytes);
    /// Bytes mapped by every region, kept ones included.
    [[nodiscard]] std::uint64_t mapped_bytes() const { return mapped_bytes_; }
    /// Bytes mapped by kept regions.
    [[nodiscard]] std::uint64_t kept_bytes() const;
    /// Calls `visit(region)` for every region, by address.
    template <typename Visit>
    void for_each(Visit&& visit) const {
        for (const auto& [address, region] : regions_) {
            visit(region);
        }
    }

private:
    std::map<std::uint64_t, OwnedRegion> regions_;
    std::uint64_t mapped_bytes_ = 0;
};

/// A region of another process mapped here.
struct ImportedMapping {
    /// The runtime (of another process) whose device owns the region (`ServiceId::runtime_id`).
    std::uint64_t owner_runtime = 0;
    /// The region's first address, as its owner addresses it.
    std::uint64_t base_address = 0;
    /// The region's size.
    std::uint64_t size_bytes = 0;
    /// Where the region's first byte is mapped in this process.
    std::uint64_t local_address = 0;
};

/// The regions of other processes mapped in this process, by owner and address. Added to under a
/// write lock; looked up (every launch, copy or external work binding another process's memory)
/// under a shared one.
class ImportedMappings {
public:
    /// The most regions a runtime maps: a pool page (8 MiB) each, 32 GiB of other ranks' memory.
    static constexpr std::size_t max_regions = 4096;

    /// What `find` finds of a region.
    enum class Found : std::uint8_t {
        /// No region of the owner touches it.
        none,
        /// The same region is mapped already.
        same,
        /// Another region of the owner overlaps it.
        conflict,
    };
    /// Whether `owner_runtime`'s region of `size_bytes` at `base_address` is mapped.
    [[nodiscard]] Found find(std::uint64_t owner_runtime, std::uint64_t base_address,
                             std::uint64_t size_bytes) const;
    /// Adds `mapping`. `InvalidArgument`, and nothing changes, for an empty region, one that
    /// wraps, one that overlaps a region of the same owner (the same region included), or a
    /// full table.
    Status add(const ImportedMapping& mapping);
    /// Where `[address, address + size_bytes)` of `owner_runtime`'s memory is in this process:
    /// none unless one mapped region holds every byte of it.
    [[nodiscard]] std::optional<std::uint64_t> local(std::uint64_t owner_runtime,
                                                     std::uint64_t address,
                                                     std::uint64_t size_bytes) const;
    /// Every mapping, taken out of the table: what is left to unmap at the end.
    std::vector<ImportedMapping> take_all();
    /// How many regions are mapped.
    [[nodiscard]] std::size_t size() const;

private:
    using Key = std::pair<std::uint64_t, std::uint64_t>;  // Owner, base address.
    /// `find`, the caller holding the lock.
    [[nodiscard]] Found find_locked(std::uint64_t owner_runtime, std::uint64_t base_address,
                                    std::uint64_t size_bytes) const;
    /// The mapping of `owner_runtime` whose region starts at or below `address`, or null.
    [[nodiscard]] const ImportedMapping* at_or_below(std::uint64_t owner_runtime,
                                                     std::uint64_t address) const;

    mutable std::shared_mutex mutex_;
    std::map<Key, ImportedMapping> mappings_;
};

}  // namespace tandem::cuda
