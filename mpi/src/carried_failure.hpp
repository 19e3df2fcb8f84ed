#pragma once

// A failure as it crosses between MPI ranks: the bytes of a carried failure (core's
// api/carried_failure.hpp), counted, then the bytes, over the communicator.

#include "api/carried_failure.hpp"

#include <mpi.h>

namespace tandem::mpi::detail {

using tandem::detail::CarriedFailure;
using tandem::detail::claim_with;

/// Rank `from`'s failure (`read`, of its `source`) on every rank of `comm`: collective.
CarriedFailure broadcast_failure(MPI_Comm comm, int from, const Status& read,
                                 const ClaimKey& source);
/// Sends `read`'s failure, of `source`, to rank `to` of `comm` under `tag`.
void send_failure(MPI_Comm comm, int to, int tag, const Status& read, const ClaimKey& source);
/// The failure rank `from` of `comm` sends under `tag`.
CarriedFailure receive_failure(MPI_Comm comm, int from, int tag);

}  // namespace tandem::mpi::detail
