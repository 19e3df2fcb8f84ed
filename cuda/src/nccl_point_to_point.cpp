// A send and its receive through NCCL (tandem/cuda/nccl.hpp): only the two ranks meet. The two
// ends first give each other a few words (an NCCL send and receive in one group): whether each
// takes its part, its size, and whether the sender's source could be read. A claimed source
// moves nothing: its failure goes instead, and the receiver claims its target with it (K2).

#include "nccl_state.hpp"

#include <string>

namespace tandem::cuda {
namespace {

/// `InvalidArgument` unless `rank` is another rank of a communicator of `size`, where this one
/// is `self`.
Status check_other_rank(std::string_view call, int rank, int self, int size) {
    if (rank < 0 || rank >= size || rank == self) {
        return Error::invalid_argument(std::string(call) + ": rank " + std::to_string(rank) +
                                       " is not another rank of a communicator of " +
                                       std::to_string(size));
    }
    return {};
}

/// The error both ends return when `mine` and `theirs` (of rank `peer`) do not pair up; none
/// when they do.
std::optional<Error> mismatch(const NcclCommunicator::State::PairWords& mine,
                              const NcclCommunicator::State::PairWords& theirs, int peer) {
    if (theirs.refused) {
        return Error::invalid_argument("rank " + std::to_string(peer) +
                                       " refused its part of the transfer, so nothing moves");
    }
    if (mine.bytes != theirs.bytes) {
        return Error::invalid_argument("the transfer's buffers differ in size (" +
                                       std::to_string(mine.bytes) + " bytes here, " +
                                       std::to_string(theirs.bytes) + " on rank " +
                                       std::to_string(peer) + "), so nothing moves");
    }
    return std::nullopt;
}

}  // namespace

Status NcclCommunicator::send(const Handle& source, int to) {
    if (Status other = check_other_rank("send", to, rank(), size()); !other) {
        return other;
    }
    State& state = *state_;
    if (Status works = state.usable(); !works) {
        return works;
    }
    const Status valid = check_nccl_buffer(device(), "send", "buffer", source,
                                           source.empty() ? 0 : source.size_in_use(), 1);
    const Status read = valid ? state.device.sync(std::span(&source, 1)) : Status{};
    const std::string encoded =
        read ? std::string() : detail::encode_failure(read, source.claim_key());
    const State::PairWords mine{!valid, valid ? source.size_in_use() : 0, !read,
                                sizeof(std::uint64_t) + encoded.size()};
    Result<State::PairWords> theirs = state.exchange_words(to, mine);
    if (!theirs) {
        return theirs.error();
    }
    if (!valid) {
        return valid;
    }
    if (std::optional<Error> unpaired = mismatch(mine, *theirs, to)) {
        return *unpaired;
    }
    if (!read) {
        // The failure goes in place of the bytes; nothing here is claimed.
        Result<detail::CarriedFailure> sent =
            state.carry_between(rank(), to, encoded, mine.failure_bytes);
        return sent ? read : Status(sent.error());
    }
    const nccl::Communicator comm = state.communicator;
    const NcclEntryPoints* entry = state.nccl;
    return state.run("nccl send", {{source, AccessMode::Read}},
                     [comm, entry, to, bytes = mine.bytes](const DeviceWorkContext& context) {
                         return entry->send(context.pointers[0], bytes, nccl::DataType::uint8, to,
                                            comm, context.stream);
                     });
}

Status NcclCommunicator::recv(const Handle& target, int from) {
    if (Status other = check_other_rank("recv", from, rank(), size()); !other) {
        return other;
    }
    State& state = *state_;
    if (Status works = state.usable(); !works) {
        return works;
    }
    const Status valid = check_nccl_buffer(device(), "recv", "buffer", target,
                                           target.empty() ? 0 : target.size_in_use(), 1);
    const State::PairWords mine{!valid, valid ? target.size_in_use() : 0, false, 0};
    Result<State::PairWords> theirs = state.exchange_words(from, mine);
    if (!theirs) {
        return theirs.error();
    }
    if (!valid) {
        return valid;
    }
    if (std::optional<Error> unpaired = mismatch(mine, *theirs, from)) {
        return *unpaired;
    }
    if (theirs->unreadable) {
        Result<detail::CarriedFailure> failure =
            state.carry_between(from, rank(), {}, theirs->failure_bytes);
        return failure ? detail::claim_with(state.device, target, *failure, "nccl recv")
                       : Status(failure.error());
    }
    const nccl::Communicator comm = state.communicator;
    const NcclEntryPoints* entry = state.nccl;
    Status received =
        state.run("nccl recv", {{target, AccessMode::Write}},
                  [comm, entry, from, bytes = mine.bytes](const DeviceWorkContext& context) {
                      return entry->receive(context.pointers[0], bytes, nccl::DataType::uint8, from,
                                            comm, context.stream);
                  });
    if (!received) {
        (void)detail::claim_with(state.device, target, {received.error(), target.claim_key()},
                                 "nccl recv");
    }
    return received;
}

}  // namespace tandem::cuda
