#include "tandem/mpi/communicator.hpp"

#include "job/error_codec.hpp"

#include <array>
#include <climits>
#include <cstdint>
#include <string>
#include <span>
#include <utility>

namespace tandem::mpi {
namespace {

MPI_Datatype mpi_type(ElementType type) {
    switch (type) {
        case ElementType::f32: return MPI_FLOAT;
        case ElementType::f64: return MPI_DOUBLE;
        case ElementType::i32: return MPI_INT32_T;
        case ElementType::i64: return MPI_INT64_T;
    }
    return MPI_DATATYPE_NULL;
}

MPI_Op mpi_op(ReduceOp op) {
    switch (op) {
        case ReduceOp::sum: return MPI_SUM;
        case ReduceOp::max: return MPI_MAX;
        case ReduceOp::min: return MPI_MIN;
    }
    return MPI_OP_NULL;
}

bool mpi_usable() {
    int initialised = 0;
    int finalised = 0;
    MPI_Initialized(&initialised);
    MPI_Finalized(&finalised);
    return initialised != 0 && finalised == 0;
}

/// What this rank can say of its own part before any rank moves a byte.
Status check_buffer(const Client& device, const Handle& buffer, std::uint64_t element) {
    if (buffer.empty()) {
        return Error::invalid_argument("a collective takes a buffer, not an empty handle");
    }
    if (buffer.service() != device.service()) {
        return Error::invalid_argument("a collective takes a buffer of the communicator's device "
                                       "on this rank");
    }
    const std::uint64_t bytes = buffer.size_in_use();
    if (bytes % element != 0) {
        return Error::invalid_argument("a buffer of " + std::to_string(bytes) +
                                       " bytes is no whole number of " + std::to_string(element) +
                                       "-byte elements");
    }
    if (bytes / element > static_cast<std::uint64_t>(INT_MAX)) {
        return Error::invalid_argument("a collective through MPI takes at most " +
                                       std::to_string(INT_MAX) + " elements");
    }
    return {};
}

/// `error` as the report of this rank's buffer, which the collective would have written from
/// `from` (a rank's buffer, `needed`): the hop is the collective on this rank's device.
Error as_hop(Error error, const char* collective, ServiceId device, ClaimKey needed,
             ClaimKey produced) {
    SkipRecord hop{collective, device, needed, {produced}};
    if (const auto* carried = error.details_as<UnwrittenDetails>();
        carried != nullptr && carried->root != nullptr) {
        UnwrittenDetails details = *carried;
        details.chain.insert(details.chain.begin(), std::move(hop));
        return Error::unwritten(std::move(details));
    }
    UnwrittenDetails details;
    details.allocations = 1;
    details.chain = {std::move(hop)};
    details.root = std::make_shared<const Error>(std::move(error));
    return Error::unwritten(std::move(details));
}

}  // namespace

Result<Communicator> Communicator::create(MPI_Comm comm, Client device) {
    if (!mpi_usable()) {
        return Error::invalid_argument(
            "MPI is not initialised, or already finalised: call MPI_Init first");
    }
    if (comm == MPI_COMM_NULL) {
        return Error::invalid_argument("a communicator needs an MPI communicator, not "
                                       "MPI_COMM_NULL");
    }
    MPI_Comm own = MPI_COMM_NULL;
    MPI_Comm_dup(comm, &own);
    int rank = 0;
    int size = 0;
    MPI_Comm_rank(own, &rank);
    MPI_Comm_size(own, &size);
    return Communicator(own, std::move(device), rank, size);
}

Communicator::Communicator(MPI_Comm comm, Client device, int rank, int size)
    : comm_(comm), device_(std::move(device)), rank_(rank), size_(size) {}

Communicator::~Communicator() {
    if (comm_ != MPI_COMM_NULL && mpi_usable()) {
        MPI_Comm_free(&comm_);
    }
}

Communicator::Communicator(Communicator&& other) noexcept
    : comm_(std::exchange(other.comm_, MPI_COMM_NULL)),
      device_(other.device_),
      rank_(other.rank_),
      size_(other.size_),
      staging_(std::move(other.staging_)) {}

Communicator& Communicator::operator=(Communicator&& other) noexcept {
    if (this != &other) {
        if (comm_ != MPI_COMM_NULL && mpi_usable()) {
            MPI_Comm_free(&comm_);
        }
        comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
        device_ = other.device_;
        rank_ = other.rank_;
        size_ = other.size_;
        staging_ = std::move(other.staging_);
    }
    return *this;
}

Status Communicator::agree_on_call(const Status& local, std::uint64_t bytes) {
    // One all-reduce of three words: the highest rank (plus one) that refused its part, the
    // largest size and the complement of the smallest.
    std::array<std::uint64_t, 3> words{local ? 0 : static_cast<std::uint64_t>(rank_) + 1,
                                       local ? bytes : 0, local ? ~bytes : 0};
    MPI_Allreduce(MPI_IN_PLACE, words.data(), 3, MPI_UINT64_T, MPI_MAX, comm_);
    if (!local) {
        return local;
    }
    if (words[0] != 0) {
        return Error::invalid_argument("rank " + std::to_string(words[0] - 1) +
                                       " refused its part of the collective, so no rank runs it");
    }
    if (words[1] != ~words[2]) {
        return Error::invalid_argument("the ranks' buffers differ in size (from " +
                                       std::to_string(~words[2]) + " to " +
                                       std::to_string(words[1]) + " bytes), so no rank runs the "
                                       "collective");
    }
    return {};
}

int Communicator::first_unreadable(bool unreadable) const {
    int first = unreadable ? rank_ : size_;
    MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, comm_);
    return first;
}

