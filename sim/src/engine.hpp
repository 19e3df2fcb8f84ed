#pragma once

// The simulator's internals: devices (each a `Server`), their streams, and the engine that
// schedules work across all of them.

#include "operation.hpp"
#include "race_detector.hpp"
#include "imported_regions.hpp"
#include "segment_storage.hpp"

#include "tandem/backend/claim_store.hpp"
#include "tandem/backend/cross_process_events.hpp"
#include "tandem/backend/detail/spare_works.hpp"
#include "tandem/backend/device_groups.hpp"
#include "tandem/backend/fault_plan.hpp"
#include "tandem/backend/job_member.hpp"
#include "tandem/backend/memory_manager.hpp"
#include "tandem/backend/server.hpp"
#include "tandem/backend/settle_pipeline.hpp"
#include "tandem/sim/runtime.hpp"
#include "tandem/sim/segment.hpp"

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <unordered_map>

namespace tandem::sim {

class Engine;

/// Pools on the simulator: memory is released only once every operation holding it is done, so
/// a release event has always completed.
class SimStreamOrder final : public StreamOrder {
public:
    EventToken record(StreamId) override { return EventToken{++next_}; }
    [[nodiscard]] bool completed(EventToken) const override { return true; }
    void wait(StreamId, EventToken) override {}

private:
    std::uint64_t next_ = 0;
};

struct SimStream : DeviceStream {
    SimStream(StreamId stream, std::uint32_t global) : DeviceStream{stream, {}, 0}, global_index(global) {}

    std::uint32_t global_index = 0;
    std::deque<std::shared_ptr<Operation>> queue;
    std::uint64_t next_sequence = 1;
    VectorClock clock;
    /// Why a wait of the stream failed (the event of another process it waited on will never
    /// come): every later work of the stream is skipped with it (`Work::follow_failed_wait`).
    std::optional<Error> after_failed_wait;
};

/// A freed allocation, kept so a fault at its old address can say what happened there.
struct FreedRecord {
    MemoryId id;
    std::uint64_t address = 0;
    std::uint64_t size_bytes = 0;
    std::uint64_t step = 0;
};

class SimDevice final : public Server {
public:
    /// Freed allocations remembered for fault reports.
    static constexpr std::size_t max_freed_records = 64;
    /// Streams a device may have in threads mode, which runs a thread for each; deterministic
    /// mode takes `Server::max_streams`.
    static constexpr std::size_t max_threaded_streams = 1024;

    SimDevice(Engine& engine, std::uint32_t index, std::unique_ptr<Segment> segment);
    ~SimDevice() override;

    // Engine side.
    [[nodiscard]] std::uint32_t index() const { return index_; }
    [[nodiscard]] std::deque<SimStream>& streams() { return streams_; }
    [[nodiscard]] MemoryManager& memory() { return memory_; }
    [[nodiscard]] const MemoryManager& memory() const { return memory_; }
    [[nodiscard]] SegmentStorage& storage() { return storage_; }
    [[nodiscard]] const SegmentStorage& storage() const { return storage_; }
    [[nodiscard]] const Segment& segment() const { return *segment_; }
    [[nodiscard]] std::string describe_address(std::uint64_t address) const;
    /// Marks the device lost with a sticky fault (D1).
    void lose(const std::string& reason);
    /// An injected loss: the work already queued here runs first (as the other backends learn
    /// what their queued work did before they lose the device), then the device is lost.
    void lose_after_queued_work();
    void sweep();

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
    [[nodiscard]] bool do_can_run(const LaunchRequest& request) const override {
        return host_runnable(request);
    }
    Status do_replay(const CaptureGraph& graph, StreamId stream,
                     std::span<const std::optional<InjectedFault>> injected) override;
    Result<Event> do_record_event(StreamId stream) override;
    Status do_wait_event(StreamId stream, const Event& event) override;
    Result<bool> do_event_done(const Event& event, bool block) override;
    Status do_settle(const SyncScope& scope) override;
    Status do_settle_window(StreamId stream, const CaptureWindow& window) override;
    void do_lose_now() override { lose_after_queued_work(); }
    Status do_check_adopted(const AdoptedMemory& memory) override;
    [[nodiscard]] bool do_grants_all_peers() const override;

    /// `do_settle` of one stream, and of the whole device.
    Status settle_stream(StreamId stream);
    Status settle_device();
    Result<SimStream*> stream(StreamId id);
    Status enqueue(StreamId stream, std::shared_ptr<Operation> operation);
    /// Runs the device's work until `stream` has drained, and every unresolved writer of `keys`.
    Status drain_for_read(StreamId stream, std::span<const ClaimKey> keys);
    Result<std::vector<std::byte>> read_ranges(const BufferBinding& source,
                                               const std::vector<ByteRange>& ranges);
    void fill_garbage(const AllocationInfo& info);

