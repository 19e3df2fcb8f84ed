#pragma once

// A failure as it crosses between MPI ranks: the error whole (the job's error codec, so the
// receiver acts on the same fields a local reader would) and the key of the source it claims,
// and how a rank claims a buffer of its own with it, the collective as the hop.

#include "tandem/core/client.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/handle.hpp"

#include <mpi.h>

namespace tandem::mpi::detail {

/// What a rank whose source could not be read tells the others: why, and which bytes.
struct CarriedFailure {
    /// The error its read met: an `Unwritten` with its root and hops, or a lost device's.
    Error error;
    /// The source it read (its memory id carries its rank where its runtime knows one).
    ClaimKey source;
};

/// Rank `from`'s failure (`read`, of its `source`) on every rank of `comm`: collective.
CarriedFailure broadcast_failure(MPI_Comm comm, int from, const Status& read,
                                 const ClaimKey& source);
/// Sends `read`'s failure, of `source`, to rank `to` of `comm` under `tag`.
void send_failure(MPI_Comm comm, int to, int tag, const Status& read, const ClaimKey& source);
/// The failure rank `from` of `comm` sends under `tag`.
CarriedFailure receive_failure(MPI_Comm comm, int from, int tag);

/// Claims all of `destination` (of `device`) with `failure`, as work called `name` that could
/// not write it because it needed the failure's source: a read of it reports the root and the
/// hops, then this hop. Enqueued on the default stream, as the device's own work.
Status claim_with(Client& device, const Handle& destination, const CarriedFailure& failure,
                  const char* name);

}  // namespace tandem::mpi::detail
