#pragma once

// Jobs: one process per rank, and the ranks of a job know one another.
//
// Production multi-GPU programs run one process per GPU, started by a launcher (`tandem launch`,
// mpirun, srun). A process learns its place in the job from the environment (`job_environment`),
// and `Job::join` meets the other ranks: in a job folder under /dev/shm (0700, this user's), each
// rank listens on a Unix-domain socket (0600) and connects to every rank below it, so every pair
// of ranks shares one connection (a full mesh). The mesh is chosen over a star through rank 0
// because a death is noticed by what a connection reads: in a mesh every rank hears every other
// rank's end directly, and no rank's death (rank 0's included) blinds the others. N ranks cost
// N(N-1)/2 connections, a few hundred for the ranks one host holds. Nothing listens on a network
// port; each connection's peer is checked to run as this user (SO_PEERCRED) and to say the same
// job id.
//
// Once joined, a watcher thread reads every connection: a rank that leaves says so first; a rank
// that exits, crashes or is killed closes its connections as the system ends it, and every peer
// reads the end (EOF or a reset) within milliseconds, with no heartbeat and no timeout. The job
// then reports the rank lost, with why when the system still shows it (its exit code or signal).
// The connections are closed on exec, not on fork: a child a rank forks without exec holds them
// too, and the rank's end is noticed when that child has ended as well.
//
// Memory crosses ranks by name: a rank publishes a handle of its own device (`publish`), and the
// others look it up (`lookup`) and get a handle that binds in their launches and copies as shared
// memory of a device of their own runtime does (rules P1 to P7). The owner's claims decide: a
// peer's kernel reading claimed bytes is skipped with the owner's report (P3), a peer's failing
// write claims the owner's bytes (P4), a landed one releases them (C3), before the peer's work
// settles. A rank that dies is lost to every other rank: work reading its memory is skipped with
// `DeviceLost` naming it, and what it held of theirs is let go. Work of two ranks is ordered by
// `barrier` (each rank's work before it is settled, its claims on the others' memory included),
// or by events, which cross ranks by name too: a rank publishes an event it recorded and the
// others wait on it as on their own (`lookup_event`). On the simulator a peer maps the owner's
// segment once (its descriptor crosses the socket), and an event is reached when a counter the
// owner keeps on its board says so. On CUDA the rank's memory comes from exportable regions (one
// file descriptor a region, mapped once by each peer), and its events are reached by the same
// board counter. A backend that cannot export memory or events (the reference backend;
// CUDA memory made with `CudaOptions::exportable_memory` off) refuses `publish`, saying why.
//
// A job can also be simulated in one process (`Job::join_in_process`): its ranks are `Job`s of
// that process, each with a runtime of its own, and they meet and talk exactly as ranks of their
// own processes do (the same folder, sockets, boards and frames), so what a test proves of them
// holds of processes. Nothing of a rank is the process's: memory ids carry the rank of the
// runtime that drew them, a device is named by its rank, a seat is taken per `Job`. Killing the
// process would end every rank; `Job::abandon` ends one, as its death would.
//
// A connection can also be lost while the two ranks at its ends both live (`Job::cut_connection`
// is that fault, for tests and simulations). The job must stay one: every rank must agree which
// ranks are in it, and nothing may wait for a rank it can no longer hear. So the job parts the
// pair by cutting off the higher rank: it leaves as an abandoned rank does (its connections
// close without the goodbye), every other rank reports it lost (`RankEnd::cut_off`) and loses
// its devices (D1), and it sees every other rank lost (`RankEnd::this_rank_cut_off`) while its
// process, its runtime and its devices work on; each job call it makes from then on is refused
// with `DeviceLost` saying why. The lower rank never leaves for it, so a lost connection costs
// the job one rank, never both, and the same one on every rank. A rank tells a lost connection
// from a death by the system's account (a process that exited or was killed died) and, for a
// rank whose process runs on, by what that rank left in the job folder: a word on its board
// (job_board.hpp), which an abandoned or cut-off rank writes before its connections close, and
// its seat, which it holds while it is in the job. Only a rank whose word says nothing and that
// holds its seat lives on, so only then was the connection alone lost. A process that runs
// another program without leaving gives its seat up with its connections, but the system may
// let the seat go just after them: a peer that reads the end first takes it for a lost
// connection, one that finds the seat free for `abandoned`.
//
//   variable             set by                   meaning
//   TANDEM_RANK          tandem launch, by hand   this process's rank, 0 to world size - 1
//   TANDEM_WORLD_SIZE    tandem launch, by hand   the number of ranks, 1 to 256
//   TANDEM_LOCAL_RANK    tandem launch, by hand   the rank among those of this host (default: rank)
//   TANDEM_JOB_ID        tandem launch, by hand   the job's id: 1 to 64 of [A-Za-z0-9._-]
//   TANDEM_JOB_DIR       tandem launch, by hand   the job folder (default /dev/shm/tandem-job-ID)
//
// When TANDEM_RANK is unset, Open MPI's (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK; the job id
// from TANDEM_JOB_ID, else PMIX_NAMESPACE) or Slurm's (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID;
// the job id "slurm-JOB.STEP" from SLURM_JOB_ID and SLURM_STEP_ID) are read instead.

