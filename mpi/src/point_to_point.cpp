// A send and its receive between two ranks of a communicator (rule K2): the receiver says first
// what it can take, the sender answers with the bytes, its source's failure, or a refusal, so
// neither waits for a message the other will never send.

#include "buffer_check.hpp"
#include "carried_failure.hpp"
#include "tandem/mpi/communicator.hpp"

#include <array>
#include <cstdint>
#include <string>

namespace tandem::mpi {
namespace {

/// The tag of tandem's point-to-point messages on its own duplicate of the communicator.
constexpr int transfer_tag = 0x7a4d;
/// What a receiver announces when it refuses its part.
constexpr std::uint64_t refused = ~std::uint64_t{0};

/// What the sender answers.
enum class Answer : std::uint64_t { bytes = 0, failure = 1, refusal = 2 };

Status no_such_peer(int rank, int size, int self) {
    return Error::invalid_argument("rank " + std::to_string(rank) +
                                   " is not another rank of a communicator of " +
                                   std::to_string(size) + " (this rank is " +
                                   std::to_string(self) + ")");
}

}  // namespace

Status Communicator::send(const Handle& source, int to) {
    if (to < 0 || to >= size_ || to == rank_) {
        return no_such_peer(to, size_, rank_);  // No receiver waits on a rank that is none.
    }
    std::uint64_t wanted = 0;
    MPI_Recv(&wanted, 1, MPI_UINT64_T, to, transfer_tag, comm_, MPI_STATUS_IGNORE);
    Status local = detail::check_buffer(device_, source, 1);
    if (local && wanted != refused && wanted != source.size_in_use()) {
        local = Error::invalid_argument("rank " + std::to_string(to) + " receives " +
                                        std::to_string(wanted) + " bytes, not the " +
                                        std::to_string(source.size_in_use()) + " sent");
    }
    Result<Bytes> read = local && wanted != refused ? read_source(source) : Result<Bytes>(Bytes{});
    const Answer answer = !local || wanted == refused ? Answer::refusal
                          : read                      ? Answer::bytes
                                                      : Answer::failure;
    const auto word = static_cast<std::uint64_t>(answer);
    MPI_Send(&word, 1, MPI_UINT64_T, to, transfer_tag, comm_);
    if (answer == Answer::bytes) {
        MPI_Send(read->span.data(), static_cast<int>(read->span.size()), MPI_BYTE, to,
                 transfer_tag, comm_);
        return {};
    }
    if (answer == Answer::failure) {
        const Status failure(read.error());
        detail::send_failure(comm_, to, transfer_tag, failure, source.claim_key());
        return failure;  // K2: the source's failure, and no claim on this rank.
    }
    return local ? Status(Error::invalid_argument("rank " + std::to_string(to) +
                                                  " refused to receive: nothing was sent"))
                 : local;
}

Status Communicator::recv(const Handle& target, int from) {
    if (from < 0 || from >= size_ || from == rank_) {
        return no_such_peer(from, size_, rank_);
    }
    const Status local = detail::check_buffer(device_, target, 1);
    const std::uint64_t wanted = local ? target.size_in_use() : refused;
    MPI_Send(&wanted, 1, MPI_UINT64_T, from, transfer_tag, comm_);
    std::uint64_t word = 0;
    MPI_Recv(&word, 1, MPI_UINT64_T, from, transfer_tag, comm_, MPI_STATUS_IGNORE);
    switch (static_cast<Answer>(word)) {
        case Answer::bytes: {
            const Bytes bytes = landing(target, {});
            MPI_Recv(bytes.span.data(), static_cast<int>(bytes.span.size()), MPI_BYTE, from,
                     transfer_tag, comm_, MPI_STATUS_IGNORE);
            return land(target, bytes);  // C3: a claimed target is written back, released.
        }
        case Answer::failure:
            // K2: the target is claimed with the sender's failure and the hop; the call succeeds.
            return detail::claim_with(device_, target,
                                      detail::receive_failure(comm_, from, transfer_tag),
                                      "mpi recv");
        case Answer::refusal: break;
    }
    return local ? Status(Error::invalid_argument("rank " + std::to_string(from) +
                                                  " refused the send (a source of another size, "
                                                  "or one not of its device): nothing landed"))
                 : local;
}

}  // namespace tandem::mpi
