#include "region_book.hpp"

#include <cassert>
#include <mutex>
#include <string>

namespace tandem::cuda {

std::optional<std::uint64_t> round_up_to_granularity(std::uint64_t size_bytes,
                                                     std::uint64_t granularity_bytes) {
    if (granularity_bytes == 0 || size_bytes == 0) {
        return std::nullopt;
    }
    const std::uint64_t rest = size_bytes % granularity_bytes;
    if (rest == 0) {
        return size_bytes;
    }
    const std::uint64_t added = granularity_bytes - rest;
    if (size_bytes > UINT64_MAX - added) {
        return std::nullopt;
    }
    return size_bytes + added;
}

// ---------------------------------------------------------------- RegionBook

void RegionBook::add(const OwnedRegion& region) {
    assert(holding(region.address, region.mapped_bytes) == nullptr && "a region of new addresses");
    regions_.emplace(region.address, region);
    mapped_bytes_ += region.mapped_bytes;
}

OwnedRegion* RegionBook::at(std::uint64_t address) {
    auto found = regions_.find(address);
    return found != regions_.end() ? &found->second : nullptr;
}

OwnedRegion* RegionBook::holding(std::uint64_t address, std::uint64_t size_bytes) {
    auto after = regions_.upper_bound(address);
    if (after == regions_.begin()) {
        return nullptr;
    }
    OwnedRegion& region = std::prev(after)->second;
    const std::uint64_t offset = address - region.address;  // At or past its start.
    if (offset >= region.mapped_bytes || size_bytes > region.mapped_bytes - offset) {
        return nullptr;
    }
    return &region;
}

std::optional<OwnedRegion> RegionBook::remove(std::uint64_t address) {
    auto found = regions_.find(address);
    if (found == regions_.end()) {
        return std::nullopt;
    }
    OwnedRegion region = found->second;
    mapped_bytes_ -= region.mapped_bytes;
    regions_.erase(found);
    return region;
}

OwnedRegion* RegionBook::take_kept(std::uint64_t requested_bytes) {
    for (auto& [address, region] : regions_) {
        if (region.kept && region.requested_bytes == requested_bytes) {
            region.kept = false;
            return &region;
        }
    }
    return nullptr;
}

std::uint64_t RegionBook::kept_bytes() const {
    std::uint64_t kept = 0;
    for (const auto& [address, region] : regions_) {
        kept += region.kept ? region.mapped_bytes : 0;
    }
    return kept;
}

// ---------------------------------------------------------------- ImportedMappings

const ImportedMapping* ImportedMappings::at_or_below(std::uint64_t owner_runtime,
                                                     std::uint64_t address) const {
    auto after = mappings_.upper_bound(Key{owner_runtime, address});
    if (after == mappings_.begin()) {
        return nullptr;
    }
    const ImportedMapping& mapping = std::prev(after)->second;
    return mapping.owner_runtime == owner_runtime ? &mapping : nullptr;
}

ImportedMappings::Found ImportedMappings::find(std::uint64_t owner_runtime,
                                               std::uint64_t base_address,
                                               std::uint64_t size_bytes) const {
    std::shared_lock lock(mutex_);
    return find_locked(owner_runtime, base_address, size_bytes);
}

ImportedMappings::Found ImportedMappings::find_locked(std::uint64_t owner_runtime,
                                                      std::uint64_t base_address,
                                                      std::uint64_t size_bytes) const {
    auto same = mappings_.find(Key{owner_runtime, base_address});
    if (same != mappings_.end()) {
        return same->second.size_bytes == size_bytes ? Found::same : Found::conflict;
    }
    // Only the nearest region below and the nearest above can overlap: regions are disjoint.
    if (const ImportedMapping* below = at_or_below(owner_runtime, base_address);
        below != nullptr && base_address - below->base_address < below->size_bytes) {
        return Found::conflict;
    }
    auto above = mappings_.upper_bound(Key{owner_runtime, base_address});
    if (above != mappings_.end() && above->second.owner_runtime == owner_runtime &&
        above->second.base_address - base_address < size_bytes) {
        return Found::conflict;
    }
    return Found::none;
}

Status ImportedMappings::add(const ImportedMapping& mapping) {
    if (mapping.size_bytes == 0 || mapping.base_address > UINT64_MAX - mapping.size_bytes) {
        return Error::invalid_argument("a region of another process of " +
                                       std::to_string(mapping.size_bytes) + " bytes at " +
                                       std::to_string(mapping.base_address) + " is empty or wraps");
    }
    std::unique_lock lock(mutex_);
    if (find_locked(mapping.owner_runtime, mapping.base_address, mapping.size_bytes) !=
        Found::none) {
        return Error::invalid_argument("the region of another process at device address " +
                                       std::to_string(mapping.base_address) +
                                       " overlaps one of the same owner mapped already");
    }
    if (mappings_.size() == max_regions) {
        return Error::invalid_argument("this runtime maps at most " + std::to_string(max_regions) +
                                       " regions of other processes");
    }
    mappings_.emplace(Key{mapping.owner_runtime, mapping.base_address}, mapping);
    return {};
}

std::optional<std::uint64_t> ImportedMappings::local(std::uint64_t owner_runtime,
                                                     std::uint64_t address,
                                                     std::uint64_t size_bytes) const {
    std::shared_lock lock(mutex_);
    const ImportedMapping* mapping = at_or_below(owner_runtime, address);
    if (mapping == nullptr) {
        return std::nullopt;
    }
    // An empty range at a region's end is that region's too: a binding trimmed to no bytes.
    const std::uint64_t offset = address - mapping->base_address;
    if (offset > mapping->size_bytes || size_bytes > mapping->size_bytes - offset) {
        return std::nullopt;
    }
    return mapping->local_address + offset;
}

std::vector<ImportedMapping> ImportedMappings::take_all() {
    std::unique_lock lock(mutex_);
    std::vector<ImportedMapping> all;
    all.reserve(mappings_.size());
    for (const auto& [key, mapping] : mappings_) {
        all.push_back(mapping);
    }
    mappings_.clear();
    return all;
}

std::size_t ImportedMappings::size() const {
    std::shared_lock lock(mutex_);
    return mappings_.size();
}

}  // namespace tandem::cuda
