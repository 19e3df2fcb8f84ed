#pragma once

// The CUDA backend's internals: devices (each a `Server`) and the engine that keeps the work
// whose outcome the host does not know yet.

#include "cuda_storage.hpp"
#include "device_guard.hpp"
#include "imported_memory.hpp"
#include "launcher.hpp"
#include "remote_wait.hpp"

#include "tandem/backend/claim_store.hpp"
#include "tandem/backend/detail/id_table.hpp"
#include "tandem/backend/detail/spare_works.hpp"
#include "tandem/backend/device_groups.hpp"
#include "tandem/backend/server.hpp"
#include "tandem/backend/fault_plan.hpp"
#include "tandem/backend/held_bindings.hpp"
#include "tandem/backend/memory_manager.hpp"
#include "tandem/backend/outcome.hpp"
#include "tandem/backend/server.hpp"
#include "tandem/backend/settle_pipeline.hpp"
#include "tandem/cuda/runtime.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <unordered_map>

namespace tandem::cuda {

class CudaEngine;
class CudaGroup;

/// Work enqueued on a GPU: what the settle pipeline needs, and what the GPU needs to run it and
/// report on it. The engine reuses settled ones (`CudaEngine::new_op`), so their vectors keep
/// their storage from launch to launch.
struct PendingOp final : Work {
    enum class Kind : std::uint8_t { Write, Copy, Launch, Replay };
    Kind kind = Kind::Launch;
    /// Keeps every bound allocation reserved until the outcome is settled.
    HeldBindings held;
    /// Keeps what the work runs alive until then (the CUDA graph a replay launched).
    std::shared_ptr<void> keep_alive;
    /// For a replay: the kernel a failure it reports names, when every launch of its graph runs
    /// one kernel. Its launches share one status word, which does not say which of them failed,
    /// so a graph of several kernels names the replay.
    std::string replayed_kernel;
    /// The fault injected into it (`KernelFault`), if one was: a reported code equal to its code
    /// is the injected fault (the kernel, or the replay's launch, did not run).
    std::optional<InjectedFault> injected;
    /// Launches and replays that reached the GPU: the status word and the id that owns it.
    bool has_status_word = false;
    std::uint64_t slot = 0;
    /// The device's count of slots handed out when this one was: `slot` before it wrapped.
    std::uint64_t issued = 0;
    std::uint32_t launch_id = 0;
    /// The GPU also wrote the word into the host's copy (a plain replay): nothing to fetch.
    bool word_on_host = false;
    /// Put on its stream by a call that leaves it nothing to fail at (a host write, a copy,
    /// external work whose callable returned clean): it lands once its stream passes it, unless
    /// the device is lost. Until a wait shows that, it stays unsettled: the bytes it writes are
    /// not there yet, so a read must wait for its stream, and its allocations stay reserved.
    bool lands = false;

    /// Its call to the driver succeeded, putting `bytes` bytes on its stream: none lands at once,
    /// any other once its stream passes it (`lands`).
    void put_on_stream(std::uint64_t bytes) {
        if (bytes == 0) {
            ran(Status{});
        } else {
            lands = true;
        }
    }
    /// What the driver's call that put it on its stream returned, where that call was made with
    /// the group's lock let go (`CudaDevice::issue`): read only after waiting for open issues.
    cudaError_t issue_error = cudaSuccess;
    /// The newest wait of its stream on another process's event that was pending when it was
    /// enqueued (remote_wait.hpp): it follows that wait's failure when its report is filled in.
    std::shared_ptr<RemoteWait> remote_wait;

    void on_settled() override {
        held.clear();
        keep_alive.reset();
        remote_wait.reset();
    }
    /// Empties the op for its next use, keeping the storage of its vectors and label.
    void reset();
};

/// What a wait without the group's lock waits for: a CUDA event recorded on a stream, or (with
/// no event) a whole GPU, with what the streams' delays counted then.
struct Fence {
    std::uint32_t device = 0;
    /// The GPU, for a whole-GPU fence (its ordinal never changes).
    int ordinal = 0;
    StreamId stream;
    cudaEvent_t event = nullptr;
    /// The stream's delay steps; for a whole GPU, each stream's, in order.
    std::vector<std::uint64_t> delay_steps;
    cudaError_t status = cudaSuccess;  // What waiting for it returned.
};

/// A stream of a GPU. Its delay steps (microseconds) count what was injected since the device
/// last synchronised: at most what is still to run.
struct CudaStream : DeviceStream {
    CudaStream(StreamId stream, cudaStream_t cuda_stream)
        : DeviceStream{stream, {}, 0}, handle(cuda_stream) {}