#include "tandem/core/collectives.hpp"
#include "tandem/core/result.hpp"
#include "tandem/core/runtime.hpp"
#include "tandem/open_runtime.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tandem {

/// The most bytes one rank gives to one `Job::exchange`.
inline constexpr std::size_t job_exchange_bytes_max = 65536;

namespace job_detail {
struct Collective;
}  // namespace job_detail

/// Who set the variables a process learned its place in the job from.
enum class JobLauncher : std::uint8_t {
    /// TANDEM_RANK and its fellows: `tandem launch`, or a person or script setting them.
    tandem,
    /// Open MPI's mpirun (OMPI_COMM_WORLD_*).
    open_mpi,
    /// Slurm's srun (SLURM_PROCID and its fellows).
    slurm,
};

/// The launcher's name as messages print it: "tandem", "mpirun", "srun".
std::string_view to_string(JobLauncher launcher);

/// This process's place in a job, as the environment gives it.
struct JobEnvironment {
    /// This process's rank, below `world_size`.
    std::uint32_t rank = 0;
    /// The number of ranks, 1 to `job_ranks_max`.
    std::uint32_t world_size = 1;
    /// The rank among the ranks of this host, below `world_size`: on CUDA, it places the rank's
    /// devices on GPUs (rank `l` with `K` devices per rank takes GPUs `l*K` to `l*K + K - 1`).
    std::uint32_t local_rank = 0;
    /// The job's id, the same in every rank: 1 to 64 characters of [A-Za-z0-9._-].
    std::string job_id;
    /// The absolute path of the job folder.
    std::string job_folder;
    /// The ranks of the job on this host, as the launcher says (Open MPI's
    /// `OMPI_COMM_WORLD_LOCAL_SIZE`; Slurm's `SLURM_STEP_TASKS_PER_NODE` entry of this node), or
    /// 0 where it does not say (`tandem launch` starts every rank on one host). A `Job`'s ranks
    /// meet on one host: `Job::join` refuses a job with fewer ranks here than its world size.
    std::uint32_t host_ranks = 0;
    /// Who set the variables.
    JobLauncher launcher = JobLauncher::tandem;
};

/// This process's place in a job, from the variables above. `InvalidArgument`, naming the
/// variable and its value, when none of the launchers' variables are set, when a number is not
/// decimal or out of range (a rank at or past the world size), when the job id has characters
/// outside [A-Za-z0-9._-] or more than 64, when TANDEM_JOB_DIR is not an absolute path, or when
/// the launcher's count of ranks on this host is not 1 to the world size.
Result<JobEnvironment> job_environment();

/// How a rank's part in the job ended, as its peers learned it.
enum class RankEnd : std::uint8_t {
    /// It left the job (`Job::leave`, or its `Job` was destroyed) and said so.
    left,
    /// Its process ended by exiting, without leaving the job; `RankLoss::code` is the exit code.
    exited,
    /// Its process was killed by a signal; `RankLoss::code` is the signal.
    killed,
    /// Its connections closed without a word, and the system no longer showed why (its process
    /// was already reaped by its parent): it exited, crashed or was killed.
    vanished,
    /// Its connections closed without a word while its process runs on: the rank was abandoned
    /// (`Job::abandon`, the death of one rank of a job whose ranks share a process), or its
    /// process closed them some other way and gave up its seat (it ran another program).
    abandoned,
    /// It was cut off from the job: its connection to rank `RankLoss::code` was lost while both
    /// ranks lived, and the job parts such a pair by cutting off the higher rank, which leaves as
    /// an abandoned rank does (its process and its devices work on, outside the job).
    cut_off,
    /// This rank was cut off from the job (its connection to rank `RankLoss::code` was lost while
    /// both lived, and this rank is the higher of the two): every other rank is lost to it so.
    this_rank_cut_off,
};