Status Communicator::spread_failure(const Handle& buffer, int from, const Status& read,
                                    const char* collective) {
    // Rank `from` sends its failure and the key of its buffer; every rank learns the same.
    std::string report;
    std::array<std::uint64_t, 4> header{};
    if (rank_ == from) {
        report = job_detail::encode(read.error());
        const ClaimKey key = buffer.claim_key();
        header = {report.size(), key.memory.value, key.range.begin, key.range.end};
    }
    MPI_Bcast(header.data(), 4, MPI_UINT64_T, from, comm_);
    report.resize(header[0]);
    MPI_Bcast(report.data(), static_cast<int>(report.size()), MPI_BYTE, from, comm_);
    if (rank_ == from) {
        return {};  // Its buffer is claimed already: that claim is the failure the others get.
    }
    std::optional<Error> decoded = job_detail::decode_error(report);
    Error failure = decoded ? std::move(*decoded)
                            : Error::torn_down("rank " + std::to_string(from) +
                                               "'s failure arrived unreadable");
    const ClaimKey needed{MemoryId{header[1]}, ByteRange{header[2], header[3]}};
    Error claim = as_hop(std::move(failure), collective, device_.service(), needed,
                         buffer.claim_key());
    ExternalCallables fails;
    fails.host = [claim](HostKernelContext&) -> Status { return claim; };
    fails.cuda = [claim](const DeviceWorkContext&) -> Status { return claim; };
    return device_.enqueue(ExternalWork{collective, {{buffer, AccessMode::Write}}, fails});
}

Status Communicator::read_source(const Handle& buffer) {
    // Every writer of its bytes first, on any device, and none of them may have failed (C6);
    // then a copy into the staging buffer this communicator keeps from call to call, so a large
    // buffer is not a fresh allocation (and its page faults) every time.
    const Handle handles[] = {buffer};
    if (Status ready = device_.sync(handles); !ready) {
        return ready;
    }
    if (staging_.size() < buffer.size_in_use()) {
        staging_.resize(buffer.size_in_use());
    }
    Result<PendingRead> read = device_.read_async(
        buffer, std::span(staging_.data(), buffer.size_in_use()), device_.default_stream());
    return read ? device_.wait(*read) : Status(read.error());
}

Status Communicator::all_reduce(const Handle& buffer, ElementType type, ReduceOp op) {
    const std::uint64_t element = element_size(type);
    if (Status agreed = agree_on_call(check_buffer(device_, buffer, element),
                                      buffer.empty() ? 0 : buffer.size_in_use());
        !agreed) {
        return agreed;
    }
    const Status read = read_source(buffer);
    if (const int from = first_unreadable(!read); from != size_) {
        return spread_failure(buffer, from, read, "mpi all_reduce");
    }
    const std::uint64_t bytes = buffer.size_in_use();
    MPI_Allreduce(MPI_IN_PLACE, staging_.data(), static_cast<int>(bytes / element),
                  mpi_type(type), mpi_op(op), comm_);
    return device_.write(buffer, std::span(staging_.data(), bytes));
}

Status Communicator::broadcast(const Handle& buffer, int root) {
    if (root < 0 || root >= size_) {
        // Every rank sees the same root and refuses alike: nothing to agree on.
        return Error::invalid_argument("rank " + std::to_string(root) +
                                       " is no rank of a communicator of " +
                                       std::to_string(size_));
    }
    if (Status agreed = agree_on_call(check_buffer(device_, buffer, 1),
                                      buffer.empty() ? 0 : buffer.size_in_use());
        !agreed) {
        return agreed;
    }
    const std::uint64_t bytes = buffer.size_in_use();
    const Status read = rank_ == root ? read_source(buffer) : Status{};
    if (first_unreadable(!read) != size_) {
        return spread_failure(buffer, root, read, "mpi broadcast");
    }
    if (staging_.size() < bytes) {
        staging_.resize(bytes);
    }
    MPI_Bcast(staging_.data(), static_cast<int>(bytes), MPI_BYTE, root, comm_);
    return rank_ == root ? Status{} : device_.write(buffer, std::span(staging_.data(), bytes));
}

}  // namespace tandem::mpi