    cudaStream_t handle = nullptr;
    /// Held from before a launch lets go of the group's lock until its call to the driver
    /// returns: launches reach the stream in the order the pipeline recorded them.
    std::mutex issue_mutex;
    /// The stream's waits on other processes' events not yet known to have ended clean, newest
    /// first (remote_wait.hpp); null when none.
    std::shared_ptr<RemoteWait> remote_waits;
    /// Once a wait of the stream is known to have failed: the first sequence of an event recorded
    /// after it, and why. Every later work of the stream is skipped with it.
    std::optional<std::pair<std::uint64_t, Error>> failed_wait;
};

/// A launch recorded and encoded under the group's lock whose call to the driver is still to
/// make, with the lock let go and its stream's issue lock held (`CudaDevice::issue`).
struct PreparedIssue {
    Launcher launcher = nullptr;
    const LaunchConfig* config = nullptr;
    CudaStream* stream = nullptr;
    TensorLaunchParams* params = nullptr;
    PendingOp* op = nullptr;
    /// The lock of the group it was recorded in, whose issue it closes.
    detail::EngineMutex* mutex = nullptr;
};

class CudaDevice final : public Server {
public:
    /// Status words per device: launches unresolved at once before the host resolves them.
    static constexpr std::uint64_t status_slots = 1 << 16;
    /// Work resolved at once when unsettled work reaches its bound, oldest first.
    static constexpr std::size_t resolve_batch = 1024;

    /// Device `index` of `engine` on GPU `ordinal`, reserving at most `capacity_bytes`;
    /// `shares_gpu` when other devices of the runtime run on that GPU, and `peer_ordinals` the
    /// other GPUs of the runtime whose kernels can reach this one's memory.
    CudaDevice(CudaEngine& engine, std::uint32_t index, int ordinal, std::uint64_t capacity_bytes,
               bool shares_gpu, std::vector<int> peer_ordinals);
    ~CudaDevice() override;

    [[nodiscard]] int ordinal() const { return ordinal_; }
    [[nodiscard]] MemoryManager& memory() { return memory_; }
    /// Where the device's pools get their regions.
    [[nodiscard]] CudaStorage& storage() { return storage_; }
    [[nodiscard]] std::size_t live_allocations() const { return memory_.live_count(); }
    /// Waits for every stream; a sticky CUDA error loses the device (D1).
    void synchronize();
    /// Waits for the stream `id`; a sticky CUDA error loses the device (D1).
    void synchronize(StreamId id);
    /// Records a fence (a CUDA event) on `stream` for a wait without the group's lock; false when
    /// it must be waited for otherwise (an event the runtime refused); true for a stream gone or
    /// a lost device, which leave nothing to wait for.
    bool add_fence(StreamId stream, std::vector<Fence>& fences);
    /// A fence on the whole device: waited for with `cudaDeviceSynchronize` (one call, however
    /// many streams), which may also wait for work other threads enqueue meanwhile. On a GPU
    /// other devices share, an event on each of its streams instead: a device waits for its own
    /// work, never for a neighbour's.
    void add_fences(std::vector<Fence>& fences);
    /// What a wait for the GPU returned: a sticky error loses the device (D1), another is cleared.
    void take_wait_status(cudaError_t status);
    /// What a fence waited for has run: a sticky error loses the device (D1); the delays
    /// enqueued on its stream before it have run out; its event goes back.
    void end_fence(const Fence& fence);
    /// Copies the status words of unresolved launches to the host (after `synchronize`).
    void fetch_status();
    /// Copies the status words of the slots issued in [`from`, `to`) to the host, once the
    /// launches given them are known to have finished (their streams were waited for).
    void fetch_status(std::uint64_t from, std::uint64_t to);
    /// The status slots handed out since the last fetch.
    std::uint64_t unfetched_from_ = 0;
    [[nodiscard]] unsigned long long status_word(std::uint64_t slot) const {
        return status_host_[slot];
    }
    /// The kernel that failed in `op`, a replay (or a launch) that reported a failure: the
    /// launch's own, the one kernel of a replay of one kernel, or the graph's failing node.
    [[nodiscard]] std::string failed_kernel(const PendingOp& op) const;
    void lose(const std::string& reason);

