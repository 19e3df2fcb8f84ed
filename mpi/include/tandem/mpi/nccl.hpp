#pragma once

// An NCCL communicator over the ranks of an MPI communicator: MPI bootstraps it, so a job that
// mpirun starts across hosts gets NCCL between its GPUs without a `Job` (which is one host's).
// Rank 0 makes NCCL's unique id and MPI broadcasts it, with the reason when rank 0 could not
// make one, so every rank fails alike instead of waiting in NCCL for an id that never comes.
// Needs both the `mpi` and the `cuda` components (installed only where both are built).

#include "tandem/cuda/nccl.hpp"

#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string>

namespace tandem::mpi {

/// Every rank of `comm` (its MPI rank, of `comm`'s size), each giving buffers of its `device`, a
/// CUDA device of its own. Collective over `comm`, which the program initialised MPI for and
/// keeps alive while this call runs; the communicator is NCCL's alone after it (a lost rank is
/// not noticed as a `Job` notices it: Open MPI ends the job). Errors, the same on every rank for
/// what rank 0 decides: `InvalidArgument` when MPI is not initialised (or finalised) or `comm`
/// is null, and when rank 0 could not make NCCL's unique id (NCCL not loaded, say), naming why;
/// then the errors of `cuda::NcclCommunicator::create`.
inline Result<cuda::NcclCommunicator> nccl_communicator(MPI_Comm comm, Client device,
                                                        cuda::NcclOptions options = {}) {
    int initialized = 0;
    int finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized == 0 || finalized != 0 || comm == MPI_COMM_NULL) {
        return Error::invalid_argument(
            "an NCCL communicator over MPI needs MPI initialised (and not finalised) and a "
            "communicator that is not MPI_COMM_NULL");
    }
    int rank = 0;
    int size = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    // What rank 0 sends: the id, or why it has none.
    struct Bootstrap {
        std::int32_t made = 0;
        std::array<std::byte, sizeof(cuda::NcclUniqueId::bytes)> id{};
        std::array<char, 512> why{};
    } bootstrap;
    if (rank == 0) {
        Result<cuda::NcclUniqueId> id = cuda::NcclCommunicator::unique_id();
        if (id) {
            bootstrap.made = 1;
            bootstrap.id = id->bytes;
        } else {
            const std::string why = id.error().message();
            std::memcpy(bootstrap.why.data(), why.data(),
                        std::min(why.size(), bootstrap.why.size() - 1));
        }
    }
    MPI_Bcast(&bootstrap, static_cast<int>(sizeof bootstrap), MPI_BYTE, 0, comm);
    if (bootstrap.made == 0) {
        return Error::invalid_argument(
            "rank 0 could not make NCCL's unique id, so no rank makes the communicator: " +
            std::string(bootstrap.why.data()));
    }
    cuda::NcclUniqueId id;
    id.bytes = bootstrap.id;
    return cuda::NcclCommunicator::create(std::move(device), rank, size, id, options);
}

}  // namespace tandem::mpi
