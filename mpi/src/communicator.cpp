#include "tandem/mpi/communicator.hpp"

#include "bf16_ops.hpp"
#include "buffer_check.hpp"
#include "carried_failure.hpp"

#include <array>
#include <climits>
#include <cstdint>
#include <span>
#include <string>
#include <utility>

namespace tandem::mpi {
namespace {

MPI_Datatype mpi_type(ElementType type) {
    switch (type) {
        case ElementType::f32:
            return MPI_FLOAT;
        case ElementType::f64:
            return MPI_DOUBLE;
        case ElementType::i32:
            return MPI_INT32_T;
        case ElementType::i64:
            return MPI_INT64_T;
        case ElementType::bf16:
            return detail::bf16_datatype();
    }
    return MPI_DATATYPE_NULL;
}

// MPI's own operations for the types it knows; tandem's for bf16, which it does not.
MPI_Op mpi_op(ElementType type, ReduceOp op) {
    if (type == ElementType::bf16) {
        return detail::bf16_op(op);
    }
    switch (op) {
        case ReduceOp::sum:
            return MPI_SUM;
        case ReduceOp::max:
            return MPI_MAX;
        case ReduceOp::min:
            return MPI_MIN;
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

}  // namespace

Result<Communicator> Communicator::create(MPI_Comm comm, Client device,
                                          CommunicatorOptions options) {
    if (!mpi_usable()) {
        return Error::invalid_argument(
            "MPI is not initialised, or already finalised: call MPI_Init first");
    }
    if (comm == MPI_COMM_NULL) {
        return Error::invalid_argument(
            "a communicator needs an MPI communicator, not "
            "MPI_COMM_NULL");
    }
    MPI_Comm own = MPI_COMM_NULL;
    MPI_Comm_dup(comm, &own);
    int rank = 0;
    int size = 0;
    MPI_Comm_rank(own, &rank);
    MPI_Comm_size(own, &size);
    return Communicator(own, std::move(device), rank, size, options);
}

Communicator::Communicator(MPI_Comm comm, Client device, int rank, int size,
                           CommunicatorOptions options)
    : comm_(comm), device_(std::move(device)), rank_(rank), size_(size), options_(options) {}

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
      options_(other.options_),
      staging_(std::move(other.staging_)),
      landing_(std::move(other.landing_)) {}

Communicator& Communicator::operator=(Communicator&& other) noexcept {
    if (this != &other) {
        if (comm_ != MPI_COMM_NULL && mpi_usable()) {
            MPI_Comm_free(&comm_);
        }
        comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
        device_ = other.device_;
        rank_ = other.rank_;
        size_ = other.size_;
        options_ = other.options_;
        staging_ = std::move(other.staging_);
        landing_ = std::move(other.landing_);
    }
    return *this;
}

Communicator::Agreement Communicator::agree(const Status& local, std::uint64_t bytes,
                                            bool unreadable) {
    // One all-reduce of four words, the largest of each: the highest rank (plus one) that
    // refused its part, the largest size, the complement of the smallest, and the size less the
    // lowest rank whose source could not be read.
    std::array<std::uint64_t, 4> words{
        local ? 0 : static_cast<std::uint64_t>(rank_) + 1, local ? bytes : 0, local ? ~bytes : 0,
        unreadable ? static_cast<std::uint64_t>(size_ - rank_) : 0};
    MPI_Allreduce(MPI_IN_PLACE, words.data(), 4, MPI_UINT64_T, MPI_MAX, comm_);
    const int first_unreadable = size_ - static_cast<int>(words[3]);
    if (!local) {
        return {local, first_unreadable};
    }
    if (words[0] != 0) {
        return {Error::invalid_argument("rank " + std::to_string(words[0] - 1) +
                                        " refused its part of the collective, so no rank runs it"),
                first_unreadable};
    }
    if (words[1] != ~words[2]) {
        return {Error::invalid_argument("the ranks' buffers differ in size (from " +
                                        std::to_string(~words[2]) + " to " +
                                        std::to_string(words[1]) +
                                        " bytes), so no rank runs the collective"),
                first_unreadable};
    }
    return {Status{}, first_unreadable};
}

Status Communicator::spread_failure(const Handle& source, const Handle& destination, int from,
                                    const Status& read, const char* collective) {
    // Rank `from` sends its failure and the key of its source; every rank learns the same, and
    // every destination is claimed with it, but a source that is its own destination on the
    // rank it failed on: that claim is the failure the others get.
    const detail::CarriedFailure failure = detail::broadcast_failure(
        comm_, from, read, rank_ == from ? source.claim_key() : ClaimKey{});
    if (rank_ == from && destination.claim_key() == source.claim_key()) {
        return {};
    }
    return detail::claim_with(device_, destination, failure, collective);
}

std::optional<std::span<std::byte>> Communicator::host_bytes(const Handle& buffer) {
    if (!options_.host_memory_in_place) {
        return std::nullopt;
    }
    Result<NativeView> view = device_.native(buffer);
    if (!view || view->on_gpu || view->pointer == nullptr) {
        return std::nullopt;
    }
    return std::span(static_cast<std::byte*>(view->pointer), buffer.size_in_use());
}

Result<Communicator::Bytes> Communicator::read_source(const Handle& buffer) {
    // Every writer of its bytes first, on any device, and none of them may have failed (C6);
    // then the bytes where they are, or a copy into the staging buffer this communicator keeps
    // from call to call, so a large buffer is not a fresh allocation (and its page faults) every
    // time.
    const Handle handles[] = {buffer};
    if (Status ready = device_.sync(handles); !ready) {
        return ready.error();
    }
    if (std::optional<std::span<std::byte>> own = host_bytes(buffer)) {
        return Bytes{*own, true};
    }
    if (staging_.size() < buffer.size_in_use()) {
        staging_.resize(buffer.size_in_use());
    }
    const std::span<std::byte> staged(staging_.data(), buffer.size_in_use());
    Result<PendingRead> read = device_.read_async(buffer, staged, device_.default_stream());
    if (Status landed = read ? device_.wait(*read) : Status(read.error()); !landed) {
        return landed.error();
    }
    return Bytes{staged, false};
}

Communicator::Bytes Communicator::landing(const Handle& destination,
                                          std::span<const std::byte> source) {
    const std::uint64_t bytes = destination.size_in_use();
    if (std::optional<std::span<std::byte>> own = host_bytes(destination)) {
        const bool apart = own->data() + own->size() <= source.data() ||
                           source.data() + source.size() <= own->data();
        // A claimed byte, or pending work of this device on them, makes this fail: a write then
        // releases the claims and lands after that work.
        const Handle handles[] = {destination};
        if (apart && device_.sync(handles)) {
            return Bytes{*own, true};
        }
    }
    if (landing_.size() < bytes) {
        landing_.resize(bytes);
    }
    return Bytes{std::span(landing_.data(), bytes), false};
}

Status Communicator::land(const Handle& destination, const Bytes& bytes) {
    return bytes.in_place ? Status{} : device_.write(destination, bytes.span);
}

Communicator::Gate Communicator::gate(const Status& local, std::uint64_t bytes,
                                      const Handle& source, const Handle& destination,
                                      const char* name, std::optional<int> root) {
    // The source is read before the ranks agree, so that one small all-reduce says both whether
    // every call is valid and whether every source could be read; reading changes nothing, so
    // a call refused after it is refused as if nothing happened.
    const bool reads = local && (!root || rank_ == *root);
    Result<Bytes> read = reads ? read_source(source) : Result<Bytes>(Bytes{});
    const Status readable = read ? Status{} : Status(read.error());
    const Agreement agreed = agree(local, bytes, !readable);
    if (!agreed.valid) {
        return {agreed.valid, {}};
    }
    if (agreed.first_unreadable != size_) {
        return {spread_failure(source, destination, agreed.first_unreadable, readable, name), {}};
    }
    return {std::nullopt, *read};
}

Status Communicator::all_reduce(const Handle& buffer, ElementType type, ReduceOp op) {
    const std::uint64_t element = element_size(type);
    Gate gated = gate(detail::check_buffer(device_, buffer, element),
                      buffer.empty() ? 0 : buffer.size_in_use(), buffer, buffer, "mpi all_reduce");
    if (gated.ended) {
        return *gated.ended;
    }
    // The source was readable, so no byte of it is claimed: in place there is nothing to release.
    const Bytes& bytes = gated.source;
    MPI_Allreduce(MPI_IN_PLACE, bytes.span.data(), static_cast<int>(bytes.span.size() / element),
                  mpi_type(type), mpi_op(type, op), comm_);
    return land(buffer, bytes);
}

Status Communicator::broadcast(const Handle& buffer, int root) {
    if (root < 0 || root >= size_) {
        // Every rank sees the same root and refuses alike: nothing to agree on.
        return Error::invalid_argument("rank " + std::to_string(root) +
                                       " is no rank of a communicator of " + std::to_string(size_));
    }
    Gate gated = gate(detail::check_buffer(device_, buffer, 1),
                      buffer.empty() ? 0 : buffer.size_in_use(), buffer, buffer, "mpi broadcast",
                      root);
    if (gated.ended) {
        return *gated.ended;
    }
    // The root sends its source and keeps it; every other rank's buffer is a destination.
    const Bytes bytes = rank_ == root ? gated.source : landing(buffer, {});
    MPI_Bcast(bytes.span.data(), static_cast<int>(bytes.span.size()), MPI_BYTE, root, comm_);
    return rank_ == root ? Status{} : land(buffer, bytes);
}

Status Communicator::check_pair(const Handle& small, const Handle& large,
                                std::uint64_t element) const {
    if (Status each = detail::check_buffer(device_, small, element); !each) {
        return each;
    }
    if (Status each = detail::check_buffer(device_, large, element); !each) {
        return each;
    }
    if (large.size_in_use() / static_cast<std::uint64_t>(size_) != small.size_in_use() ||
        large.size_in_use() % static_cast<std::uint64_t>(size_) != 0) {
        return Error::invalid_argument("a buffer of " + std::to_string(large.size_in_use()) +
                                       " bytes is not " + std::to_string(size_) + " times one of " +
                                       std::to_string(small.size_in_use()));
    }
    return {};
}

Status Communicator::all_gather(const Handle& input, const Handle& output) {
    Gate gated = gate(check_pair(input, output, 1), input.empty() ? 0 : input.size_in_use(),
                      input, output, "mpi all_gather");
    if (gated.ended) {
        return *gated.ended;
    }
    const std::span<std::byte> source = gated.source.span;
    const Bytes gathered = landing(output, source);
    MPI_Allgather(source.data(), static_cast<int>(source.size()), MPI_BYTE, gathered.span.data(),
                  static_cast<int>(source.size()), MPI_BYTE, comm_);
    return land(output, gathered);
}

Status Communicator::reduce_scatter(const Handle& input, const Handle& output, ElementType type,
                                    ReduceOp op) {
    const std::uint64_t element = element_size(type);
    Gate gated = gate(check_pair(output, input, element), input.empty() ? 0 : input.size_in_use(),
                      input, output, "mpi reduce_scatter");
    if (gated.ended) {
        return *gated.ended;
    }
    const Bytes chunk = landing(output, gated.source.span);
    MPI_Reduce_scatter_block(gated.source.span.data(), chunk.span.data(),
                             static_cast<int>(chunk.span.size() / element), mpi_type(type),
                             mpi_op(type, op), comm_);
    return land(output, chunk);
}

}  // namespace tandem::mpi
