#pragma once

// Running a validated scenario on the simulator and comparing every step with what the file
// expects of it.

#include "scenario.hpp"

#include "tandem/sim/runtime.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tandem::tool {

struct RunOptions {
    /// Overrides the file's seed when set.
    std::optional<std::uint64_t> seed;
    bool record_trace = false;
    /// Keep a snapshot of every device after the last step (for `tandem inspect`).
    bool snapshot = false;
    /// "sim" or "cuda".
    std::string backend = "sim";
    /// On cuda, devices share GPUs (in turn) where the scenario names more devices than there
    /// are GPUs, instead of the scenario being skipped.
    bool share_gpus = false;
    /// Segments kept between the runs that share this pool (none: fresh ones for each run).
    std::shared_ptr<sim::SegmentPool> segments{};
    /// A scenario of several ranks runs as a job simulated in this process, one thread driving
    /// every rank (scenario_in_process.hpp), instead of as a job of processes.
    bool ranks_in_one_process = false;
    /// In one process: the longest delay of a frame between ranks
    /// (`JoinOptions::message_delay_max`); zero: none.
    std::chrono::microseconds message_delay_max{0};
};

struct ScenarioResult {
    std::string path;
    std::string name;
    bool passed = false;
    /// Not run: the scenario is not meant for this backend, or needs more GPUs than are visible
    /// (`skip_reason` says which).
    bool skipped = false;
    std::string skip_reason;
    /// The first step that did not do what the file expects, with its file:line:column.
    std::string failure;
    std::uint64_t seed = 1;
    std::size_t steps_run = 0;
    std::uint64_t scheduler_steps = 0;
    std::uint64_t trace_hash = 0;
    double seconds = 0;
    std::vector<sim::RaceReport> races;
    std::vector<sim::TraceRecord> trace;
    std::vector<sim::DeviceSnapshot> devices;
    /// Each step's outcome as one line ("ok", or the error kind and message), for inspect.
    std::vector<std::string> outcomes;
};

/// What a scenario run as a job (`devices: {ranks: N}`) needs of the job: the buffers of other
/// ranks' devices, by name.
struct RankHooks {
    /// The handle of a buffer of another rank's device, which that rank shared (looked up).
    std::function<Result<Handle>(const std::string& name)> resolve;
    /// Shares `handle`, which a share step just shared with peers, with the other ranks.
    std::function<Status(const std::string& name, const Handle& handle)> publish;
    /// The service of `device`, a device of another rank.
    std::function<ServiceId(std::uint32_t device)> service_of;
    /// Shares `event`, which a record step of this rank just recorded, with the other ranks
    /// under `name` (`shared_event_name`).
    std::function<Status(const std::string& name, const Event& event)> publish_event;
    /// The event another rank shared under `name`, for a wait step of this rank.
    std::function<Result<Event>(const std::string& name)> resolve_event;
};

/// The name the `count`-th record (from 1) of the file's event `event` is shared under across
/// ranks: one name a record, since a file may record an event again.
std::string shared_event_name(const std::string& event, std::uint64_t count);

/// One rank's part of a scenario run as a job: it runs the steps of its own devices, in the
/// file's order, and waits for every rank where that order passes from one rank to another.
struct RankRun {
    std::uint32_t rank = 0;
    /// Clients by the scenario's device number: this rank's devices only.
    std::vector<std::optional<Client>> clients;
    RankHooks hooks;
    /// The rank that runs `device`.
    std::function<std::uint32_t(std::uint32_t device)> rank_of;
    /// Waits for every rank, each with its work settled.
    std::function<Status()> barrier;
    /// Waits for this rank's work.
    std::function<Status()> sync_all;
};

/// Runs `run.rank`'s part of `scenario`. `failed_step` is the index of the step that differed
/// (or at whose barrier the job failed), or the step count when none did.
ScenarioResult run_scenario_rank(const Scenario& scenario, RankRun run, std::size_t& failed_step);

/// The seed a run uses: the override, else the file's, else 1.
std::uint64_t effective_seed(const Scenario& scenario, const RunOptions& options);

ScenarioResult run_scenario(const Scenario& scenario, const RunOptions& options);

}  // namespace tandem::tool
