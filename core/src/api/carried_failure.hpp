#pragma once

// A failure as it crosses between ranks of a collective that a library outside tandem carries
// (MPI, NCCL): the error whole (the job's error codec, so the receiver acts on the same fields a
// local reader would) and the key of the source it claims, as bytes any transport moves; and
// how a rank claims a buffer of its own with it, the collective as the hop.

#include "tandem/core/client.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/handle.hpp"

#include <string>
#include <string_view>

namespace tandem::detail {

/// What a rank whose source could not be read tells the others: why, and which bytes.
struct CarriedFailure {
    /// The error its read met: an `Unwritten` with its root and hops, or a lost device's.
    Error error;
    /// The source it read (its memory id carries its rank where its runtime knows one).
    ClaimKey source;
};

/// `read`'s failure, of `source`, as bytes to send (self-delimiting: nothing else is needed to
/// decode them).
[[nodiscard]] std::string encode_failure(const Status& read, const ClaimKey& source);

/// The failure rank `from` sent as `bytes`; one that arrived unreadable (cut short, of another
/// version) is a `TornDown` naming the rank, so a receiver claims its buffer all the same.
[[nodiscard]] CarriedFailure decode_failure(std::string_view bytes, int from);

/// Claims all of `destination` (of `device`) with `failure`, as work called `name` that could
/// not write it because it needed the failure's source: a read of it reports the root and the
/// hops, then this hop. Enqueued on the default stream, as the device's own work.
Status claim_with(Client& device, const Handle& destination, const CarriedFailure& failure,
                  const char* name);

}  // namespace tandem::detail