    Engine& engine_;
    std::uint32_t index_;
    std::unique_ptr<Segment> segment_;
    SegmentStorage storage_;
    SimStreamOrder order_;
    MemoryManager memory_;
    std::deque<SimStream> streams_;
    std::deque<FreedRecord> freed_;

    /// Seeded noise that fresh allocations are filled from (see fill_garbage).
    std::vector<std::uint64_t> noise_;
    std::uint64_t allocations_made_ = 0;
};

/// Marks the calling thread, for a scope, as running `operation`'s body (on the operation's
/// fiber, or as its stream's worker). A call into tandem made inside that body (external work's
/// host callable calling its client) is then known to come from running work: it may not wait
/// for other work (`Engine::run_until`), which may be queued behind the caller itself.
class RunningHere {
public:
    explicit RunningHere(const Operation& operation);
    ~RunningHere();
    RunningHere(const RunningHere&) = delete;
    RunningHere& operator=(const RunningHere&) = delete;

    /// The operation whose body the calling thread runs now, or null.
    static const Operation* operation();

private:
    const Operation* previous_;
};

class Engine final {
public:
    explicit Engine(SimOptions options);
    ~Engine();

    SimOptions options;
    std::uint64_t runtime_id;
    /// How messages name the runtime (`ServiceId::runtime_number`).
    std::uint32_t runtime_number = next_runtime_number();
    std::mt19937_64 rng;
    /// The segments of other processes' devices mapped here (a job's peer ranks); unmapped last.
    ImportedRegions imported;
    std::vector<std::shared_ptr<SimDevice>> devices;
    RaceDetector races;
    VectorClock host_clock;
    std::uint64_t trace_hash = 0xcbf29ce484222325ULL;
    std::uint64_t steps = 0;
    /// The devices as the pipeline reaches them.
    LocalDirectory directory{runtime_id};
    /// One group for every device, for good: the deterministic scheduler is one schedule of all
    /// of them, and threads mode keeps its scheduling state together with it.
    DeviceGroups groups{DeviceGroups::Placement::Together,
                        [this] { return std::make_unique<DeviceGroup>(directory); }};
    /// Serialises all scheduling state in threads mode; uncontended in deterministic mode.
    detail::EngineMutex& mutex = groups.shared().mutex;
    std::condition_variable_any changed;

    struct EventState {
        bool completed = false;
        VectorClock clock;
        std::uint32_t device = 0;
        /// Recorded on a stream after a wait that failed: a wait on it fails the same way.
        std::optional<Error> after_failed_wait;
    };
    /// Recorded events remembered. Past it, completed events are forgotten, oldest first, and
    /// their clocks merged into `forgotten_events_clock`, which a wait on a forgotten event (one
    /// recorded, completed and no longer here) merges.
    static constexpr std::size_t max_recorded_events = 1 << 14;
    std::unordered_map<std::uint64_t, EventState> events;
    VectorClock forgotten_events_clock;
    std::uint64_t oldest_remembered_event = 1;
    /// Whether event `sequence` (recorded here) has completed.
    [[nodiscard]] bool event_completed(std::uint64_t sequence) const {
        auto found = events.find(sequence);
        return found == events.end() || found->second.completed;
    }
    /// The clock a wait on event `sequence` merges.
    [[nodiscard]] const VectorClock& event_clock(std::uint64_t sequence) const {
        auto found = events.find(sequence);
        return found == events.end() ? forgotten_events_clock : found->second.clock;
    }
    /// Forgets completed events, oldest first, while more than the bound are remembered.
    void forget_events();

    // Events that cross processes (exported_events.cpp).
    /// Tells `stream` that `event`, recorded on a device of this runtime, is reached once the work
    /// its record happened after (on any stream) has run and is settled
    /// (`JobMember::export_event`).
    Status export_event(const Event& event, ExportedStream& stream);
    /// Notes that exported event `sequence` was just recorded after `failed_wait` (if any).
    void note_exported_record(std::uint64_t sequence, const std::optional<Error>& failed_wait);
    /// Tells the streams of exported events that are reached now; after work settles.
    void reach_exported();
    /// Whether the wait `op`, on another process's event, may start: the event is reached, or
    /// will never be (the owner is lost), or the wait is past its limit. Starts the limit's
    /// clock the first time it finds the event not reached.
    [[nodiscard]] bool remote_wait_over(Operation& op) const;
    /// How the wait `op` on another process's event ended, once `remote_wait_over`.
    [[nodiscard]] Status remote_wait_outcome(const Operation& op) const;
    /// Whether the head of some stream is a wait on another process's event that is not over:
    /// the scheduler then pauses (`remote_pause`) for the other process instead of calling
    /// the waiters deadlocked.
    [[nodiscard]] bool waits_on_other_process();

