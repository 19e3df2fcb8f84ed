#include "carried_failure.hpp"

#include <cstdint>
#include <string>

namespace tandem::mpi::detail {

CarriedFailure broadcast_failure(MPI_Comm comm, int from, const Status& read,
                                 const ClaimKey& source) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    std::string bytes = rank == from ? tandem::detail::encode_failure(read, source) : std::string();
    std::uint64_t size = bytes.size();
    MPI_Bcast(&size, 1, MPI_UINT64_T, from, comm);
    bytes.resize(size);
    MPI_Bcast(bytes.data(), static_cast<int>(size), MPI_BYTE, from, comm);
    return tandem::detail::decode_failure(bytes, from);
}

void send_failure(MPI_Comm comm, int to, int tag, const Status& read, const ClaimKey& source) {
    const std::string bytes = tandem::detail::encode_failure(read, source);
    const std::uint64_t size = bytes.size();
    MPI_Send(&size, 1, MPI_UINT64_T, to, tag, comm);
    MPI_Send(bytes.data(), static_cast<int>(size), MPI_BYTE, to, tag, comm);
}

CarriedFailure receive_failure(MPI_Comm comm, int from, int tag) {
    std::uint64_t size = 0;
    MPI_Recv(&size, 1, MPI_UINT64_T, from, tag, comm, MPI_STATUS_IGNORE);
    std::string bytes(size, '\0');
    MPI_Recv(bytes.data(), static_cast<int>(size), MPI_BYTE, from, tag, comm, MPI_STATUS_IGNORE);
    return tandem::detail::decode_failure(bytes, from);
}

}  // namespace tandem::mpi::detail
