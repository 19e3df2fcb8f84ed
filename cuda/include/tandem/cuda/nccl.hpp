#pragma once

// Collectives between GPUs through NCCL, under tandem's claim rules (phase 3 of docs/DESIGN.md):
// the collectives a program on CUDA runs between the ranks of a job, or between ranks of its own
// (mpirun, srun), one GPU each.
//
// NCCL moves and reduces the bytes, on the device's default stream, ordered with the rest of its
// work; tandem decides whether they may move. Before any rank calls NCCL, the ranks agree, in one
// NCCL all-reduce of a few words of their own, whether every rank's call is valid and every
// rank's source readable: each rank first waits for the writers of its source and checks its
// claims (`Client::sync(handles)`). A claimed byte on any rank (or a lost device) means no rank
// reduces: the failing rank sends its failure to the others (an NCCL broadcast), and every
// rank's destination is claimed with it, the root named on the rank it came from and the
// collective as the hop. The outcome is the same on every rank (rules K1, K2 and K6).
//
// A call returns once its NCCL work has run (or failed). While it waits it asks NCCL for an
// asynchronous error (`ncclCommGetAsyncError`), and watches for a lost rank (a job's death
// notice) and for the time limit: any of them aborts the communicator (`ncclCommAbort`, which
// ends NCCL's work on the stream), claims the call's destinations with the cause (C13), and
// fails this call and every later one with it: `DeviceLost` naming the rank for a lost rank,
// `PeerUnreachable` past the time limit or for NCCL's remote and system errors, `TornDown` for
// NCCL's other errors. An aborted communicator is not mended: a program makes a new one of the
// ranks that remain.
//
// NCCL is loaded at run time (`libnccl.so.2`, or the library `TANDEM_NCCL_LIBRARY` names):
// `tandem doctor` says whether it was found. NCCL takes one GPU per rank: two ranks of one
// communicator on one GPU are refused by NCCL.

#include "tandem/core/client.hpp"
#include "tandem/core/collectives.hpp"
#include "tandem/core/handle.hpp"
#include "tandem/core/result.hpp"
#include "tandem/job.hpp"

#include <array>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>

namespace tandem::cuda {

/// What one rank creates (`NcclCommunicator::unique_id`) and every rank passes to `create`: the
/// bytes of NCCL's unique id, meaningless to tandem.
struct NcclUniqueId {
    /// NCCL's bytes (`NCCL_UNIQUE_ID_BYTES` of them).
    std::array<std::byte, 128> bytes{};
};

/// How a communicator waits.
struct NcclOptions {
    /// How long a call waits for its NCCL work (another rank's arrival included) before it
    /// aborts the communicator and fails with `PeerUnreachable`.
    std::chrono::milliseconds timeout{std::chrono::minutes(5)};
};

/// Collectives between ranks through NCCL, each rank giving buffers of one CUDA device. Every
/// call is collective: every rank of the communicator makes it, in the same order.
class NcclCommunicator {
public:
    /// A fresh unique id, made by one rank and given to every rank's `create`. `InvalidArgument`
    /// when NCCL could not be loaded (naming the library and why).
    static Result<NcclUniqueId> unique_id();

    /// Rank `rank` of `size` ranks that share `id`, giving buffers of `device`, a CUDA device.
    /// Collective: returns once every rank joined (NCCL's own wait). Errors, changing nothing:
    /// `InvalidArgument` for NCCL that could not be loaded, a device that is not a CUDA GPU, a
    /// rank outside 0..size-1, or NCCL's refusal (two ranks on one GPU, say), naming it;
    /// `DeviceLost` for a lost device.
    static Result<NcclCommunicator> create(Client device, int rank, int size,
                                           const NcclUniqueId& id, NcclOptions options = {});

    /// Every rank of `job`, each giving buffers of its `device` (one of its own CUDA devices):
    /// rank 0 makes the unique id and the ranks pass it by `Job::exchange`. A rank the job loses
    /// aborts the communicator on every other rank (its death notice), so a call waiting for it
    /// fails with `DeviceLost` naming it instead of hanging. Collective over the job. The errors
    /// of `create` and of `Job::exchange`.
    static Result<NcclCommunicator> create(Job& job, Client device, NcclOptions options = {});