/// A rank this process no longer hears from: which, how it ended, and when this process noticed.
struct RankLoss {
    /// The rank lost.
    std::uint32_t rank = 0;
    /// How it ended.
    RankEnd how = RankEnd::vanished;
    /// The exit code (`exited`), the signal (`killed`), or the rank at the other end of the lost
    /// connection (`cut_off`, `this_rank_cut_off`); 0 otherwise.
    int code = 0;
    /// Its process id, as the system gave it when it joined.
    std::int64_t pid = 0;
    /// When this process's watcher read the end of its connection.
    std::chrono::steady_clock::time_point noticed_at{};

    /// One sentence: "rank 2 (pid 4242) was killed by signal 9 (Killed)".
    [[nodiscard]] std::string describe() const;
};

/// How `Job::join` joins, and the runtime it opens.
struct JoinOptions {
    /// This rank's place in the job; unset: `job_environment()` (this process's).
    std::optional<JobEnvironment> environment{};
    /// The runtime of this rank, as `open_runtime` takes it (the devices per rank are
    /// `TANDEM_DEVICES`, as `tandem launch --devices-per-rank` sets it). The seed is made per
    /// rank: the resolved seed plus the rank. On CUDA, unset GPUs place the rank's devices by
    /// its local rank.
    RuntimeOptions runtime{};
    /// Whether to open the runtime at all: false joins the job only (`Job::runtime()` is null).
    bool open_runtime = true;
    /// How long to wait for every other rank before giving up, naming those that never came.
    std::chrono::milliseconds timeout{std::chrono::seconds(60)};
    /// How long a wait for another rank's event holds (a host wait, `Client::wait`, or a
    /// stream's, `Client::wait_event`) before it fails with `PeerUnreachable`: the owner may
    /// never run the work before it.
    std::chrono::milliseconds event_wait_timeout{std::chrono::seconds(60)};
    /// A fault of a simulated job: every frame this rank sends another rank (a publication, a
    /// question about a claim or its answer, a vote, an exchange) first waits a time drawn from
    /// 0 to this, by a generator seeded with the rank's runtime seed; zero, the default, sends
    /// at once. What ranks see must not change under it, only when (`tandem explore
    /// --message-delay-us` runs programs so). At most one second.
    std::chrono::microseconds message_delay_max{0};
};

/// A rank's membership in a job: its rank, the other ranks' liveness and this rank's runtime.
/// A process holds one (a rank of its own) or several (`join_in_process`: a job simulated in
/// one process). Move-only; destroying it leaves the job (`leave`).
class Job {
public:
    /// Joins the job the environment (or `options.environment`) names: opens or creates the job
    /// folder, takes this rank's place, connects to every other rank and waits until all have
    /// come (a barrier), then opens this rank's runtime. Errors, each leaving nothing behind
    /// that this call made: `InvalidArgument` for a bad environment, a job whose launcher put
    /// some of its ranks on other hosts (`JobEnvironment::host_ranks`: between hosts, ranks
    /// exchange data through `tandem::mpi::Communicator` or NCCL), a job folder that is not a
    /// directory, is owned by another user or is not mode 0700 (saying which), a rank that
    /// another live process of this job holds already (joined twice), or a peer of another job
    /// id or world size; `PeerUnreachable` naming the ranks that never came within
    /// `options.timeout`; the runtime's own errors.
    static Result<Job> join(const JoinOptions& options = {});
    /// Joins all `world_size` ranks of one job in this process, each on a thread of its own
    /// (a join waits for every rank), and returns them in rank order: a job simulated in one
    /// process, whose ranks a program or a test drives as it would ranks of processes of their
    /// own (each rank's calls from any thread), and whose death of a rank is `abandon`. Each
    /// rank is `join(options)` with its own environment: the rank, a local rank equal to it,
    /// and the job id and folder of `options.environment` when set (its rank and world size are
    /// not read), else a fresh job id and its folder under /dev/shm. Errors: `InvalidArgument`
    /// for a world size of 0 or over `job_ranks_max`; else the first error of a rank, in rank
    /// order, once every rank's join has ended (the ranks that joined leave).
    static Result<std::vector<Job>> join_in_process(std::uint32_t world_size,
                                                    const JoinOptions& options = {});

