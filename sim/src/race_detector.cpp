#include "race_detector.hpp"

namespace tandem::sim {

namespace {

/// Whether `first` happened before `second`: `second` had seen `first`'s epoch.
bool ordered_before(const RaceDetector::Access& first, const RaceDetector::Access& second) {
    return first.stream_global < second.clock.size() &&
           second.clock[first.stream_global] >= first.epoch;
}

}  // namespace

void RaceDetector::record(MemoryId memory, const Access& access) {
    if (access.range.empty()) {
        return;
    }
    Recent& recent = accesses_[memory];
    // Oldest first, as the ring holds them: reports come in the order the accesses happened.
    for (std::size_t age = 0; age < recent.slots.size(); ++age) {
        const Access& other = recent.slots[(recent.next + age) % recent.slots.size()];
        if (other.stream_global == access.stream_global || !(other.write || access.write) ||
            !other.range.intersects(access.range) || ordered_before(other, access) ||
            ordered_before(access, other)) {
            continue;
        }
        if (reports_.size() < max_reports) {
            const std::uint64_t begin = std::max(other.range.begin, access.range.begin);
            const std::uint64_t end = std::min(other.range.end, access.range.end);
            reports_.push_back(RaceReport{(other.write ? "write by " : "read by ") + other.label,
                                          (access.write ? "write by " : "read by ") + access.label,
                                          ClaimKey{memory, ByteRange{begin, end}}});
        }
    }
    if (recent.slots.size() < max_records_per_allocation) {
        recent.slots.push_back(access);
        return;
    }
    Access& oldest = recent.slots[recent.next];  // Assigned in place: its storage is reused.
    oldest.range = access.range;
    oldest.write = access.write;
    oldest.stream_global = access.stream_global;
    oldest.epoch = access.epoch;
    oldest.label.assign(access.label);
    oldest.clock = access.clock;
    recent.next = (recent.next + 1) % max_records_per_allocation;
}

void RaceDetector::release(std::uint64_t address, const VectorClock& clock) {
    if (!releases_.contains(address) && releases_.size() >= max_release_addresses) {
        auto oldest = releases_.begin();
        merge_into(release_horizon_, oldest->second);
        releases_.erase(oldest);
    }
    merge_into(releases_[address], clock);
}

void RaceDetector::acquire(std::uint64_t address, VectorClock& clock) const {
    auto found = releases_.find(address);
    if (found != releases_.end()) {
        merge_into(clock, found->second);
    } else {
        merge_into(clock, release_horizon_);  // Empty until the bound was reached.
    }
}

void RaceDetector::forget(MemoryId memory, std::uint64_t address, std::uint64_t size_bytes) {
    accesses_.erase(memory);
    std::erase_if(releases_, [&](const auto& entry) {
        return entry.first >= address && entry.first - address < size_bytes;
    });
}

}  // namespace tandem::sim
