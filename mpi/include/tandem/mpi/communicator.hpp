#pragma once

// Collectives between processes through MPI, under tandem's claim rules (phase 3 of
// docs/DESIGN.md): the path a job takes when its ranks span hosts, started by mpirun.
//
// MPI moves the bytes; tandem decides whether they may move. Before any rank reduces, the ranks
// agree, in one small all-reduce of their own, whether every rank's source is readable: a
// claimed byte on any rank (or a lost device) means no rank reduces, and every rank's buffer is
// claimed with that failure, named on the rank it came from, with the collective as the hop. So
// the outcome is the same on every rank, never a sum over bytes failed work should have written,
// and never some ranks with a result and others with an error. A call another rank cannot take
// (a buffer of another size, say) is refused on every rank alike, and nothing changes.
//
// Each rank gives a buffer of its own device, and MPI finds its bytes where they are. On a
// device whose memory is the host's (the simulator, the reference backend) MPI reads and writes
// the buffer in place, as a CUDA-aware MPI takes a GPU's memory, once its writers are done and
// its claims checked (C6). Elsewhere (a GPU) the bytes cross through host memory: a rank reads
// its buffer into a staging buffer (waiting for its writers, as `Client::read` does), MPI
// reduces the host copies, and the result is written back (`Client::write`, which releases the
// claims it covers, C3). A destination with claimed bytes is written back so too, wherever it
// is, since only a write releases claims. Peer memory stays within a host (`Job::publish`);
// across hosts data moves by collectives only.
//
// Reports name ranks when each rank's runtime knows its rank: open it with
// `RuntimeOptions::rank` set to the MPI rank (`Job::join` does this for jobs tandem starts).
// Open MPI ends every rank of a job when one of them dies (its default error handler), so a rank
// lost in the middle of a collective ends the job rather than hanging it; a job started by
// `tandem launch` notices a lost rank itself (`Job`). Do not start such a job with `mpirun
// --enable-recovery`: Open MPI 4.1 (Debian 12's, with PMIx 4.2) then leaves the survivors running
// but tells them nothing (an event handler registered with PMIx for a process's abort is never
// called; mpirun logs a PMIx BAD-PARAM error), so they wait in the collective for good.