    /// Takes `other`'s membership; `other` is left empty (only destroying it is allowed).
    Job(Job&& other) noexcept;
    /// Leaves this job, then takes `other`'s membership.
    Job& operator=(Job&& other) noexcept;
    Job(const Job&) = delete;
    Job& operator=(const Job&) = delete;
    /// Leaves the job (`leave`).
    ~Job();

    /// This rank's number.
    [[nodiscard]] std::uint32_t rank() const;
    /// The number of ranks.
    [[nodiscard]] std::uint32_t world_size() const;
    /// The rank among those of this host.
    [[nodiscard]] std::uint32_t local_rank() const;
    /// The job's id.
    [[nodiscard]] const std::string& job_id() const;
    /// The job folder.
    [[nodiscard]] const std::string& folder() const;
    /// Who started the job.
    [[nodiscard]] JobLauncher launcher() const;
    /// This rank's runtime (its devices); null when joined with `open_runtime = false` or after
    /// `leave`. Its work reaches other ranks' devices through memory they published.
    [[nodiscard]] const std::shared_ptr<Runtime>& runtime() const;

    /// The service of device `device` of rank `rank` (this rank's included): what a device
    /// grants access to its shared memory (`Client::grant_peer_access`, P7) and what reports
    /// name. `InvalidArgument` for a rank past the world size or a device the rank does not have.
    [[nodiscard]] Result<ServiceId> service(std::uint32_t rank, std::uint32_t device = 0) const;
    /// Shares `handle`'s allocation with every other rank under `name` (1 to 255 bytes), as work
    /// enqueued before the call wrote it (it waits for those writers first, failed ones
    /// included: a peer then reads their failure): pinned (P2) until it is withdrawn and no rank
    /// holds a handle of it. Later writes reach peers in the order `barrier` gives. Errors,
    /// changing nothing:
    /// `InvalidArgument` for a bad name, a name this rank or one it heard from published
    /// already, an allocation this rank published already (under any name), a handle that is
    /// empty or not of this rank's devices, memory the backend cannot export (adopted memory;
    /// the reference backend's), or more than 4096 allocations shared at once; `DeviceLost` for
    /// a lost device. A peer's handle addresses the published handle's bytes (a slice stays a
    /// slice).
    Status publish(std::string_view name, const Handle& handle);
    /// Withdraws `name`, memory or an event this rank published: later lookups of it
    /// (`lookup`, `lookup_event`) fail with `InvalidArgument` naming it and this rank. Memory's
    /// withdrawal returns once every other rank forgot the name (a question and its answer to
    /// each, a lost rank skipped), and its pin goes once no rank holds it. An event a rank looked
    /// up already keeps its meaning there: it is reached once the work before it has run here,
    /// as if never withdrawn (an event is a value, a point in this rank's stream; the name is
    /// only how ranks find it). The name stays the event's: publishing it again is refused.
    /// `InvalidArgument` for a name this rank did not publish, or withdrew already.
    Status withdraw(std::string_view name);
    /// The memory another rank published under `name`, waiting up to `timeout` for it to be: a
    /// handle of the owner's device (its service, memory id and size) that this rank's devices
    /// bind in launches and copies as shared memory; kernels need the owner's grant (P7). The
    /// owner counts this rank's pin until the last copy of the handle is gone; the lookup does
    /// not wait for the owner (the pin crosses on its own, and the owner's withdrawal waits for
    /// the pins each rank sent). `InvalidArgument` naming it when no rank published it in time,
    /// when it was withdrawn (at once: a name withdrawn and published again reads as withdrawn
    /// here until the new publication reaches this rank, which a barrier after it ensures), or
    /// when it is this rank's own; `DeviceLost` when its owner's rank is gone.
    Result<Handle> lookup(std::string_view name,
                          std::chrono::milliseconds timeout = std::chrono::seconds(10));
    /// Shares `event`, recorded by one of this rank's devices (`Client::record_event`), with
    /// every other rank under `name` (1 to 255 bytes; names are the job's, one namespace with
    /// memory). A rank that looks it up (`lookup_event`) orders its streams' later work after
    /// the work enqueued before `event` on its stream (`Client::wait_event`), or waits for that
    /// work on the host (`Client::wait`, `Client::event_complete`), as with an event of its own
    /// runtime. The event is reached for them once that work has run on this rank and is
    /// settled: its failures are on this rank's claims first, so a peer's write ordered after
    /// it repairs what it failed to write (P5), and a peer's read sees what it wrote or its
    /// failure. Errors, changing nothing: `InvalidArgument` for a bad name, a name this rank or
    /// one it heard from published already (memory or event), an empty event or one of another
    /// runtime, a backend that shares no events (the reference backend), more than 4096 events
    /// or events of more than 256 streams in this rank's life; `DeviceLost` for an event of a
    /// lost device.
    Status publish(std::string_view name, const Event& event);
    /// The event another rank published under `name`, waiting up to `timeout` for it to be.
    /// `InvalidArgument` naming it when no rank published an event of that name in time, when it
    /// is this rank's own, or when it names memory; `DeviceLost` when its owner's rank is gone.
    /// On the simulator a rank runs its work when it syncs or waits (in its deterministic
    /// mode), so a wait on its event completes once the owner has driven its device past it;
    /// no such wait hangs: the owner's loss ends it with `DeviceLost` naming the rank, and
    /// `JoinOptions::event_wait_timeout` with `PeerUnreachable`. A stream whose wait failed so
    /// never runs the work it was ordered before: that work, and all later work of the stream,
    /// is skipped with the wait's error (its outputs claimed with it, as for a lost device's
    /// memory, D1). An event its owner recorded after such a failed wait of its own is reached
    /// once the owner ran and settled its stream to it, but a stream waiting on it follows that
    /// failure as it would a local one: its later work is skipped with an error of the same kind
    /// naming the event on the owner's rank, caused by the owner's error (a host wait, and
    /// `Client::event_complete`, see it reached, as for a local event).
    Result<Event> lookup_event(std::string_view name,
                               std::chrono::milliseconds timeout = std::chrono::seconds(10));
    /// Waits until every rank reached its barrier of the same count, after settling this rank's
    /// work (`Runtime::sync_all`): what each rank's work did before it, to its own memory and to
    /// the others', is on the owners' claims when any rank passes. `DeviceLost` naming the rank
    /// when one is lost first, `PeerUnreachable` when one does not come within `timeout`; the
    /// errors of `sync_all` first.
    Status barrier(std::chrono::milliseconds timeout = std::chrono::seconds(60));
    /// Every rank's `value`, in rank order (this rank's own at `rank()`): a meeting of every rank
    /// that carries up to `job_exchange_bytes_max` bytes from each, how ranks share what a
    /// library needs to start (rank 0's NCCL unique id) without a store of their own. Every rank
    /// calls it, in the same order as its other exchanges; it settles no work (a barrier does).
    /// `InvalidArgument` for a longer value (before meeting anyone); `DeviceLost` naming the
    /// rank when one is lost first, `PeerUnreachable` when one does not come within `timeout`.
    Result<std::vector<std::string>> exchange(
        std::string_view value, std::chrono::milliseconds timeout = std::chrono::seconds(60));

