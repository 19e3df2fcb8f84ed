#pragma once

// The simulator: several devices in one process, each with its memory in a shared-memory
// segment, running every failure rule with every access checked.
//
// One seed drives everything a run does: the order in which the deterministic scheduler
// interleaves the streams of all devices, injected faults drawn by probability, and the garbage
// that bytes never written read as. The same seed gives the same trace, bit for bit. In threads
// mode each stream runs on a worker thread instead (real concurrency, for thread sanitizers).

#include "tandem/core/client.hpp"
#include "tandem/core/pool_options.hpp"
#include "tandem/core/runtime.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tandem::sim {

class SegmentPool;

/// How the simulator runs the streams of its devices.
enum class SchedulerMode : std::uint8_t {
    /// One host thread interleaves every stream of every device from the seed.
    Deterministic,
    /// A worker thread per stream.
    Threads,
};

/// What a simulator runtime is made of: how many devices, the seed that drives the run, how it
/// schedules, and each device's memory.
struct SimOptions {
    /// At most this many devices per runtime.
    static constexpr std::uint32_t max_devices = 64;

    /// Devices of the runtime, from 1 to `max_devices`.
    std::uint32_t devices = 2;
    /// The seed that decides the interleaving, the faults drawn by probability and the bytes never
    /// written: the same seed gives the same run.
    std::uint64_t seed = 1;
    /// How streams are scheduled.
    SchedulerMode mode = SchedulerMode::Deterministic;
    /// The size of each device's segment (sparse until pools take regions).
    std::uint64_t capacity_bytes = std::uint64_t{1} << 30;
    /// How each device's pools carve its segment.
    PoolOptions pools{};
    /// Whether kernels on a device may touch peer memory without an explicit grant.
    bool grant_all_peers = false;
    /// Whether to keep a record of every operation's begin and end (for traces and tests).
    bool record_trace = false;
    /// Where the devices' segments come from and go back to when the runtime ends: none, new
    /// segments unmapped at the end; a pool, segments kept between runtimes (segment.hpp).
    std::shared_ptr<SegmentPool> segments{};
    /// The job rank the runtime serves (`Job::join`, through `open_runtime`): its devices are
    /// named "device D of rank R", and their simulated addresses lie in the
    /// rank's own part of the address space, so no two ranks of a job share one. Unset outside a job.
    std::optional<std::uint32_t> rank{};
};

/// One begin or end of an operation, in scheduler steps.
struct TraceRecord {
    /// Records kept per run; past this, records are counted but dropped.
    static constexpr std::size_t max_records = 1'000'000;
    /// Whether a record opens or closes an operation.
    enum class Phase : std::uint8_t { Begin, End };

    /// The scheduler step it happened at.
    std::uint64_t step = 0;
    /// The device, numbered from 0.
    std::uint32_t device = 0;
    /// The stream of that device.
    StreamId stream;
    /// The operation's number in enqueue order across the runtime; its begin and end share it.
    std::uint64_t sequence = 0;
    /// The kernel's name, or what the operation is ("host write", "copy").
    std::string label;
    /// Whether the operation begins or ends here.
    Phase phase = Phase::Begin;
    /// At the end: "ok", "failed", "skipped" or "lost", then a colon and the reason.
    std::string outcome;
};

/// Two accesses to the same bytes that no event, sync or system-scope atomic ordered.
struct RaceReport {
    /// The earlier access: "read by" or "write by", then the operation.
    std::string first;
    /// The later access, in the same words.
    std::string second;
    /// The bytes both touched.
    ClaimKey bytes;
};

/// A snapshot for `tandem inspect` and drain checks.
struct DeviceSnapshot {
    /// The device.
    ServiceId service;
    /// The name its shared-memory segment was created under (unlinked from /dev/shm once mapped).
    std::string segment;
    /// Its memory figures.
    MemoryUsage usage;
    /// How many allocations are live.
    std::size_t allocations = 0;
    /// How many of them carry a claim.
    std::size_t claimed_allocations = 0;
    /// How many failures are live in its failure graph.
    std::size_t failures = 0;
    /// Whether it is lost (D1).
    bool lost = false;
};

class Engine;

/// The simulator's runtime: devices on shared-memory segments in this process, whose streams a
/// deterministic scheduler interleaves from one seed (or worker threads run), with every kernel
/// access checked, faults injected on demand and races between streams reported.
class SimRuntime final : public Runtime {
public:
    /// A runtime with `options.devices` devices. `InvalidArgument` for zero or too many devices;
    /// errors from the system (no /dev/shm, say) as they come.
    static Result<std::shared_ptr<SimRuntime>> create(SimOptions options = {});
    /// Its devices, and what they hold, live while the runtime or any client of it does: a
    /// client kept past the runtime still works, and the last of them lets go of the devices
    /// (after their work is done).
    ~SimRuntime() override;

    [[nodiscard]] std::string_view backend() const override { return "sim"; }
    SimRuntime(const SimRuntime&) = delete;
    SimRuntime& operator=(const SimRuntime&) = delete;

    [[nodiscard]] std::size_t device_count() const override;
    /// The client of device `index` (`index < device_count()`).
    [[nodiscard]] Client client(std::size_t index) const override;
    [[nodiscard]] std::uint64_t runtime_id() const override;
    /// The options it was created with.
    [[nodiscard]] const SimOptions& options() const;

    /// Runs every device's work to the end.
    Status sync_all() override;
    /// A hash of every scheduling decision and outcome so far: equal for equal seeds.
    [[nodiscard]] std::uint64_t trace_hash() const;
    /// How many scheduler steps ran.
    [[nodiscard]] std::uint64_t steps() const;
    /// Every race found so far, in the order found.
    [[nodiscard]] std::vector<RaceReport> races() const;
    /// The begin and end of every operation so far (when `record_trace` is on).
    [[nodiscard]] std::vector<TraceRecord> trace() const;
    /// A snapshot of every device now, in device order.
    [[nodiscard]] std::vector<DeviceSnapshot> inspect() const;
    /// No claim, no failure and no live allocation on any device (after `sync_all`).
    [[nodiscard]] bool drained() const override;
    /// The names the devices' segments were created under, in device order (no longer in
    /// /dev/shm: each is unlinked once mapped).
    [[nodiscard]] std::vector<std::string> segment_names() const;

private:
    explicit SimRuntime(std::unique_ptr<Engine> engine);
    /// Shared with every client it hands out (`client`), which point at one of its devices.
    std::shared_ptr<Engine> engine_;
};

}  // namespace tandem::sim