    /// Work enqueued and not settled, at most; an enqueue past it runs the oldest work first.
    static constexpr std::size_t max_unsettled_work = 1 << 15;
    static_assert(OperationBlocks::max_kept == max_unsettled_work,
                  "keep as many operation blocks as may be unsettled");
    std::uint64_t next_event = 1;
    std::uint32_t next_stream_global = 0;

    /// An operation of `kind` to fill: a finished one reused (`recycle`), or a new one. Reuse
    /// keeps the storage of its vectors, so a launch on a busy runtime makes no heap call for
    /// them; on a fresh one each launch grew them from empty.
    std::shared_ptr<Operation> new_operation(Operation::Kind kind);
    /// Keeps `operation` for `new_operation` when no one else holds it; under `mutex`.
    void recycle(std::shared_ptr<Operation>&& operation);
    /// `SettlePipeline::settle_ready` and `settle_known`, recycling what they drop.
    void settle_ready();
    void settle_known();

    /// Every operation that touches bytes, from enqueue until its claims are settled.
    SettlePipeline& pipeline = groups.shared().pipeline;

    [[nodiscard]] SimDevice* device_of(ServiceId service) const;
    /// Where the byte at device `address` of `owner` is in this process: in the owner's segment
    /// for a device of this runtime, in a region mapped from another process otherwise (null
    /// when none holds it: memory a peer rank shared is mapped before a handle of it exists).
    [[nodiscard]] std::byte* host_of(ServiceId owner, std::uint64_t address) const;
    /// Whether any stream other than `operation`'s has work queued.
    [[nodiscard]] bool other_work_waiting(const Operation& operation) const;
    void mix_trace(std::uint64_t value);
    void record(const Operation& operation, TraceRecord::Phase phase, std::string outcome = {});
    std::vector<TraceRecord> trace;

    /// Runs work until `done()` holds or nothing more can run. A deadlock (every stream with work
    /// waits on something that can never happen) fails the waiters and is returned as an error.
    /// Called from inside running work (`RunningHere`), it runs nothing: `InvalidArgument` naming
    /// the work unless `done()` holds already.
    Status run_until(const std::function<bool()>& done);
    /// Wakes workers after enqueueing (threads mode).
    void notify();

    // Execution (execute.cpp).
    void start(SimDevice& device, SimStream& stream, const std::shared_ptr<Operation>& operation);
    /// The wait `op` on `stream` ends: ordered after its event's work, or failed (another
    /// process's event that will never come), which the stream's later work follows.
    void wait_for_event(SimStream& stream, Operation& op);
    void resume(SimDevice& device, SimStream& stream, const std::shared_ptr<Operation>& operation);

    void start_workers();
    void stop_workers();

private:
    bool step_deterministic(Status& deadlock);
    Status resolve_deadlock();
    /// Runs a launch's or a replay's kernels (on a fiber, or the stream's worker).
    void run_launches(SimDevice& device, SimStream& stream,
                      const std::shared_ptr<Operation>& operation);
    /// Fills in the report of `op`, which just ended; returns the trace's outcome line.
    std::string report(SimDevice& device, SimStream& stream, Operation& op);
    void finish(SimDevice& device, SimStream& stream, const std::shared_ptr<Operation>& operation);
    void worker(std::uint32_t device, std::uint32_t stream_local);
    /// Holds stream `stream_local` of `device` back for its delay, counted in microseconds in
    /// threads mode (as on a GPU): scheduler steps are the deterministic scheduler's, and a worker
    /// has no steps to count. The caller holds the lock through `lock`; the wait lets go of it.
    void hold_back(SimDevice& device, std::uint32_t stream_local,
                   std::unique_lock<detail::EngineMutex>& lock);

    /// An event another process waits on, not reached yet.
    struct ExportedEvent {
        std::uint64_t sequence = 0;
        ExportedStream* stream = nullptr;
        /// Why a wait before its record failed, taken as the record completes: the event may be
        /// forgotten (`forget_events`) before the work before it is settled.
        std::optional<Error> failed_wait;
    };
    /// Whether the work `exported`'s record happened after has run and is settled.
    bool exported_reached(const ExportedEvent& exported);
    /// The exported events not reached yet, oldest first: at most as many as a job lets a rank
    /// publish.
    std::vector<ExportedEvent> exported_;
    /// The pauses of the scheduler while it waits for other processes.
    CounterPause remote_pause_;

    /// Finished operations no one else holds, kept for `new_operation`: as many as may be
    /// unsettled at once, so a program that keeps that much work pending reuses all of it.
    detail::SpareWorks<Operation> spare_operations_{max_unsettled_work};

    std::vector<std::thread> workers_;
    /// Streams of each device that have a worker (threads mode).
    std::vector<std::size_t> workers_per_device_;
    bool stopping_ = false;
    friend class SimDevice;
};

}  // namespace tandem::sim