    // The collectives of a job: calls every rank makes, in the same order, each with buffers of
    // one of its own devices. Each is built of the job's own steps (publish, look up, copies of
    // another rank's memory, the catalog's `combine`): every rank publishes what the others
    // read, the root builds the result of them and publishes it, and every rank copies its part
    // of the result, with an agreement after each step (a barrier that is also a vote: a rank's
    // failed step is every rank's error, the same on every rank: the lowest failing rank's, as
    // "rank R: " and its words, that rank's own call included). So a claimed byte of any
    // rank's source moves and reduces nothing: every rank's destination is claimed, all of it,
    // with the root named on the rank it came from and the hops (rule K1). A call returns once
    // every rank's part is settled. Errors: `InvalidArgument` for a buffer this rank's call
    // cannot take (not of this rank's devices, empty, of a size that does not fit: refused before
    // any rank is met, so the call takes no place in the job's order of calls; a size another
    // rank does not share fails at the step that meets it, on every rank); `DeviceLost` naming
    // the rank when a rank or its device is lost in the middle (never a hang: every other rank's
    // call fails too); `PeerUnreachable` when a rank does not come within `timeout`.

    /// Each rank's `buffer` (the same size on every rank) becomes `op` of all of them, element by
    /// element, in rank order (rank 0 folds them from the left, with the kernel the devices of
    /// one runtime fold with, so a float sum gives their bytes: tandem/core/collectives.hpp).
    Status all_reduce(const Handle& buffer, ElementType type, ReduceOp op,
                      std::chrono::milliseconds timeout = std::chrono::seconds(60));
    /// Each rank's `buffer` (the same size on every rank) becomes a copy of rank `root`'s, which
    /// is left as it is. `InvalidArgument` for a root past the world size.
    Status broadcast(const Handle& buffer, std::uint32_t root,
                     std::chrono::milliseconds timeout = std::chrono::seconds(60));
    /// Each rank's `output` (`world_size() * n` bytes, of the device of `input`) becomes every
    /// rank's `input` (n bytes) one after the other: rank r's at byte `r * n` (rank 0 gathers
    /// them). The input may lie inside the output.
    Status all_gather(const Handle& input, const Handle& output,
                      std::chrono::milliseconds timeout = std::chrono::seconds(60));
    /// Each rank's `output` (n bytes, of the device of `input`) becomes `op` of chunk r (the n
    /// bytes at `r * n`, for rank r) of every rank's `input` (`world_size() * n` bytes), element
    /// by element, in rank order (rank 0 folds them). The output may lie inside the input.
    Status reduce_scatter(const Handle& input, const Handle& output, ElementType type, ReduceOp op,
                          std::chrono::milliseconds timeout = std::chrono::seconds(60));

