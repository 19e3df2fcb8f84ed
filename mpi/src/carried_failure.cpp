#include "carried_failure.hpp"

#include "job/error_codec.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace tandem::mpi::detail {
namespace {

/// The words before a failure's bytes: their count, then the source's key.
using Header = std::array<std::uint64_t, 4>;

Header header_of(const std::string& bytes, const ClaimKey& source) {
    return {bytes.size(), source.memory.value, source.range.begin, source.range.end};
}

CarriedFailure decoded(const std::string& bytes, const Header& header, int from) {
    std::optional<Error> error = job_detail::decode_error(bytes);
    return CarriedFailure{error ? std::move(*error)
                                : Error::torn_down("rank " + std::to_string(from) +
                                                   "'s failure arrived unreadable"),
                          ClaimKey{MemoryId{header[1]}, ByteRange{header[2], header[3]}}};
}

/// `failure` as the report of `produced`, which work `name` on `device` would have written from
/// the failure's source: the hop comes first, before the hops the failure took already.
Error as_hop(const CarriedFailure& failure, const char* name, ServiceId device,
             const ClaimKey& produced) {
    SkipRecord hop{name, device, failure.source, {produced}};
    if (const auto* carried = failure.error.details_as<UnwrittenDetails>();
        carried != nullptr && carried->root != nullptr) {
        UnwrittenDetails details = *carried;
        details.chain.insert(details.chain.begin(), std::move(hop));
        return Error::unwritten(std::move(details));
    }
    UnwrittenDetails details;
    details.allocations = 1;
    details.chain = {std::move(hop)};
    details.root = std::make_shared<const Error>(failure.error);
    return Error::unwritten(std::move(details));
}

}  // namespace

CarriedFailure broadcast_failure(MPI_Comm comm, int from, const Status& read,
                                 const ClaimKey& source) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    std::string bytes = rank == from ? job_detail::encode(read.error()) : std::string();
    Header header = rank == from ? header_of(bytes, source) : Header{};
    MPI_Bcast(header.data(), static_cast<int>(header.size()), MPI_UINT64_T, from, comm);
    bytes.resize(header[0]);
    MPI_Bcast(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, from, comm);
    return decoded(bytes, header, from);
}

void send_failure(MPI_Comm comm, int to, int tag, const Status& read, const ClaimKey& source) {
    const std::string bytes = job_detail::encode(read.error());
    const Header header = header_of(bytes, source);
    MPI_Send(header.data(), static_cast<int>(header.size()), MPI_UINT64_T, to, tag, comm);
    MPI_Send(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, to, tag, comm);
}

CarriedFailure receive_failure(MPI_Comm comm, int from, int tag) {
    Header header{};
    MPI_Recv(header.data(), static_cast<int>(header.size()), MPI_UINT64_T, from, tag, comm,
             MPI_STATUS_IGNORE);
    std::string bytes(header[0], '\0');
    MPI_Recv(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, from, tag, comm,
             MPI_STATUS_IGNORE);
    return decoded(bytes, header, from);
}

Status claim_with(Client& device, const Handle& destination, const CarriedFailure& failure,
                  const char* name) {
    const Error claim = as_hop(failure, name, device.service(), destination.claim_key());
    ExternalCallables fails;
    fails.host = [claim](HostKernelContext&) -> Status { return claim; };
    fails.cuda = [claim](const DeviceWorkContext&) -> Status { return claim; };
    return device.enqueue(ExternalWork{name, {{destination, AccessMode::Write}}, std::move(fails)});
}

}  // namespace tandem::mpi::detail
