#pragma once

// One simulated device's memory: a Boost.Interprocess shared-memory segment, unlinked from
// /dev/shm as soon as it is mapped.
//
// A segment is created 0600 under the name `tandem-<pid>-<runtime id>-d<device>`, which no other
// run uses (the runtime id is random) and which refuses to open a segment that is already there.
// Once it is mapped, a runtime in one process needs no name: the name is removed at once, the
// mapping and the open descriptor keep the memory, and the system frees it when the process
// ends, however it ends (a return, `std::exit`, `abort`, an uncaught exception, any signal,
// SIGKILL included). Only a process killed in the few system calls between creating and
// unlinking can leave a name behind; `tandem clean` removes those, and those of older versions,
// which removed their segments only when the runtime ended. The file is sparse: pages are
// reserved with posix_fallocate when a pool takes a region, so a full /dev/shm (whose space an
// unlinked segment still uses) gives `OutOfMemory` instead of SIGBUS on first touch.
//
// A run of many programs (`tandem explore`, `tandem run` over a folder) keeps its segments in a
// `SegmentPool` between runtimes instead: creating, reserving and removing a segment costs
// system calls and a fresh page for every page touched, several times what a short program
// costs to run. A kept segment is reset to what a fresh one shows (see SegmentPool).

#include "tandem/core/result.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tandem::sim {

/// One simulated device's memory: a shared-memory segment created 0600 in /dev/shm under a name no
/// other run uses, and unlinked as soon as it is mapped; unmapped when it is destroyed.
class Segment {
public:
    /// Creates and maps a segment of `capacity_bytes`, then removes its name from /dev/shm. Fails
    /// if the name exists (a new run never opens another run's segment) or the system refuses.
    static Result<std::unique_ptr<Segment>> create(std::string name, std::uint64_t capacity_bytes);
    /// Unmaps the segment (its memory goes back to the system), or gives it back to the pool it
    /// came from, reset.
    ~Segment();
    Segment(const Segment&) = delete;
    Segment& operator=(const Segment&) = delete;

    /// The name the segment was created under, for reports; no longer in /dev/shm.
    [[nodiscard]] const std::string& name() const { return name_; }
    /// The segment's size; pages are reserved as pools take regions.
    [[nodiscard]] std::uint64_t capacity_bytes() const { return capacity_bytes_; }
    /// The first byte of the segment's mapping in this process.
    [[nodiscard]] std::byte* data() const { return data_; }
    /// The open descriptor of the segment's memory (its name is gone): what another process of
    /// a job maps to reach this device's shared memory. Valid while the segment lives.
    [[nodiscard]] int descriptor() const;
    /// Backs `[offset, offset + size)` with real pages; `OutOfMemory` when /dev/shm is full.
    /// Pages this segment backed before (for an earlier runtime, if it was kept) are still there
    /// and cost nothing.
    Status reserve_pages(std::uint64_t offset, std::uint64_t size_bytes);
    /// Notes that `[offset, offset + size)` may be written: the bytes a kept segment zeroes.
    void note_written(std::uint64_t offset, std::uint64_t size_bytes);

    /// The segment name for a device of a runtime of this process.
    static std::string name_for(std::uint64_t runtime_id, std::uint32_t device_index);

private:
    friend class SegmentPool;
    struct Mapping;
    struct Shelf;
    /// Ranges of backed pages remembered; past the bound, reservations always ask the system.
    static constexpr std::size_t max_backed_ranges = 64;
    Segment(std::string name, std::uint64_t capacity_bytes, std::unique_ptr<Mapping> mapping);
    [[nodiscard]] bool backed(std::uint64_t offset, std::uint64_t size_bytes) const;
    void note_backed(std::uint64_t offset, std::uint64_t size_bytes);
    /// Zeroes what was written, so the segment reads as a fresh one; false past the pool's bound.
    bool reset();

    std::string name_;
    std::uint64_t capacity_bytes_;
    std::unique_ptr<Mapping> mapping_;
    std::byte* data_;
    /// Offset to end of each range of pages posix_fallocate backed, fused.
    std::map<std::uint64_t, std::uint64_t> backed_;
    /// The hull of every range written since the segment was created or last reset.
    std::uint64_t written_begin_ = UINT64_MAX;
    std::uint64_t written_end_ = 0;
    /// The pool the segment goes back to (none: it is unmapped), and the device it was taken for.
    std::weak_ptr<Shelf> home_;
    std::uint32_t device_index_ = 0;
};

/// Segments kept between the runtimes of one process. A runtime created with a pool
/// (`SimOptions::segments`) takes its segments from it and gives them back when it ends; a
/// kept segment is then reset to what a fresh one shows to every rule the simulator checks:
/// the bytes written are zeroed (a fresh segment reads as zeros; allocations are filled with
/// the seed's noise either way), its storage starts empty again, so allocations get the same
/// addresses and a seed replays exactly. What stays is its name (of the runtime that created
/// it) and its backed pages, which is the point: a reservation there needs no system call, and
/// cannot fail for lack of space in /dev/shm as a fresh one could.
///
/// The pool unmaps every segment it keeps when it goes; a segment given back after that is
/// unmapped at once. Thread-safe.
class SegmentPool {
public:
    /// Segments kept at most; one more given back is unmapped.
    static constexpr std::size_t max_kept_segments = 16;
    /// A segment with more bytes than this written (to zero) or backed (to hold on to in
    /// /dev/shm) is unmapped rather than kept: a fresh one costs about as much.
    static constexpr std::uint64_t max_kept_bytes = std::uint64_t{64} << 20;

    SegmentPool();
    ~SegmentPool();
    SegmentPool(const SegmentPool&) = delete;
    SegmentPool& operator=(const SegmentPool&) = delete;

    /// A kept segment of `capacity_bytes` last used by device `device_index`, else a new one
    /// named for `runtime_id` and the device (as `Segment::create`).
    Result<std::unique_ptr<Segment>> take(std::uint64_t runtime_id, std::uint32_t device_index,
                                          std::uint64_t capacity_bytes);
    /// Segments kept now.
    [[nodiscard]] std::size_t kept() const;
    /// Segments `take` handed out again, since the pool was made.
    [[nodiscard]] std::uint64_t reused() const;

private:
    std::shared_ptr<Segment::Shelf> shelf_;
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

/// Every tandem segment name in /dev/shm owned by this user, and whether its process still runs.
/// Segments of this version are unlinked once mapped, so these are those of older versions or of
/// a process killed while creating one.
std::vector<StaleSegment> list_segments();
/// Removes the segments of runtimes whose process is gone, and nothing else. Returns their names.
std::vector<std::string> clean_stale_segments();

}  // namespace tandem::sim
