#pragma once

// What a rank can say of a buffer of its own part of a collective before any rank moves a byte.

#include "tandem/core/client.hpp"
#include "tandem/core/handle.hpp"

#include <cstdint>

namespace tandem::mpi::detail {

/// `InvalidArgument` for a buffer that is empty, not of `device`, no whole number of
/// `element`-byte elements, or of more elements than one MPI call takes (2^31 - 1).
Status check_buffer(const Client& device, const Handle& buffer, std::uint64_t element);

}  // namespace tandem::mpi::detail