    /// Destroys NCCL's communicator (or frees what is left of an aborted one).
    ~NcclCommunicator();
    /// Takes `other`'s communicator; `other` is left empty (only destroying it is allowed).
    NcclCommunicator(NcclCommunicator&& other) noexcept;
    /// Destroys this communicator, then takes `other`'s.
    NcclCommunicator& operator=(NcclCommunicator&& other) noexcept;
    NcclCommunicator(const NcclCommunicator&) = delete;
    NcclCommunicator& operator=(const NcclCommunicator&) = delete;

    /// This rank's rank in the communicator.
    [[nodiscard]] int rank() const;
    /// The number of ranks.
    [[nodiscard]] int size() const;
    /// The device whose buffers this rank gives.
    [[nodiscard]] const Client& device() const;

    /// Every rank's `buffer` becomes `op` of all of them, element by element, folded in the order
    /// NCCL picks (tandem/core/collectives.hpp says when that shows in a float sum); bf16 by
    /// NCCL's own bfloat16, whose steps round as tandem/core/bfloat16.hpp's do. When any rank's
    /// buffer has a claimed byte (or its device is lost), no rank reduces: every rank's buffer
    /// is claimed with the lowest such rank's failure, and the call succeeds, as a launch whose
    /// input was claimed does. Errors, the same on every rank and changing nothing:
    /// `InvalidArgument` for a buffer that is empty, not of this rank's device, no whole number
    /// of elements (a bf16 buffer of an odd number of bytes), or of another size than another
    /// rank's (naming the ranks); then the errors an aborted communicator gives (see the top of
    /// this header).
    Status all_reduce(const Handle& buffer, ElementType type, ReduceOp op);

    /// Every rank's `buffer` becomes a copy of rank `root`'s. A claimed byte of the root's
    /// buffer claims every other rank's instead, and the call succeeds. Errors as `all_reduce`,
    /// and `InvalidArgument` for a root outside the communicator.
    Status broadcast(const Handle& buffer, int root);

    /// Every rank's `output` (`size()` times n bytes) becomes every rank's `input` (n bytes, the
    /// same n on every rank), rank r's at byte r * n. A claimed byte of any rank's input claims
    /// every rank's output instead, and the call succeeds. Errors as `all_reduce`, and
    /// `InvalidArgument` for an output that is not `size()` times the input.
    Status all_gather(const Handle& input, const Handle& output);

    /// Every rank's `output` (n bytes) becomes `op` of chunk r (the n bytes at r * n, for rank
    /// r) of every rank's `input` (`size()` times n bytes). A claimed byte of any rank's input
    /// claims every rank's output instead, and the call succeeds. Errors as `all_gather`.
    Status reduce_scatter(const Handle& input, const Handle& output, ElementType type, ReduceOp op);

    /// Sends `source` to rank `to`, whose matching `recv` receives it; only the two ranks meet.
    /// A claimed byte of `source` moves nothing: the send returns the source's `Unwritten`
    /// error, claims nothing here, and the receiver's target is claimed with it and the hop
    /// (rule K2). Errors: `InvalidArgument` for a rank that is not another rank (before meeting
    /// anyone), a source of another size than the receiver's target, or a receiver that refused
    /// its part; then the errors of an aborted communicator.
    Status send(const Handle& source, int to);

    /// Receives into `target` what rank `from` sends by its matching `send`; returns once it
    /// landed (C3 releases `target`). A claimed source claims all of `target` with the sender's
    /// failure and the hop instead, and the call succeeds. Errors as `send`.
    Status recv(const Handle& target, int from);

    /// Aborts the communicator as a lost rank does: the next call (or the one waiting now, from
    /// another thread) aborts NCCL's communicator and fails with `why`, and so does every call
    /// after it.
    void abort(const Error& why);
    /// Why the communicator was aborted; none while it works.
    [[nodiscard]] std::optional<Error> aborted() const;

    /// The communicator's own state (nccl_communicator.cpp).
    struct State;

private:
    explicit NcclCommunicator(std::shared_ptr<State> state);

    std::shared_ptr<State> state_;
};

}  // namespace tandem::cuda
