#pragma once

// Reports accesses to the same bytes from different streams that nothing orders (rule P6).
//
// Each stream carries a vector clock; events, waits, host syncs and system-scope atomics (a
// release observed by an acquire) merge clocks. An operation's accesses are its declared
// resources, checked when it completes against the recent accesses of each allocation: two
// accesses race when at least one writes, their bytes meet, and neither clock covers the other.
// Records per allocation and reports are bounded; the bounds are named below.

#include "operation.hpp"

#include <string>
#include <unordered_map>
#include <vector>

#include "tandem/sim/runtime.hpp"

namespace tandem::sim {

class RaceDetector {
public:
    /// Recent accesses remembered per allocation.
    static constexpr std::size_t max_records_per_allocation = 32;
    /// Reports kept per run.
    static constexpr std::size_t max_reports = 256;
    /// Addresses whose last system-scope release is remembered. Past it, the oldest ones are
    /// merged into one horizon clock that an acquire of a forgotten address merges: ordering is
    /// over-approximated, so the bound may hide a race but never reports a false one.
    static constexpr std::size_t max_release_addresses = 4096;

    struct Access {
        ByteRange range;
        bool write = false;
        std::uint32_t stream_global = 0;
        std::uint64_t epoch = 0;
        std::string label;
        /// The operation's clock when it completed: what it was ordered after.
        VectorClock clock;
    };

    /// Checks `access` of `memory` (carrying its clock), then remembers it in a slot whose
    /// storage (label, clock) is reused: once warm, recording allocates nothing (C12).
    void record(MemoryId memory, const Access& access);
    /// A system-scope release at `address` by an operation with `clock`.
    void release(std::uint64_t address, const VectorClock& clock);
    /// A system-scope acquire at `address`: merges the last release there into `clock`.
    void acquire(std::uint64_t address, VectorClock& clock) const;
    /// The allocation `memory` at [address, address + size_bytes) was freed: its records go.
    void forget(MemoryId memory, std::uint64_t address, std::uint64_t size_bytes);
    [[nodiscard]] std::size_t release_addresses() const { return releases_.size(); }

    [[nodiscard]] const std::vector<RaceReport>& reports() const { return reports_; }

private:
    /// The recent accesses of one allocation: a ring of at most `max_records_per_allocation`
    /// slots, `next` the oldest once it is full.
    struct Recent {
        std::vector<Access> slots;
        std::size_t next = 0;
    };
    std::unordered_map<MemoryId, Recent> accesses_;
    std::unordered_map<std::uint64_t, VectorClock> releases_;
    VectorClock release_horizon_;
    std::vector<RaceReport> reports_;
};

}  // namespace tandem::sim