    /// Counts a resolved launch whose kernel found a failed producer and did not compute.
    void count_skipped_on_device() { ++skipped_on_device_; }
    [[nodiscard]] std::uint64_t skipped_on_device() const { return skipped_on_device_; }
    /// Launches whose tensor maps went to the TMA.
    [[nodiscard]] std::uint64_t tma_launches() const {
        return tma_launches_.load(std::memory_order_relaxed);
    }
    /// The error of work the CUDA runtime did not take: the device's loss for a sticky error
    /// (D1), `LaunchRefused` naming the CUDA error otherwise (nothing ran).
    Error refusal_of(const std::string& label, cudaError_t status);
    /// A CUDA event of this device to record: one a completed event left, or a new one.
    Result<cudaEvent_t> take_event();
    /// The waits of stream `id` on other processes' events that event `sequence`, recorded on it,
    /// was recorded after and that are not known to have ended clean: what a stream waiting on
    /// that event joins (null when none, or when the stream is gone). Under the group's lock.
    std::shared_ptr<RemoteWait> waits_before(StreamId id, std::uint64_t sequence);
    /// `event`, complete, for a later `take_event`.
    void reuse_event(cudaEvent_t event) { spare_events_.push_back(event); }

private:
    // The backend contract (server.hpp).
    Result<StreamId> do_create_stream() override;
    DeviceStream* do_find_stream(StreamId id) override { return stream_in(streams_, id); }
    Result<Handle> do_allocate(std::uint64_t size_bytes, StreamId stream) override;
    Result<NativeView> do_native(const BufferBinding* binding, StreamId stream) override;
    Status do_write(const BufferBinding& target, std::span<const std::byte> bytes,
                    StreamId stream) override;
    Result<std::vector<std::byte>> do_read(const BufferBinding& source) override;
    Result<std::vector<std::byte>> do_read_strided(const CopyDescriptor& source) override;
    Result<Event> do_read_async(const BufferBinding& source, std::span<std::byte> into,
                                StreamId stream, std::shared_ptr<ReadBack> state) override;
    Status do_copy(const KernelResource& source, const BufferBinding& target,
                   StreamId stream) override;
    Status do_launch(LaunchRequest&& request) override;
    [[nodiscard]] bool do_can_run(const LaunchRequest& request) const override;
    Status do_replay(const CaptureGraph& graph, StreamId stream,
                     std::span<const std::optional<InjectedFault>> injected) override;
    Result<Event> do_record_event(StreamId stream) override;
    Status do_wait_event(StreamId stream, const Event& event) override;
    Result<bool> do_event_done(const Event& event, bool block) override;
    Status do_settle(const SyncScope& scope) override;
    Status do_settle_window(StreamId stream, const CaptureWindow& window) override;
    void do_lose_now() override;
    void do_release_stream(DeviceStream& stream) override;
    void do_delay(DeviceStream& stream, std::uint64_t steps) override;
    Status do_check_adopted(const AdoptedMemory& memory) override;
    void do_fault_armed() override { update_quick_allocation(); }
    Status do_admit_peer(ServiceId accessor) override;
    Result<CaptureGraph> do_make_graph(CaptureWindow& window) override;
    Result<CudaStream*> stream(StreamId id);
    /// A pending op of `kind` for work on `stream` of this device, ordered after the stream's
    /// waits on other processes' events (`follow_waits`).
    std::shared_ptr<PendingOp> new_op(PendingOp::Kind kind, CudaStream& stream);