#include "tandem/core/client.hpp"
#include "tandem/core/collectives.hpp"
#include "tandem/core/handle.hpp"
#include "tandem/core/result.hpp"

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace tandem::mpi {

/// How a communicator moves a rank's bytes.
struct CommunicatorOptions {
    /// Whether MPI reads and writes a buffer in place when its device's memory is the host's
    /// (the default), or always through a staging buffer, as it does a GPU's: for an MPI that
    /// cannot take that memory, and to compare the two.
    bool host_memory_in_place = true;
};

/// Collectives between the ranks of an MPI communicator, each rank giving buffers of one device.
/// Every call is collective: every rank of the communicator makes it, in the same order.
class Communicator {
public:
    /// The ranks of `comm`, each giving buffers of its `device`. The program initialised MPI and
    /// keeps `comm` alive while the communicator is used; tandem duplicates it, so its own
    /// messages never meet the program's. Collective over `comm`. `InvalidArgument` when MPI is
    /// not initialised (or already finalised) or `comm` is null.
    static Result<Communicator> create(MPI_Comm comm, Client device,
                                       CommunicatorOptions options = {});

    /// Frees tandem's duplicate of the communicator (collective, as `MPI_Comm_free` is).
    ~Communicator();
    /// Takes `other`'s duplicate; `other` is left empty (only destroying it is allowed).
    Communicator(Communicator&& other) noexcept;
    /// Frees this communicator's duplicate, then takes `other`'s.
    Communicator& operator=(Communicator&& other) noexcept;
    Communicator(const Communicator&) = delete;
    Communicator& operator=(const Communicator&) = delete;

    /// This process's rank in the communicator.
    [[nodiscard]] int rank() const { return rank_; }
    /// The number of ranks.
    [[nodiscard]] int size() const { return size_; }
    /// The device whose buffers this rank gives.
    [[nodiscard]] const Client& device() const { return device_; }

    /// Every rank's `buffer` becomes `op` of all of them, element by element, folded in the order
    /// MPI picks (tandem/core/collectives.hpp says when that shows in a float sum); bf16, which
    /// MPI does not know, by tandem's own operations, each step as the devices' `combine` takes
    /// it (tandem/core/bfloat16.hpp). Returns once this rank's buffer holds the result, or is
    /// claimed: when any rank's buffer has a claimed byte (or its device is lost), no rank
    /// reduces, and every rank's buffer is claimed with that rank's failure (the lowest such
    /// rank's), the root named on its rank and this collective as the hop; the call itself
    /// succeeds, as a launch whose input was claimed does. Errors, the same on every rank and
    /// changing nothing: `InvalidArgument` for a buffer that is empty, not of this rank's
    /// device, no whole number of elements (a bf16 buffer of an odd number of bytes), of more
    /// than 2^31 - 1 elements, or of another size than another rank's (naming the ranks).
    Status all_reduce(const Handle& buffer, ElementType type, ReduceOp op);

    /// Every rank's `buffer` becomes a copy of rank `root`'s. When the root's buffer has a
    /// claimed byte (or its device is lost), every other rank's buffer is claimed with the
    /// root's failure instead, and the call succeeds. Errors, the same on every rank and changing
    /// nothing: `InvalidArgument` for a root outside the communicator, or a buffer as
    /// `all_reduce` refuses it (sizes must match the root's).
    Status broadcast(const Handle& buffer, int root);

    /// Every rank's `output` (`size()` times n bytes) becomes every rank's `input` (n bytes, the
    /// same n on every rank) one after the other, rank r's at byte r * n. A claimed byte of any
    /// rank's input claims every rank's output instead (the lowest such rank's failure, and the
    /// collective as the hop), and the call succeeds. Errors, the same on every rank and
    /// changing nothing: `InvalidArgument` for a buffer as `all_reduce` refuses it, an output
    /// that is not `size()` times the input, or inputs of different sizes.
    Status all_gather(const Handle& input, const Handle& output);

    /// Every rank's `output` (n bytes) becomes `op` of chunk r (the n bytes at r * n, for rank
    /// r) of every rank's `input` (`size()` times n bytes), element by element. A claimed byte of
    /// any rank's input claims every rank's output instead, and the call succeeds. Errors, the
    /// same on every rank: `InvalidArgument` as `all_gather` refuses, and for sizes that are no
    /// whole number of elements.
    Status reduce_scatter(const Handle& input, const Handle& output, ElementType type, ReduceOp op);

    /// Sends `source` to rank `to`, whose matching `recv` (the same count of sends from this rank
    /// to it, in order) receives it; returns once it went. Only the two ranks meet. A claimed
    /// byte of `source` moves nothing: the send returns the source's `Unwritten` error and
    /// claims nothing on this rank, and the receive claims its target with that failure and
    /// the hop (rule K2). Errors: `InvalidArgument` for a rank that is not another rank of the
    /// communicator (before meeting anyone), a source it refuses as `all_reduce` does or of
    /// another size than the receiver's target, or a receiver that refused its part.
    Status send(const Handle& source, int to);

    /// Receives into `target` what rank `from` sends by its matching `send`; returns once it
    /// landed (C3 releases `target`). A claimed source claims all of `target` with the sender's
    /// failure and the hop instead, and the call succeeds. Errors: `InvalidArgument` for a rank
    /// that is not another rank (before meeting anyone), a target it refuses as `all_reduce`
    /// does, or a sender that refused (a source of another size).
    Status recv(const Handle& target, int from);

private:
    /// Where MPI finds a buffer's bytes for one call: the buffer's own (`in_place`), or a
    /// staging buffer copied from the device or to be written back to it.
    struct Bytes {
        std::span<std::byte> span;
        bool in_place = false;
    };
    /// What the steps before MPI end with: the status the call returns at once, or none and the
    /// bytes of the source MPI reads (none on a rank that reads no source).
    struct Gate {
        std::optional<Status> ended;
        Bytes source;
    };

    Communicator(MPI_Comm comm, Client device, int rank, int size, CommunicatorOptions options);
    /// `InvalidArgument` unless `small` and `large` are buffers of this rank's device with
    /// `large` `size()` times `small`, both whole numbers of `element`-byte elements.
    [[nodiscard]] Status check_pair(const Handle& small, const Handle& large,
                                    std::uint64_t element) const;
    /// What the ranks agree on before MPI moves a byte.
    struct Agreement {
        /// Success when every rank's call is valid and the sizes match; else the error every
        /// rank returns.
        Status valid;
        /// The lowest rank whose source could not be read; `size()` when every one could.
        int first_unreadable = 0;
    };
    /// Agrees, in one all-reduce, on whether every rank's call is valid (`local`) with a buffer
    /// of `bytes` bytes, and on the lowest rank whose source was `unreadable`.
    Agreement agree(const Status& local, std::uint64_t bytes, bool unreadable);
    /// Claims this rank's `destination` with the failure rank `from` met reading its `source`
    /// (`read` there), which rank `from` sends to every rank with the key of its source; on rank
    /// `from`, a destination that is its source keeps its own claim.
    Status spread_failure(const Handle& source, const Handle& destination, int from,
                          const Status& read, const char* collective);
    /// The steps every collective takes before MPI moves its bytes: reads `source` (on every
    /// rank, or on rank `root` alone when it is set; not where `local` says this rank's call is
    /// invalid), then agrees on `local`, `bytes` and whether every rank could read. Ends the
    /// call (a refusal, or `destination` claimed with the failure rank's error, as `name`), or
    /// gives where MPI reads the source.
    Gate gate(const Status& local, std::uint64_t bytes, const Handle& source,
              const Handle& destination, const char* name, std::optional<int> root = std::nullopt);
    /// Waits for every writer of `buffer`'s bytes and checks that none is claimed (C6), then
    /// gives its bytes in place where they are the host's, else copied into `staging_`.
    Result<Bytes> read_source(const Handle& buffer);
    /// `buffer`'s own bytes, when its device's memory is the host's and this communicator
    /// takes it in place.
    std::optional<std::span<std::byte>> host_bytes(const Handle& buffer);
    /// Where MPI writes `destination`'s `bytes` bytes: in place when they are the host's, no work
    /// of this device is pending and none is claimed (nothing to release) and they share no byte
    /// with `source`; else `landing_`, which `land` writes back.
    Bytes landing(const Handle& destination, std::span<const std::byte> source);
    /// Writes `bytes` into `destination` unless MPI wrote them there in place.
    Status land(const Handle& destination, const Bytes& bytes);

    MPI_Comm comm_ = MPI_COMM_NULL;
    Client device_;
    int rank_ = 0;
    int size_ = 0;
    CommunicatorOptions options_;
    /// The host copy of a source MPI reads, kept from call to call (the largest size so far).
    std::vector<std::byte> staging_;
    /// The host copy of a destination MPI writes, kept so too.
    std::vector<std::byte> landing_;
};

}  // namespace tandem::mpi
