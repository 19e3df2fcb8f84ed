#pragma once

// The memory of other processes' devices that a CUDA runtime maps: the regions a job's other
// ranks exported (a POSIX file descriptor each, passed over the ranks' socket), each imported,
// mapped at addresses of this process and granted to its GPUs once, however many allocations of
// it are shared. Work binding another rank's memory finds where it is mapped here by the owner's
// runtime and address (region_book.hpp says why both).

#include "region_book.hpp"

#include "tandem/backend/job_member.hpp"

#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

namespace tandem::cuda {

/// Regions of other processes mapped here, for the life of the runtime.
class ImportedMemory {
public:
    ImportedMemory() = default;
    /// Unmaps every region; no work of the runtime may still run.
    ~ImportedMemory();
    ImportedMemory(const ImportedMemory&) = delete;
    ImportedMemory& operator=(const ImportedMemory&) = delete;

    /// Maps `region` (its descriptor taken: closed here, whatever happens) and grants each GPU of
    /// `ordinals` read and write access where the driver lets it, one at least. A region of that
    /// owner mapped already at that base is kept. `InvalidArgument`, and nothing mapped, for no
    /// descriptor, an empty region, one that overlaps another region of its owner, a full table,
    /// no GPU, or a driver without virtual memory management; the driver's error, naming the step,
    /// when it cannot import, map or grant the region.
    Status import(const ExportedRegion& region, std::span<const int> ordinals);
    /// Where `[address, address + size_bytes)` of `owner`'s memory is mapped here, or null when
    /// no region mapped here holds all of it.
    [[nodiscard]] std::uint8_t* local(ServiceId owner, std::uint64_t address,
                                      std::uint64_t size_bytes) const {
        const std::optional<std::uint64_t> found =
            mappings_.local(owner.runtime_id, address, size_bytes);
        return found ? reinterpret_cast<std::uint8_t*>(*found) : nullptr;
    }
    /// How many regions are mapped.
    [[nodiscard]] std::size_t regions() const { return mappings_.size(); }

private:
    /// Maps the imported `handle` of `region` and grants `ordinals` access: the local address.
    Result<std::uint64_t> map(std::uint64_t handle, const ExportedRegion& region,
                              std::span<const int> ordinals);

    /// One import at a time: the check for a region mapped already and its mapping go together.
    std::mutex import_mutex_;
    ImportedMappings mappings_;
    /// The GPU whose context unmaps the regions at the end: the first importer's first GPU.
    int unmap_ordinal_ = -1;
};

}  // namespace tandem::cuda