    // Waits on other processes' events (device_remote.cpp, remote_wait.hpp).
    /// Folds `stream`'s waits into `failed_wait` once they are over, forgetting them.
    void fold_waits(CudaStream& stream);
    /// Orders `op`, work enqueued on `stream`, after the stream's waits: it is skipped with the
    /// failure of a wait known to have failed, and otherwise holds the newest pending wait, whose
    /// failure it follows when its report is filled in.
    void follow_waits(PendingOp& op, CudaStream& stream);
    /// Enqueues on `stream` a wait for `event`, recorded by a device of another process: a host
    /// function that returns once the event is reached (or will never be). `InvalidArgument`,
    /// and nothing enqueued, past `RemoteWait::max_chain` pending waits of the stream.
    Status wait_other_process(CudaStream& stream, const Event& event);
    /// Orders `stream` after the waits of another stream of the runtime that `event`, an event of
    /// this runtime it waits on, was recorded after. `InvalidArgument`, and nothing changes, when
    /// the stream would follow more than `RemoteWait::max_chain` pending waits.
    Status join_waits(CudaStream& stream, const Event& event);
    /// Whether `quick_allocation_` may hold now; call after `lost_` or the fault plan changed.
    void update_quick_allocation();
    /// Where the first byte of `binding`'s range is. The binding must be of this device (callers
    /// check the service first); it keeps its allocation live, so its address is current.
    [[nodiscard]] std::uint8_t* device_pointer(const BufferBinding& binding) const;
    /// Where a write or copy into `target` on `stream` goes: checks the device is alive, the
    /// binding is this device's (P1), the stream exists and the memory is live.
    struct WriteTarget {
        CudaStream* stream;
        std::uint8_t* pointer;
    };
    Result<WriteTarget> write_target(const BufferBinding& target, StreamId stream);
    /// Enqueues `request` on `stream` (the request's, found by the caller); a replay passes its
    /// own op, whose status word every launch shares. Its resources move into the work that
    /// holds them.
    /// `as_copy` names the client copy it runs for: such a launch is labelled as the copy, and
    /// carries no injected kernel fault (a copy is not a launch: the Server drew none for it).
    /// With `handoff`, a launch that goes to the GPU is recorded, encoded and left in it to issue:
    /// the caller lets go of the group's lock, then calls `issue`.
    Status enqueue_launch(LaunchRequest& request, CudaStream& stream, bool check_inputs,
                          PendingOp* replay, const std::string* as_copy = nullptr,
                          PreparedIssue* handoff = nullptr);
    /// Makes the driver's call of `prepared`, without the group's lock, and closes its issue.
    void issue(const PreparedIssue& prepared);
    /// Makes `launcher`'s call with `params` on `stream`, this GPU current and its context in the
    /// block for the launcher; returns what the launch returned.
    cudaError_t call_launcher(Launcher launcher, const LaunchConfig& config,
                              const CudaStream& stream, TensorLaunchParams& params) const;
    /// Counts a launch the driver took whose tensor maps went to the TMA.
    void count_tma(const TensorLaunchParams& params) {
        if (params.tma_slot_bytes != 0) {
            tma_launches_.fetch_add(1, std::memory_order_relaxed);
        }
    }
    /// Fills `params.producers` with the producers of `consumer`'s inputs the GPU checks before it
    /// computes; false when an input is known to end up claimed, so the launch must not run.
    bool add_producers(const Work& consumer, TensorLaunchParams& params);
    /// What the host knows of `work`'s inputs before it enqueues work that checks no status word
    /// (a copy, external work). A producer that `lands` counts as clean: its stream, or the event
    /// the program waits on, puts it first on the GPU. `Pending` means some other producer's
    /// outcome is not known yet.
    [[nodiscard]] SettlePipeline::Inputs host_inputs(const Work& work) const;
    /// Encodes `request` for `op` and launches it on the GPU; a refusal of the CUDA runtime
    /// becomes `op`'s.
    /// With `handoff`, leaves the call in it instead (not for a replay).
    void run_on_gpu(const LaunchRequest& request, Launcher launcher, CudaStream& stream,
                    PendingOp& op, PendingOp* replay, std::optional<InjectedFault> injected,
                    PreparedIssue* handoff);
    /// Whether external work recorded as `op` on `stream` may be called now: its inputs are
    /// known clean (the host first learns what its inputs' producers did).
    bool admit_external(PendingOp& op, CudaStream& stream);
    /// The device addresses and sizes of `request`'s bindings, as external work receives them;
    /// how many there are.
    std::size_t external_arguments(const LaunchRequest& request,
                                   std::array<void*, max_launch_resources>& pointers,
                                   std::array<std::uint64_t, max_launch_resources>& sizes) const;
    /// Calls `request`'s external work on `stream`, or reports the fault injected for it; the
    /// outcome is known when it returns (a later sticky error loses the device, D1).
    void run_external(const LaunchRequest& request, CudaStream& stream, PendingOp& op,
                      std::optional<InjectedFault> injected);
    /// Calls `run.cuda`, external work `name`, on `stream` over `pointers` and `sizes`: its
    /// failure, or the CUDA error it left; none when it enqueued its work cleanly.
    std::optional<Error> call_external(std::string_view name, const ExternalCallables& run,
                                       std::span<void* const> pointers,
                                       std::span<const std::uint64_t> sizes, CudaStream& stream);
    /// Enqueues a copy whose inputs are clean (or claimed: then `op` is known not to run).
    /// `owner` is the source's device, null for memory of another process.
    void enqueue_copy(PendingOp& op, const CudaDevice* owner, const KernelResource& source,
                      const WriteTarget& target);
    /// The refusal of `request` when it binds memory of another process that is not mapped here
    /// (its region failed to import); none otherwise.
    [[nodiscard]] std::optional<Error> unmapped_peer(const LaunchRequest& request) const;
    /// Enqueues a copy as the catalog's copy kernel, which checks its producers' status words.
    Status copy_as_launch(const KernelResource& source, const BufferBinding& target,
                          const WriteTarget& resolved, const std::string& label);
    /// The error of a call the CUDA runtime failed (a read's copy, an event's creation): the
    /// device's loss for a sticky error (D1), `OutOfMemory` with the device's figures when memory
    /// ran out, `PeerUnreachable` without peer access, `InvalidArgument` naming the CUDA error
    /// otherwise. Never `TornDown`: nothing threw.
    Error call_error(const std::string& what, cudaError_t status);
    /// The resources and arguments of `request` as its kernel receives them.
    /// Every field of `params` a kernel may read; the request is within the launch limits.
    void encode_params(const LaunchRequest& request, TensorLaunchParams& params) const;
    /// Enqueues one launch of `graph`'s CUDA graph for the replay `op` on `stream`, with the
    /// injected kernel fault drawn for each of its launches (none when `injected` is empty).
    void replay_graph(const CaptureGraph& graph, PendingOp& op, CudaStream& stream,
                      std::span<const std::optional<InjectedFault>> injected);
    /// The CUDA graph of a capture window's launches (C14), or why the driver refused it.
    Result<std::shared_ptr<void>> build_graph(const std::vector<LaunchRequest>& launches);
    /// `producer`'s status word as this device's kernels can read it: a word on this GPU, or on
    /// a GPU whose memory this one was granted; null otherwise (the host checks it on resolve).
    [[nodiscard]] const unsigned long long* readable_status_word(const PendingOp& producer) const;
    /// Enqueues `op` on the group's pipeline (which counts it against an injected loss).
    void push(std::shared_ptr<PendingOp> op);
    /// The group the device is in; under its lock.
    [[nodiscard]] CudaGroup& group() const;
    /// `check_event` against the events the runtime recorded so far.
    [[nodiscard]] Status check_recorded(const Event& event) const;

