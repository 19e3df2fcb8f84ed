// The steps of every NCCL collective (nccl_state.hpp): agree, carry a failure, run NCCL's work
// and wait for it, abort.

#include "nccl_state.hpp"

#include "api/collective_steps.hpp"

#include <array>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <utility>

namespace tandem::cuda {
namespace {

using Clock = std::chrono::steady_clock;

/// How long a wait sleeps between looks once it has looked `polls` times: not at all at first
/// (most collectives end within microseconds), then briefly, so a long one costs no core.
void pause_after(int polls) {
    if (polls < 1000) {
        std::this_thread::yield();
    } else {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
}

/// Claims `collective`'s destination with `why`, as the collective that could not write it.
void claim_destination(Client& device, const NcclCollective& collective, const Error& why) {
    (void)detail::claim_with(device, *collective.destination,
                             {why, collective.destination->claim_key()}, collective.name);
}

}  // namespace

Status check_nccl_buffer(const Client& device, std::string_view collective, std::string_view role,
                         const Handle& buffer, std::uint64_t bytes, std::uint64_t element) {
    if (buffer.empty() || buffer.service() != device.service()) {
        return Error::invalid_argument(std::string(collective) + "'s " + std::string(role) +
                                       " must be a buffer of the communicator's device on this "
                                       "rank (" +
                                       to_string(device.service()) + ")");
    }
    return detail::check_buffer_size(collective, role, buffer, bytes, element);
}

Error nccl_error(const NcclEntryPoints& nccl, nccl::Result result, const std::string& what) {
    const bool peer = result == nccl::Result::remote_error || result == nccl::Result::system_error;
    return Error(peer ? ErrorKind::PeerUnreachable : ErrorKind::TornDown,
                 "NCCL: " + what + " failed: " + nccl.get_error_string(result));
}

void NcclCommunicator::State::request_abort(const Error& why) {
    std::lock_guard lock(mutex_);
    if (!abort_reason_) {
        abort_reason_ = why;
    }
}

std::optional<Error> NcclCommunicator::State::abort_reason() const {
    std::lock_guard lock(mutex_);
    return abort_reason_;
}

Error NcclCommunicator::State::abort_now(const Error& why) {
    request_abort(why);
    if (communicator != nullptr) {
        // Ends NCCL's work on the stream, wherever it waits; the communicator is freed.
        (void)nccl->comm_abort(std::exchange(communicator, nullptr));
    }
    return *abort_reason();
}

Status NcclCommunicator::State::usable() {
    std::optional<Error> aborted = abort_reason();
    return aborted ? Status(abort_now(*aborted)) : Status{};
}

std::optional<Error> NcclCommunicator::State::reason_to_abort(Clock::time_point deadline) const {
    if (std::optional<Error> asked = abort_reason()) {
        return asked;
    }
    nccl::Result async = nccl::Result::success;
    if (nccl->comm_get_async_error(communicator, &async) == nccl::Result::success &&
        async != nccl::Result::success && async != nccl::Result::in_progress) {
        return nccl_error(*nccl, async, "a collective of rank " + std::to_string(rank));
    }
    if (Clock::now() > deadline) {
        return Error(ErrorKind::PeerUnreachable, "an NCCL collective did not end within " +
                                                     std::to_string(options.timeout.count()) +
                                                     " ms on rank " + std::to_string(rank) +
                                                     " (another rank did not come, or hangs)");
    }
    return std::nullopt;
}

Status NcclCommunicator::State::wait(const Event& event) {
    const Clock::time_point deadline = Clock::now() + options.timeout;
    for (int polls = 0;; ++polls) {
        Result<bool> done = device.event_complete(event);
        if (!done) {
            return abort_now(done.error());  // The device is lost: the others must not wait.
        }
        if (*done) {
            return device.wait(event);
        }
        if (std::optional<Error> why = reason_to_abort(deadline)) {
            const Error aborted = abort_now(*why);
            // The abort ends NCCL's kernels; the stream then drains, and what follows the
            // collective on it runs. A stream that does not is a lost device's, and says so.
            (void)device.wait(event);
            return aborted;
        }
        pause_after(polls);
    }
}

Status NcclCommunicator::State::run(const char* name, std::vector<LaunchArgument> arguments,
                                    const NcclCall& call) {
    if (Status works = usable(); !works) {
        return works;
    }
    // What NCCL answered, kept past the call: a refusal means the other ranks wait in vain.
    auto answered = std::make_shared<std::atomic<nccl::Result>>(nccl::Result::success);
    ExternalCallables callables;
    callables.cuda = [call, answered, entry = nccl, name](const DeviceWorkContext& context) {
        const nccl::Result result = call(context);
        answered->store(result);
        return result == nccl::Result::success ? Status{}
                                               : Status(nccl_error(*entry, result, name));
    };
    if (Status enqueued = device.enqueue(ExternalWork{name, std::move(arguments), callables});
        !enqueued) {
        return enqueued;
    }
    Result<Event> event = device.record_event(device.default_stream());
    if (!event) {
        return abort_now(event.error());
    }
    if (Status waited = wait(*event); !waited) {
        return waited;
    }
    if (const nccl::Result result = answered->load(); result != nccl::Result::success) {
        return abort_now(nccl_error(*nccl, result, name));
    }
    return {};
}

Result<NcclAgreement> NcclCommunicator::State::agree(const Status& valid, std::uint64_t bytes,
                                                     const Status& read,
                                                     std::uint64_t failure_bytes) {
    const auto me = static_cast<std::uint64_t>(rank);
    const auto ranks = static_cast<std::uint64_t>(size);
    AgreementWords words{valid ? 0 : me + 1, valid ? bytes : 0, valid ? ~bytes : 0,
                         valid && !read ? ranks - me : 0, valid && !read ? failure_bytes : 0};
    // The all-reduce takes the first five; the rest go as they are and come back unchanged.
    Result<AgreementWords> agreed =
        swap_words(words, [comm = communicator, entry = nccl](const DeviceWorkContext& context) {
            return entry->all_reduce(context.pointers[0], context.pointers[0], 5,
                                     nccl::DataType::uint64, nccl::ReduceOp::max, comm,
                                     context.stream);
        });
    if (!agreed) {
        return agreed.error();
    }
    words = *agreed;
    NcclAgreement outcome{{}, words[3] == 0 ? size : static_cast<int>(ranks - words[3]), words[4]};
    if (!valid) {
        outcome.call = valid;
    } else if (words[0] != 0) {
        outcome.call = Error::invalid_argument("rank " + std::to_string(words[0] - 1) +
                                               " refused its part of the collective, so no rank "
                                               "runs it");
    } else if (words[1] != ~words[2]) {
        outcome.call = Error::invalid_argument(
            "the ranks' buffers differ in size (from " + std::to_string(~words[2]) + " to " +
            std::to_string(words[1]) + " bytes), so no rank runs the collective");
    }
    return outcome;
}

Result<Handle> NcclCommunicator::State::failure_buffer(int from, const std::string& encoded,
                                                       std::uint64_t failure_bytes) {
    Result<Handle> carried = device.allocate(failure_bytes, {.label = "nccl failure"});
    if (!carried) {
        return abort_now(carried.error());
    }
    std::string bytes(failure_bytes, '\0');
    if (rank == from) {
        const std::uint64_t count = encoded.size();
        std::memcpy(bytes.data(), &count, sizeof(count));
        std::memcpy(bytes.data() + sizeof(count), encoded.data(), encoded.size());
    }
    if (Status written = device.write(*carried, std::as_bytes(std::span(bytes))); !written) {
        return abort_now(written.error());
    }
    return carried;
}

Result<detail::CarriedFailure> NcclCommunicator::State::received_failure(const Handle& buffer,
                                                                         int from) {
    Result<std::vector<std::byte>> received = device.read(buffer);
    if (!received) {
        return abort_now(received.error());
    }
    std::uint64_t count = 0;
    std::memcpy(&count, received->data(), sizeof(count));
    count = std::min<std::uint64_t>(count, received->size() - sizeof(count));
    return detail::decode_failure(
        std::string_view(reinterpret_cast<const char*>(received->data()) + sizeof(count), count),
        from);
}

Result<detail::CarriedFailure> NcclCommunicator::State::carry_by(int from,
                                                                 const std::string& encoded,
                                                                 std::uint64_t failure_bytes,
                                                                 const NcclCall& call) {
    Result<Handle> carried = failure_buffer(from, encoded, failure_bytes);
    if (!carried) {
        return carried.error();
    }
    if (Status ran = run("nccl failure", {{*carried, AccessMode::ReadWrite}}, call); !ran) {
        return ran.error();
    }
    return received_failure(*carried, from);
}

Result<detail::CarriedFailure> NcclCommunicator::State::carry(int from, const std::string& encoded,
                                                              std::uint64_t failure_bytes) {
    // Rank `from` writes its encoding, counted, into a buffer every rank makes of the agreed
    // size; an NCCL broadcast gives every rank its bytes.
    return carry_by(
        from, encoded, failure_bytes,
        [comm = communicator, entry = nccl, from, failure_bytes](const DeviceWorkContext& context) {
            return entry->broadcast(context.pointers[0], context.pointers[0], failure_bytes,
                                    nccl::DataType::uint8, from, comm, context.stream);
        });
}

Result<detail::CarriedFailure> NcclCommunicator::State::carry_between(int from, int to,
                                                                      const std::string& encoded,
                                                                      std::uint64_t failure_bytes) {
    const bool sending = rank == from;
    return carry_by(
        from, encoded, failure_bytes,
        [comm = communicator, entry = nccl, sending, peer = sending ? to : from,
         failure_bytes](const DeviceWorkContext& context) {
            return sending ? entry->send(context.pointers[0], failure_bytes, nccl::DataType::uint8,
                                         peer, comm, context.stream)
                           : entry->receive(context.pointers[0], failure_bytes,
                                            nccl::DataType::uint8, peer, comm, context.stream);
        });
}

Result<NcclCommunicator::State::PairWords> NcclCommunicator::State::exchange_words(
    int peer, const PairWords& mine) {
    const AgreementWords mine_words{mine.refused ? 1u : 0u, mine.bytes, mine.unreadable ? 1u : 0u,
                                    mine.failure_bytes};
    Result<AgreementWords> words = swap_words(
        mine_words, [comm = communicator, entry = nccl, peer](const DeviceWorkContext& context) {
            auto* base = static_cast<std::uint64_t*>(context.pointers[0]);
            if (nccl::Result started = entry->group_start(); started != nccl::Result::success) {
                return started;
            }
            const nccl::Result sent =
                entry->send(base, 5, nccl::DataType::uint64, peer, comm, context.stream);
            const nccl::Result received =
                entry->receive(base + 5, 5, nccl::DataType::uint64, peer, comm, context.stream);
            const nccl::Result ended = entry->group_end();
            return sent != nccl::Result::success       ? sent
                   : received != nccl::Result::success ? received
                                                       : ended;
        });
    if (!words) {
        return words.error();
    }
    return PairWords{(*words)[5] != 0, (*words)[6], (*words)[7] != 0, (*words)[8]};
}

Result<AgreementWords> NcclCommunicator::State::swap_words(const AgreementWords& words,
                                                           const NcclCall& call) {
    if (Status written = device.write(agreement, std::as_bytes(std::span(words))); !written) {
        return abort_now(written.error());
    }
    if (Status ran = run("nccl agreement", {{agreement, AccessMode::ReadWrite}}, call); !ran) {
        return ran.error();
    }
    Result<std::vector<std::byte>> agreed = device.read(agreement);
    if (!agreed) {
        return abort_now(agreed.error());
    }
    AgreementWords swapped{};
    std::memcpy(swapped.data(), agreed->data(), sizeof(swapped));
    return swapped;
}

Status NcclCommunicator::State::run_collective(const NcclCollective& collective) {
    if (Status works = usable(); !works) {
        return works;
    }
    const Handle* source = collective.source;
    const Status read =
        collective.valid && source != nullptr ? device.sync(std::span(source, 1)) : Status{};
    const std::string encoded =
        read ? std::string() : detail::encode_failure(read, source->claim_key());
    Result<NcclAgreement> agreed =
        agree(collective.valid, collective.bytes, read, sizeof(std::uint64_t) + encoded.size());
    if (!agreed || !agreed->call) {
        // A refused call changes nothing; an abort claims what the collective would have written.
        if (!agreed && collective.valid) {
            claim_destination(device, collective, agreed.error());
        }
        return agreed ? agreed->call : Status(agreed.error());
    }
    if (agreed->unreadable_from != size) {
        Result<detail::CarriedFailure> failure =
            carry(agreed->unreadable_from, encoded, agreed->failure_bytes);
        if (!failure) {
            claim_destination(device, collective, failure.error());
            return failure.error();
        }
        const bool own = rank == agreed->unreadable_from && source != nullptr &&
                         collective.destination->claim_key() == source->claim_key();
        // A source that is its own destination keeps its claim: it is what the others get.
        return own ? Status{}
                   : detail::claim_with(device, *collective.destination, *failure, collective.name);
    }
    Status ran = run(collective.name, collective.arguments, collective.call);
    if (!ran) {
        claim_destination(device, collective, ran.error());
    }
    return ran;
}

}  // namespace tandem::cuda