    /// Sends `source` (of one of this rank's devices) to rank `rank`, whose matching `recv` (the
    /// same count of sends from this rank to it, in order) copies it; returns once it did. Only
    /// the two ranks meet. A claimed byte of `source` moves nothing: the send is refused with
    /// the source's `Unwritten` error and claims nothing on this rank, and the receive claims
    /// its target with that failure and the hop (rule K2). Errors: `InvalidArgument` for a rank
    /// that is not another rank of the job or a source not of this rank's devices (before
    /// meeting the receiver), or the receiver's error (a target of another size); `DeviceLost`
    /// naming the rank when it is lost first; `PeerUnreachable` when it does not come within
    /// `timeout`.
    Status send(std::uint32_t rank, const Handle& source,
                std::chrono::milliseconds timeout = std::chrono::seconds(60));
    /// Receives into `target` (of one of this rank's devices, the size of the source) what rank
    /// `rank` sends by its matching `send`; returns once it landed. A send that lands releases
    /// `target` (C3); a claimed source claims all of it with the sender's failure and the hop
    /// instead, and the call returns success (the outcome is in the claims, as a collective's).
    /// Errors: `InvalidArgument` for a rank that is not another rank of the job or a target not
    /// of this rank's devices (before meeting the sender), or a source of another size;
    /// `DeviceLost` naming the rank when it is lost first; `PeerUnreachable` when it does not
    /// come within `timeout`.
    Status recv(std::uint32_t rank, const Handle& target,
                std::chrono::milliseconds timeout = std::chrono::seconds(60));

    /// Whether `rank` is still in the job as this rank sees it: this rank until it leaves, is
    /// abandoned or is cut off, another rank until its connection ends. False for a rank past
    /// the world size.
    [[nodiscard]] bool rank_alive(std::uint32_t rank) const;
    /// The ranks lost so far, in the order this rank noticed them.
    [[nodiscard]] std::vector<RankLoss> lost_ranks() const;
    /// The first rank lost, waiting up to `timeout` for one; nullopt when none was lost by then.
    [[nodiscard]] std::optional<RankLoss> wait_for_loss(std::chrono::milliseconds timeout) const;
    /// The loss of `rank`, waiting up to `timeout` for it; nullopt when it is still in the job
    /// then (or is not a rank of the job).
    [[nodiscard]] std::optional<RankLoss> wait_for_loss_of(std::uint32_t rank,
                                                           std::chrono::milliseconds timeout) const;
    /// Calls `callback` once for every rank lost: at once, on this thread, for those lost
    /// already, then on the watcher thread as each loss is noticed (keep it short; it must not
    /// call `leave`). `InvalidArgument` past `loss_callbacks_max` callbacks.
    Status on_rank_lost(std::function<void(const RankLoss&)> callback);