    CudaEngine& engine_;
    std::uint32_t index_;
    int ordinal_;
    bool shares_gpu_;  // Other devices of the runtime run on this GPU (`CudaOptions::gpus`).
    std::deque<CudaStream> streams_;
    CudaStorage storage_;
    CompletedStreamOrder order_;  // Work holds its memory until resolved.
    MemoryManager memory_;
    unsigned long long* status_device_ = nullptr;
    /// One word per status slot: where a replay's first failing node writes its place in the
    /// graph (`CudaGraph::kernel_of`), read by the host only when the replay failed.
    std::uint32_t* failed_nodes_device_ = nullptr;
    unsigned long long* status_host_ = nullptr;  // Pinned; `status_slots` words.
    /// `status_host_` as kernels reach it, or null.
    unsigned long long* status_host_mapped_ = nullptr;
    std::uint64_t next_slot_ = 0;
    /// The next id of a launch or replay, in [1, `CudaOptions::last_launch_id`].
    std::uint32_t next_launch_id_ = 1;
    /// Counts the graphs built, whose ids lie above every launch id.
    std::uint32_t graphs_built_ = 0;
    std::uint64_t skipped_on_device_ = 0;
    /// Counted by launches as their calls return, some with the group's lock let go.
    std::atomic<std::uint64_t> tma_launches_{0};
    /// The injected codes of the replay being enqueued, kept for their storage.
    std::vector<std::uint32_t> replay_codes_;
    /// CUDA events of completed recordings, kept for the next ones.
    std::vector<cudaEvent_t> spare_events_;
    /// Compute capability 9.0 or later: the GPU has a tensor memory accelerator.
    bool tma_capable_ = false;
    /// True while the device is not lost and no allocation failure is armed: an allocation then
    /// needs nothing the group's lock guards, only the memory manager (whose own lock serialises
    /// it). Changed under the group's lock, with `lost_` and the fault plan.
    std::atomic<bool> quick_allocation_{true};

