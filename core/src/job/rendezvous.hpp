#pragma once

// The rendezvous: a rank takes its seat in the job folder, listens on its socket, connects to
// every rank below it and accepts every rank above it, until each pair of ranks shares one
// connection. Every connection starts with a hello (rank, world size, job id) and its answer, so
// a process of another job, another world size or a rank already connected is refused, and the
// process that sent the hello learns why. Once every other rank is connected every rank has
// come: the rendezvous is the join's barrier, with no message of its own.

#include "rank_link.hpp"
#include "rank_seat.hpp"

#include "tandem/job.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace tandem::job_detail {

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