    /// Leaves the job: runs this rank's queued work to its end while the other ranks still
    /// answer (so what it did to their memory is on their claims), closes this rank's runtime,
    /// tells every peer it leaves, closes the connections and removes this rank's files; the
    /// last rank out of a job no launcher holds removes the job folder. A wait on another rank's
    /// event that is not reached does not hold it up: it ends at once with `TornDown` ("left the
    /// job before event N ... was reached"), and the work ordered after it is skipped with that
    /// error. After it, a runtime kept past the job finds every other rank gone (`DeviceLost`,
    /// "this rank left the job"): its waits on their events fail so, as reads of their memory
    /// do. Idempotent.
    void leave();
    /// Ends this rank abruptly, as the death of its process would: without the word `leave`
    /// says, it closes its connections, so every other rank reports it lost (`RankEnd::abandoned`)
    /// and does what a rank's death does (work reading its memory is skipped with `DeviceLost`
    /// naming it, D1; waits for its events, barriers and collectives end with its loss; its pins
    /// are let go), then lets its runtime go and removes its files as `leave` does. Meant for a
    /// job whose ranks share a process (`join_in_process`), where killing the process would end
    /// every rank: a test or a simulation ends one rank so. Handles this rank looked up read as
    /// lost from now on, as after `leave`. Idempotent; `leave` after it does nothing.
    void abandon();
    /// A fault of a job: breaks the connection between this rank and `rank`, as a socket lost
    /// while both ranks live, and returns; both ranks then read its end, as they would a death.
    /// The job parts the pair by cutting off the higher of the two ranks (the comment at the top
    /// of this file says how): every other rank reports it lost (`RankEnd::cut_off`, naming the
    /// lower rank) and does what a rank's death does (work reading its memory is skipped with
    /// `DeviceLost` naming it, D1; waits for its events, barriers and collectives end with its
    /// loss; its pins are let go); the higher rank sees every other rank lost
    /// (`RankEnd::this_rank_cut_off`), its runtime and devices work on, and every later call of
    /// it that needs the job (`publish`, `withdraw`, `lookup`, `lookup_event`, `barrier`,
    /// `exchange`, the collectives, `send`, `recv`) fails with `DeviceLost`: "this rank was cut
    /// off from the job: its connection to rank R was lost ...". `wait_for_loss_of` the higher
    /// rank on the others, and of the others on it, returns once each has read the end (no
    /// timing). `InvalidArgument`, changing nothing, for a rank past the world size, this rank
    /// itself, a rank lost to this rank already (or a connection cut already), and a rank that
    /// left, was abandoned or was cut off.
    Status cut_connection(std::uint32_t rank);

    /// The most callbacks `on_rank_lost` keeps.
    static constexpr std::size_t loss_callbacks_max = 64;

private:
    struct State;
    explicit Job(std::unique_ptr<State> state);
    /// `DeviceLost` saying why, for the job call `call`, once this rank is cut off from the job.
    Status refuse_if_cut_off(std::string_view call) const;
    /// Runs `collective` (job_collectives.cpp): checks this rank's buffers, then publishes,
    /// builds on the root and copies each rank's part, agreeing after each step.
    Status run_collective(const job_detail::Collective& collective,
                          std::chrono::milliseconds timeout);
    /// The number of the next collective call: every rank numbers its calls alike.
    std::uint64_t next_collective();
    /// The number of the next transfer between this rank and `rank` in the direction `sending`
    /// says: both ends number their transfers alike.
    std::uint64_t next_transfer(std::uint32_t rank, bool sending);
    /// Settles this rank's work, then meets every rank, voting `step`'s failure (or the
    /// settling's, or the loss of `device`, the step's): the first failure any rank voted, the
    /// same on every rank.
    Status agree(const Status& step, const Client& device, std::chrono::milliseconds timeout);
    /// `agree` with rank `rank` alone, at the meeting of a transfer this rank sends (`sending`)
    /// or receives.
    Status agree_with(std::uint32_t rank, bool sending, const Status& step, const Client& device,
                      std::chrono::milliseconds timeout);
    /// Opens this rank's runtime (as `options` asks) and meets the other ranks' runtimes.
    Status open_rank_runtime(const JoinOptions& options, const RuntimeOptions& runtime_options);
    std::unique_ptr<State> state_;
};

}  // namespace tandem