    /// The id of a launch or a replay about to be issued, which no status word holds yet: when the
    /// ids have run out, every device's work is waited for and settled and every word of this
    /// device cleared first, so that no word of an earlier launch matches a new one.
    std::uint32_t take_launch_id();
    /// Zeroes every status word, the GPU's and the host's copy, waiting for the GPU's; no
    /// launch of this device may be running.
    cudaError_t clear_status_words();
    /// The id of a graph being built: above every launch id, so a word a failed replay of it
    /// left in a slot never matches a launch given that slot later.
    std::uint32_t take_graph_id() {
        return CudaOptions::last_launch_id + 1 + (graphs_built_++ & CudaOptions::last_launch_id);
    }
    /// Keeps the status word a launch is about to take from being one unsettled work still
    /// holds: resolves the oldest work when unsettled work reaches half the slots.
    void keep_status_words_bounded();
    /// Waits for this device's work enqueued so far and what it needs of other devices, and
    /// settles it; `may_unlock` at the top of a call (a sync), to wait with the group's lock let
    /// go (`CudaEngine::resolve_waited`).
    void settle_own_work(bool may_unlock = false);
    /// Waits for the writers of `keys` (on any device) and what they need, and settles them.
    /// `may_unlock` at the top of a call (a read, a sync): writers other threads enqueue while it
    /// waits unlocked are waited for too, so the bytes are final when it returns.
    void settle_for_read(std::span<const ClaimKey> keys, bool may_unlock = false);
};

/// A group of devices (device_groups.hpp) on CUDA: its pipeline, the events its devices
/// recorded and not yet known complete, and how it learns what its GPUs did. Every call is under
/// the group's lock.
class CudaGroup final : public DeviceGroup {
public:
    explicit CudaGroup(CudaEngine& engine);
    /// Destroys the CUDA events still recorded (their devices waited for them first).
    ~CudaGroup() override;

    /// Takes over the events `other` still holds, their places in the pipeline translated.
    void absorb(DeviceGroup& other, const MovedSequences& moved) override;

    /// A pending op of `kind` to fill: a settled one reused, or a new one.
    std::shared_ptr<PendingOp> new_op(PendingOp::Kind kind);
    /// Waits for every device of the group, fills in the report of every pending op, and
    /// settles them all.
    Status resolve_all();
    /// Learns the outcome of the work that must settle before the allocations of `reads` are
    /// final, or before the work `seed` picks can settle (`SettlePipeline::for_each_needed`):
    /// waits for the streams that hold it, and no other, then settles what can be. Whole
    /// devices listed in `whole`, and `stream` (a device and a stream), are waited for too.
    /// `may_unlock`: see `resolve_waited`.
    void resolve_needed(std::span<const ClaimKey> reads,
                        const std::function<bool(const Work&)>& seed,
                        std::span<const std::uint32_t> whole = {}, bool may_unlock = false,
                        std::optional<std::pair<std::uint32_t, StreamId>> stream = std::nullopt);
    /// `resolve_needed` for the inputs of `consumer`.
    void resolve_inputs(const Work& consumer);
    /// Learns the outcome of the `count` oldest unsettled works and settles what can be: what a
    /// table at its bound pays, instead of resolving everything queued.
    void resolve_oldest(std::size_t count);

