#pragma once

// What an NCCL communicator holds (tandem/cuda/nccl.hpp) and the steps every collective of it
// takes: the agreement before NCCL moves anything, a failure carried from the rank it happened
// on, and NCCL work run on the device's stream and waited for with an eye on NCCL's
// asynchronous errors, a lost rank and the time limit (each of which aborts the communicator).

#include "nccl_library.hpp"

#include "tandem/cuda/nccl.hpp"

#include "api/carried_failure.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace tandem::cuda {

/// One call of NCCL inside a unit of external work, given the work's stream and pointers.
using NcclCall = std::function<nccl::Result(const DeviceWorkContext& context)>;

/// A collective as every rank runs it: what the ranks agree on, then the NCCL work.
struct NcclCollective {
    /// What reports call it: "nccl all_reduce".
    const char* name = "";
    /// Whether this rank's call is valid (its buffers and sizes): agreed on first.
    Status valid;
    /// The size every rank's call must give alike, in bytes.
    std::uint64_t bytes = 0;
    /// This rank's buffer whose claims decide whether anything moves; null when this rank
    /// reads nothing (a broadcast's other ranks).
    const Handle* source = nullptr;
    /// This rank's buffer claimed when nothing may move, or the NCCL work fails.
    const Handle* destination = nullptr;
    /// The buffers the NCCL work reads and writes, in the order `call` receives them.
    std::vector<LaunchArgument> arguments;
    /// The NCCL work.
    NcclCall call;
};

/// The words of an agreement on the device. In a collective's, the first five are reduced by
/// their maximum: the highest refusing rank plus one, the largest size, the complement of the
/// smallest, the communicator's size less the lowest rank that could not read its source, and
/// the longest failure to carry. In a send's or receive's, the first five are this end's and the
/// next five the other end's.
using AgreementWords = std::array<std::uint64_t, 10>;

/// What the ranks agreed before a collective.
struct NcclAgreement {
    /// Every rank's call is valid and of the same size, or the error every rank returns.
    Status call;
    /// The lowest rank whose source could not be read; the communicator's size when none.
    int unreadable_from = 0;
    /// The bytes the broadcast of that rank's failure takes.
    std::uint64_t failure_bytes = 0;
};

struct NcclCommunicator::State {
    State(Client device_, Handle agreement_)
        : device(std::move(device_)), agreement(std::move(agreement_)) {}

    /// NCCL's entry points (of the process's load, never unloaded).
    const NcclEntryPoints* nccl = nullptr;
    /// NCCL's communicator; null once aborted.
    nccl::Communicator communicator = nullptr;
    Client device;
    int rank = 0;
    int size = 0;
    NcclOptions options;
    /// The words of an agreement, on the device: five this rank gives (reduced by NCCL with
    /// every rank's in a collective), then five another rank gives (a send's or receive's).
    Handle agreement;

    /// The words of the agreement of a send or receive, as each end gives them.
    struct PairWords {
        bool refused = false;
        std::uint64_t bytes = 0;
        bool unreadable = false;
        std::uint64_t failure_bytes = 0;
    };

    /// Runs `collective`: agrees, then claims `destination` with a failure or runs the NCCL work.
    Status run_collective(const NcclCollective& collective);
    /// Runs `call` as external work named `name` on `arguments`, and waits for it.
    Status run(const char* name, std::vector<LaunchArgument> arguments, const NcclCall& call);
    /// Asks for the communicator to be aborted with `why` (kept if one was asked already).
    void request_abort(const Error& why);
    /// Why the communicator is aborted or asked to be; none while it works.
    [[nodiscard]] std::optional<Error> abort_reason() const;
    /// Aborts NCCL's communicator now, with `why`, and returns `why`.
    Error abort_now(const Error& why);
    /// Success while the communicator works; once an abort was asked, aborts it (if no call did
    /// yet) and returns why, so a call fails before it touches anything.
    Status usable();
    /// Writes `words` to the agreement's buffer, runs `call` on it, and reads back what the
    /// other ranks made of them.
    Result<AgreementWords> swap_words(const AgreementWords& words, const NcclCall& call);
    /// Gives `mine` to rank `peer` and takes its words (an NCCL send and receive in a group).
    Result<PairWords> exchange_words(int peer, const PairWords& mine);
    /// Rank `from`'s failure, of `failure_bytes` encoded, at rank `to` (`encoded` is the
    /// sender's): an NCCL send and its receive.
    Result<detail::CarriedFailure> carry_between(int from, int to, const std::string& encoded,
                                                 std::uint64_t failure_bytes);

private:
    /// Agrees, in one NCCL all-reduce of five words, on this rank's `valid`, `bytes` and `read`
    /// (of `failure`, whose encoding is `failure_bytes` long).
    Result<NcclAgreement> agree(const Status& valid, std::uint64_t bytes, const Status& read,
                                std::uint64_t failure_bytes);
    /// Rank `from`'s failure, which it reads from `encoded` and every other rank receives.
    Result<detail::CarriedFailure> carry(int from, const std::string& encoded,
                                         std::uint64_t failure_bytes);
    /// A buffer of `failure_bytes` holding `encoded`, counted, on rank `from` (zeros elsewhere).
    Result<Handle> failure_buffer(int from, const std::string& encoded,
                                  std::uint64_t failure_bytes);
    /// The failure rank `from` carried into `buffer`, read back.
    Result<detail::CarriedFailure> received_failure(const Handle& buffer, int from);
    /// Rank `from`'s failure, of `failure_bytes` encoded (`encoded` on that rank), carried by
    /// `call` (a broadcast, or a send and its receive) on a buffer of that size.
    Result<detail::CarriedFailure> carry_by(int from, const std::string& encoded,
                                            std::uint64_t failure_bytes, const NcclCall& call);
    /// Waits for `event`, aborting the communicator when NCCL reports an error, a rank is lost
    /// or the time limit passes.
    Status wait(const Event& event);
    /// Why to abort now: one asked, NCCL's asynchronous error, or the time limit past.
    [[nodiscard]] std::optional<Error> reason_to_abort(
        std::chrono::steady_clock::time_point deadline) const;

    mutable std::mutex mutex_;
    /// Why the communicator is (to be) aborted; under `mutex_`.
    std::optional<Error> abort_reason_;
};

/// `InvalidArgument` unless `buffer` is a non-empty buffer of `device` of `bytes` bytes, whole
/// `element`-byte elements; the message names `collective` and the buffer's `role`.
Status check_nccl_buffer(const Client& device, std::string_view collective, std::string_view role,
                         const Handle& buffer, std::uint64_t bytes, std::uint64_t element);

/// NCCL's `result` of `what` as tandem's error: `PeerUnreachable` for a remote or system error,
/// `TornDown` otherwise.
Error nccl_error(const NcclEntryPoints& nccl, nccl::Result result, const std::string& what);

}  // namespace tandem::cuda
