#pragma once

// One simulated device's memory: a named Boost.Interprocess shared-memory segment.
//
// Segments are created 0600, named `tandem-<pid>-<runtime id>-d<device>` so that runs never
// collide (the runtime id is random) and `tandem clean` can tell whether the process that made
// one is gone. They are removed when the runtime ends, and on SIGINT or SIGTERM by a handler that
// unlinks every live segment before the signal takes its default course. The file is sparse:
// pages are reserved with posix_fallocate when a pool takes a region, so a full /dev/shm gives
// `OutOfMemory` instead of SIGBUS on first touch.

#include "tandem/core/result.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tandem::sim {

/// One simulated device's memory: a shared-memory segment in /dev/shm, created 0600 under a name no
/// other run uses, removed when it is destroyed or when the process gets SIGINT or SIGTERM.
class Segment {
public:
    /// Creates and maps a segment of `capacity_bytes`. Fails if the name exists (a new run never
    /// opens another run's segment) or the system refuses.
    static Result<std::unique_ptr<Segment>> create(std::string name, std::uint64_t capacity_bytes);
    ~Segment();
    Segment(const Segment&) = delete;
    Segment& operator=(const Segment&) = delete;

    /// The segment's name in /dev/shm.
    [[nodiscard]] const std::string& name() const { return name_; }
    /// The segment's size; pages are reserved as pools take regions.
    [[nodiscard]] std::uint64_t capacity_bytes() const { return capacity_bytes_; }
    /// The first byte of the segment's mapping in this process.
    [[nodiscard]] std::byte* data() const { return data_; }
    /// Backs `[offset, offset + size)` with real pages; `OutOfMemory` when /dev/shm is full.
    Status reserve_pages(std::uint64_t offset, std::uint64_t size_bytes);

    /// The segment name for a device of a runtime of this process.
    static std::string name_for(std::uint64_t runtime_id, std::uint32_t device_index);

private:
    struct Mapping;
    Segment(std::string name, std::uint64_t capacity_bytes, std::unique_ptr<Mapping> mapping);
    std::string name_;
    std::uint64_t capacity_bytes_;
    std::unique_ptr<Mapping> mapping_;
    std::byte* data_;
};

/// A segment `tandem clean` found.
struct StaleSegment {
    /// The segment's name in /dev/shm.
    std::string name;
    /// The process that created it, read from the name.
    int pid = 0;
    /// Whether that process still runs (or runs as another user).
    bool owner_alive = false;
};

/// Every tandem segment in /dev/shm owned by this user, and whether its process still runs.
std::vector<StaleSegment> list_segments();
/// Removes the segments of runtimes whose process is gone, and nothing else. Returns their names.
std::vector<std::string> clean_stale_segments();

}  // namespace tandem::sim
