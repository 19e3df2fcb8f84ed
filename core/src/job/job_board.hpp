#pragma once

// A rank's board: the words it publishes for the other ranks of its job to read with no message.
// For each of its devices, the devices of other ranks it granted access to its shared memory
// (P7); for each allocation it shared, whether some byte of it is claimed now (the owner's claim
// store keeps that word exact, `ClaimStore::publish`). A peer reads both before it binds the
// memory, so a launch binding another rank's clean memory costs no round trip; the report of a
// claimed byte crosses the socket only when the word says there is one.
//
// For each stream whose events it published, a counter its device advances as the work before each
// of them is settled (`JobMember::export_event`): a peer's wait on such an event holds until the
// counter reaches the event's sequence. Beside it, the first event of the stream recorded after
// a wait that failed (0 for none): a peer's stream waiting on that event or a later one follows
// the failed wait, whose error it asks the owner for once.
//
// One word says how its rank departed, for the peers that read the end of its connection while
// its process runs on: written before its connections close, so a peer that reads the end reads
// the word too. A rank abandoned (`Job::abandon`) says so, and so does a rank cut off from the
// job for a lost connection of its own (with the rank at the other end); a word still saying
// nothing means the rank lives and only the connection was lost (rank_watcher.hpp).
//
// The board is a file in the job folder (`board-R`, 0600, in a folder that is 0700), created and
// written by its rank, mapped read-only by the others. Grants and counters only ever grow and a
// word is one aligned 64-bit value, so a reader needs no lock.

#include "tandem/backend/claim_store.hpp"
#include "tandem/core/ids.hpp"
#include "tandem/core/result.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tandem::job_detail {

/// How a rank departed from the job, as its board says: what a peer cannot tell from the end of
/// a connection alone when the rank's process runs on.
struct Departure {
    enum class Kind : std::uint8_t {
        /// It has not departed: it lives in the job.
        none,
        /// It was abandoned (`Job::abandon`): its part ended as a death would end it.
        abandoned,
        /// It cut itself off from the job: its connection to `rank` was lost while both lived.
        cut_off,
    };
    Kind kind = Kind::none;
    /// For `cut_off`: the rank at the other end of the lost connection.
    std::uint32_t rank = 0;
};

class JobBoard {
public:
    /// The devices of a rank whose grants a board holds, and the devices of a peer rank that one
    /// grant word names.
    static constexpr std::uint32_t devices_max = 64;
    /// The allocations a rank shares at once.
    static constexpr std::size_t slots = ClaimStore::max_published;
    /// The streams whose events a rank publishes, over its life: one counter each.
    static constexpr std::size_t stream_slots = 256;

    /// Creates rank `rank`'s board in `folder`, replacing one a dead process of that seat left.
    static Result<std::unique_ptr<JobBoard>> create(const std::string& folder, std::uint32_t rank);
    /// Maps rank `rank`'s board, read only.
    static Result<std::unique_ptr<JobBoard>> open(const std::string& folder, std::uint32_t rank);
    /// Unmaps the board; its own rank's is removed from the folder too.
    ~JobBoard();
    JobBoard(const JobBoard&) = delete;
    JobBoard& operator=(const JobBoard&) = delete;

    /// The word of slot `slot` (below `slots`), for the owner's claim store to keep.
    [[nodiscard]] std::atomic<std::uint64_t>& claim_word(std::size_t slot) const;
    /// Whether the word of `slot` says some byte of its allocation is claimed.
    [[nodiscard]] bool claimed(std::size_t slot) const {
        return claim_word(slot).load(std::memory_order_acquire) != 0;
    }
    /// A free slot, taken; none when `slots` allocations are shared already. Owner only.
    [[nodiscard]] std::optional<std::size_t> take_slot();
    /// Gives `slot` back. Owner only.
    void give_slot(std::size_t slot);

    /// Records that `device` granted `accessor` (a device of rank `accessor.rank`); false when
    /// either index is past `devices_max`. Owner only.
    bool grant(std::uint32_t device, const ServiceId& accessor);
    /// Whether `device` granted `accessor`.
    [[nodiscard]] bool granted(std::uint32_t device, const ServiceId& accessor) const;
    /// The counter of stream slot `slot` (below `stream_slots`), for the owner's device to
    /// advance.
    [[nodiscard]] std::atomic<std::uint64_t>& stream_counter(std::size_t slot) const;
    /// The event sequence the counter of stream slot `slot` reached.
    [[nodiscard]] std::uint64_t stream_reached(std::size_t slot) const {
        return stream_counter(slot).load(std::memory_order_acquire);
    }

    /// The first event sequence of stream slot `slot` recorded after a failed wait, 0 for none:
    /// the owner sets it before it advances the counter past it.
    [[nodiscard]] std::atomic<std::uint64_t>& stream_failed_from(std::size_t slot) const;
    /// Whether event `sequence` of stream slot `slot` was recorded after a failed wait.
    [[nodiscard]] bool stream_failed_at(std::size_t slot, std::uint64_t sequence) const {
        const std::uint64_t from = stream_failed_from(slot).load(std::memory_order_acquire);
        return from != 0 && sequence >= from;
    }

    /// Records that `device` is lost (D1); false past `devices_max`. Owner only.
    bool lose(std::uint32_t device);
    /// Whether `device` is lost.
    [[nodiscard]] bool lost(std::uint32_t device) const;

    /// Records how this rank departs, before its connections close; only the first departure
    /// stays (a rank cut off and then abandoned was cut off). Owner only.
    void depart(const Departure& departure);
    /// How the board's rank departed; `Kind::none` while it lives in the job.
    [[nodiscard]] Departure departure() const;

private:
    JobBoard(std::string path, bool own, std::byte* data);
    [[nodiscard]] std::atomic<std::uint64_t>& word(std::size_t index) const;

    std::string path_;
    bool own_;
    std::byte* data_;
    std::vector<std::size_t> free_slots_;
};

}  // namespace tandem::job_detail
