#pragma once

// The allocations a set of works touches, and whether any of them writes each: what decides
// whether two units of unsettled work may settle in either order. Two works conflict when one
// writes an allocation the other reads or writes; works that do not conflict settle to the same
// claims in either order, so the settle pipeline may settle a later one first.
//
// The granularity is the allocation, not the byte: coarser than the rules need, and what keeps
// each allocation's writers settling in enqueue order (the pipeline's writer lists rely on it).

#include "tandem/backend/outcome.hpp"

#include <cstdint>
#include <span>
#include <unordered_map>

namespace tandem {
class Work;
}

namespace tandem::detail {

/// The allocations some works touch, each with whether one of them writes it.
class Footprint {
public:
    /// Forgets every allocation, keeping the storage.
    void clear() { touched_.clear(); }
    /// Whether nothing is recorded.
    [[nodiscard]] bool empty() const { return touched_.empty(); }
    /// Adds what `work` reads and writes.
    void add(const Work& work);
    /// Adds `targets` as read.
    void add_reads(std::span<const Target> targets);
    /// Adds the allocations of `keys` as read.
    void add_reads(std::span<const ClaimKey> keys);
    /// Whether `work` writes an allocation recorded here, or reads one recorded as written.
    [[nodiscard]] bool conflicts(const Work& work) const;

private:
    void touch(std::uint64_t memory, bool writes);

    /// By memory id (unique across the devices of a process): whether it is written.
    std::unordered_map<std::uint64_t, bool> touched_;
};

}  // namespace tandem::detail