    struct EventState {
        cudaEvent_t event = nullptr;
        std::uint32_t device = 0;
        StreamId stream;
        /// The pipeline's next sequence when it was recorded: the work before it has a lower one.
        std::uint64_t before = 0;
    };
    /// Events recorded and not yet known complete, by sequence (oldest first). Waiting for a
    /// whole device completes its events (a lost device's are never waited on): their CUDA
    /// events go back to their device for reuse, and a later wait on one (a sequence below the
    /// engine's `next_event` no longer here) waits for nothing.
    std::map<std::uint64_t, EventState> events;
    /// Completes and forgets the oldest event, and any after it that are complete: what the
    /// bound on live events costs a recording, instead of resolving everything.
    void retire_oldest_event();
    /// Blocks until `event` (of a device of the group, checked) completes, then learns the
    /// outcome of the work enqueued before it on its stream and settles what can be.
    void wait_for_event(const Event& event, bool may_unlock = false);
    /// Whether `event` has completed; a sticky error loses its device (D1).
    bool event_complete(const Event& event);

    /// An event of a device of the group that another process waits on, not reached yet.
    struct ExportedEvent {
        std::uint64_t sequence = 0;
        std::uint32_t device = 0;
        StreamId stream;
        /// The pipeline's next sequence when the event was recorded (or exported, when its record
        /// was forgotten by then): the work it was recorded after has a lower one.
        std::uint64_t before = 0;
        /// What the job keeps of the event's stream (`JobMember::export_event`).
        ExportedStream* to = nullptr;
    };
    /// The most exported events not reached yet: as many as a rank may publish.
    static constexpr std::size_t max_exported = 4096;
    /// Exported events not reached yet, oldest first.
    std::vector<ExportedEvent> exported;
    /// Tells the stream of each exported event that is reached now (`ExportedStream::reach`),
    /// with the failed wait it was recorded after, if any, and forgets it: after work settles.
    void reach_exported();

private:
    /// What the GPU reported for `op`, read from its status word (after its stream was waited
    /// for).
    void fill_report(PendingOp& op);
    /// Settles what can be, recycling settled ops no one else holds; then reaches the exported
    /// events that are.
    void settle_known();
    /// Whether `event` is reached: its record completed (a sticky error loses its device), and
    /// every work of the group enqueued before it settled, the work it was recorded after among
    /// them (on any stream: more than that, never less).
    bool exported_reached(const ExportedEvent& event);
    /// Waits for the streams in `waited_`, and the whole devices of `whole`; fills in the reports
    /// of the work that was pending on them when it began, and settles what can be. With
    /// `may_unlock`, where this thread holds the group's lock once (the top of a read, a sync, a
    /// host wait), it records a fence on each stream and waits for the fences with the lock let
    /// go: another thread's enqueues and waits, on this GPU or another, do not queue behind a
    /// wait for the GPU. Nested in another call (a launch learning its producers) it waits
    /// holding the lock, since the call around it holds state of its own.
    void resolve_waited(std::span<const std::uint32_t> whole,
                        std::size_t fill_max = std::numeric_limits<std::size_t>::max(),
                        bool may_unlock = false);
    /// Waits for `fences` with the group's lock let go, then ends each.
    void wait_unlocked(std::vector<Fence>& fences);
    /// Gives `event` of `device` back for reuse, or holds it back while a host wait without the
    /// lock may still be about to wait on an event: reused and recorded again meanwhile, it
    /// would make that wait wait for later work.
    void give_back_event(std::uint32_t device, cudaEvent_t event);
    /// Copies the status words of `ops` (on devices not in `whole`) to the host.
    void fetch_status_of(std::span<PendingOp* const> ops, std::span<const std::uint32_t> whole);
    /// Whether `work`'s stream is among `waited`.
    [[nodiscard]] static bool waits_for(std::span<const std::pair<std::uint32_t, StreamId>> waited,
                                        const Work& work);
    /// Adds `work`'s stream to `waited_` when the work put something on it.
    void wait_for(const Work& work);
    /// Forgets the events of `device`, which completed when the whole device was waited for.
    /// Only those recorded before the engine's `next_event` was `before`.
    void retire_events_of(std::uint32_t device, std::uint64_t before);
    /// Device `index` of the runtime.
    [[nodiscard]] CudaDevice& device_at(std::uint32_t index) const;

