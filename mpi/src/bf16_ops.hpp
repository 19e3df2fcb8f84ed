#pragma once

// The MPI reductions of bf16 elements. MPI has no bfloat16 type, so a bf16 element crosses as an
// MPI_UINT16_T and is reduced by operations of tandem's own, whose steps are
// tandem/core/bfloat16.hpp's: the same bytes as the catalog's `combine` gives on a device. The
// other element types keep MPI's built-in operations, which MPI may run faster (vectorised,
// or in the network).

#include "tandem/core/collectives.hpp"

#include <mpi.h>

namespace tandem::mpi::detail {

/// The datatype a bf16 element crosses MPI as: 2 bytes, which only `bf16_op` reduces.
inline MPI_Datatype bf16_datatype() { return MPI_UINT16_T; }

/// The MPI operation that reduces bf16 elements by `op`, commutative (so MPI may fold the ranks
/// in any order, as it does its own). Made on the first call, once per process, and freed
/// when MPI is finalised; `MPI_OP_NULL` for an operation tandem does not know.
MPI_Op bf16_op(ReduceOp op);

}  // namespace tandem::mpi::detail
