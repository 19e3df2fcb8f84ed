#pragma once

// The rendezvous: a rank takes its seat in the job folder, listens on its socket, connects to
// every rank below it and accepts every rank above it, until each pair of ranks shares one
// connection. Every connection starts with a hello (rank, world size, job id) and its answer, so
// a process of another job, another world size or a rank already connected is refused, and the
// process that sent the hello learns why. Once every other rank is connected every rank has
// come: the rendezvous is the join's barrier, with no message of its own.

#include "rank_link.hpp"

#include "tandem/job.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace tandem::job_detail {

/// A rank's seat in the job folder: an exclusive lock on `rank-R.lock`, holding the process id.
/// A second process that takes the same rank of the job finds the seat taken. Move-only; the
/// seat's file is removed when it is released.
class RankSeat {
public:
    /// Takes rank `rank`'s seat in `folder`. `InvalidArgument` naming the process that holds it
    /// when another live process has it (the rank joined twice).
    static Result<RankSeat> take(const std::string& folder, std::uint32_t rank,
                                 const std::string& job_id);
    RankSeat(RankSeat&& other) noexcept;
    RankSeat& operator=(RankSeat&& other) noexcept;
    RankSeat(const RankSeat&) = delete;
    RankSeat& operator=(const RankSeat&) = delete;
    ~RankSeat();
    /// Removes the seat's file and gives the lock up. Idempotent.
    void release();

private:
    RankSeat(std::string path, int descriptor) : path_(std::move(path)), descriptor_(descriptor) {}
    std::string path_;
    int descriptor_ = -1;
};

/// One other rank's connection after the rendezvous.
struct RankConnection {
    /// The connection, or -1 for this rank's own entry.
    int descriptor = -1;
    /// The peer's process id, as SO_PEERCRED gave it.
    std::int64_t pid = 0;
};

/// Connects this rank (`environment.rank`, seated already) with every other rank of the job,
/// within `timeout`. One entry a rank, this rank's own with no connection. `PeerUnreachable`
/// naming the ranks that never came in time; `InvalidArgument` when a peer refused this rank's
/// hello (another job id or world size, this rank connected already), saying why. On an error every
/// connection made is closed and this rank's socket removed.
Result<std::vector<RankConnection>> rendezvous(const JobEnvironment& environment,
                                               std::chrono::milliseconds timeout);

}  // namespace tandem::job_detail