    CudaEngine& engine_;
    /// Scratch of `resolve_needed`: the (device, stream) pairs to wait for.
    std::vector<std::pair<std::uint32_t, StreamId>> waited_;
    /// Scratch of `resolve_inputs`.
    std::vector<ClaimKey> input_keys_;
    /// Scratch of `resolve_waited`: the pending ops whose reports it fills in.
    std::vector<PendingOp*> to_fill_;

    /// Host waits for an event in progress without the lock, and the events held back meanwhile.
    int unlocked_event_waits_ = 0;
    std::vector<std::pair<std::uint32_t, cudaEvent_t>> held_back_events_;

    /// Settled ops no one else holds, kept for `new_op`.
    static constexpr std::size_t max_spare_ops = 4096;
    detail::SpareWorks<PendingOp> spare_ops_{max_spare_ops};
};

/// A CUDA runtime's devices, each in a group of its own until a call involves two of them
/// (device_groups.hpp): threads driving GPUs that share nothing never meet on a lock.
class CudaEngine final {
public:
    explicit CudaEngine(CudaOptions options);
    ~CudaEngine();

    [[nodiscard]] CudaDevice* device_of(ServiceId service) const;
    /// Where the first byte `peer` binds is in this process: its address, for shared memory of a
    /// device of this runtime; where it is mapped here, for memory of another process (null when
    /// no region mapped here holds it).
    [[nodiscard]] std::uint8_t* peer_pointer(const PeerBinding& peer) const {
        const ServiceId owner = peer.memory().owner_service();
        if (owner.runtime_id == runtime_id) [[likely]] {
            return reinterpret_cast<std::uint8_t*>(peer.address());
        }
        return imported.local(owner, peer.address(), peer.size());
    }
    /// Why work binding `peer`, memory of another process not mapped here, cannot run.
    [[nodiscard]] std::string unmapped_words(const PeerBinding& peer) const;

    CudaOptions options;
    std::uint64_t runtime_id;
    /// How messages name the runtime (`ServiceId::runtime_number`).
    std::uint32_t runtime_number = next_runtime_number();
    /// The regions of other processes mapped here (a job's other ranks); unmapped after the
    /// devices are gone, once nothing can run on them.
    ImportedMemory imported;
    std::vector<std::shared_ptr<CudaDevice>> devices;
    /// The devices as the pipelines reach them.
    LocalDirectory directory{runtime_id};
    DeviceGroups groups{DeviceGroups::Placement::Apart,
                        [this] { return std::make_unique<CudaGroup>(*this); }};
    /// The sequence the next recorded event gets, on any device: unique in the runtime, so that
    /// joined groups keep their events apart.
    std::atomic<std::uint64_t> next_event{1};

    /// Tells `stream` that `event`, recorded on a device of this runtime, is reached once the work
    /// enqueued before it has run and is settled (`JobMember::export_event`). `InvalidArgument`
    /// for an event of no device of this runtime, or past `CudaGroup::max_exported` events not
    /// reached yet.
    Status export_event(const Event& event, ExportedStream& stream);

    /// Calls `visit(group)` once for each group that holds devices, under its lock; the caller
    /// holds no group's lock.
    template <typename Visit>
    void for_each_group(Visit&& visit) const {
        std::vector<const DeviceGroup*> visited;
        for (std::uint32_t index = 0; index < devices.size(); ++index) {
            const GroupLock lock(groups, index);
            if (std::find(visited.begin(), visited.end(), &lock.group()) == visited.end()) {
                visited.push_back(&lock.group());
                visit(static_cast<CudaGroup&>(lock.group()));
            }
        }
    }
};

/// The message of a CUDA error.
std::string cuda_error_text(cudaError_t error);
/// Zeroes `bytes` of device memory at `words` and waits until it is done. A plain `cudaMemset` is
/// asynchronous and goes to the legacy stream, which tandem's non-blocking streams do not wait
/// for: a kernel could write a word the late memset then clears, losing its report.
cudaError_t clear_device_words(void* words, std::size_t bytes);
/// Whether a CUDA error is sticky: the context is unusable and the device must be restarted.
bool sticky(cudaError_t error);

}  // namespace tandem::cuda
