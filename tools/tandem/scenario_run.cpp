// Runs a scenario's steps on a fresh simulator runtime. Each step runs through the public
// Client, so a scenario checks exactly what a program would see; the runner then compares the
// step's outcome with the file's expectation and stops at the first step that differs.

#include "scenario_run.hpp"

#include "scenario_in_process.hpp"
#include "scenario_ranks.hpp"

#if TANDEM_TOOL_HAS_CUDA
#include "tandem/cuda/runtime.hpp"
#endif

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <sstream>

namespace tandem::tool {

std::uint64_t effective_seed(const Scenario& scenario, const RunOptions& options) {
    return options.seed.value_or(scenario.seed.value_or(1));
}

namespace {

/// Scenarios stay small; a small sparse segment keeps /dev/shm use low when many run.
constexpr std::uint64_t default_capacity_bytes = std::uint64_t{64} << 20;

/// What a step did: an error, the bytes a read returned, or a problem the runner found itself
/// (a name whose defining step failed, a graph that was never captured).
struct Outcome {
    std::optional<Error> error;
    std::optional<std::vector<std::byte>> bytes;
    std::string problem;

    static Outcome of(const Status& status) {
        return status ? Outcome{} : Outcome{status.error(), std::nullopt, {}};
    }
    static Outcome trouble(std::string what) { return Outcome{std::nullopt, std::nullopt, std::move(what)}; }
};

void root_kinds(const Error& error, std::vector<ErrorKind>& kinds) {
    if (const auto* unwritten = error.details_as<UnwrittenDetails>()) {
        root_kinds(*unwritten->root, kinds);
    } else if (const auto* several = error.details_as<SeveralDetails>()) {
        for (const Error& each : several->errors) {
            root_kinds(each, kinds);
        }
    } else {
        kinds.push_back(error.kind());
    }
}

/// Why `error` does not match `expected`, or empty when it does.
std::string mismatch(const Error& error, const FailureExpectation& expected) {
    const std::string report = error.report();
    if (expected.kind && error.kind() != *expected.kind) {
        return "expected " + std::string(to_string(*expected.kind)) + ", got:\n" + report;
    }
    if (expected.root) {
        std::vector<ErrorKind> kinds;
        root_kinds(error, kinds);
        if (std::find(kinds.begin(), kinds.end(), *expected.root) == kinds.end()) {
            return "expected a root " + std::string(to_string(*expected.root)) + ", got:\n" + report;
        }
    }
    if (!expected.chain.empty()) {
        const auto* unwritten = error.details_as<UnwrittenDetails>();
        std::vector<std::string> chain;
        for (const SkipRecord& hop : unwritten ? unwritten->chain : std::vector<SkipRecord>{}) {
            chain.push_back(hop.kernel);
        }
        if (chain != expected.chain) {
            return "expected the skip chain to list " + std::to_string(expected.chain.size()) +
                   " hops as the file says, got:\n" + report;
        }
    }
    for (const std::string& needle : expected.report) {
        if (report.find(needle) == std::string::npos) {
            return "expected the report to contain '" + needle + "', got:\n" + report;
        }
    }
    return {};
}

std::string hex_dump(const std::vector<std::byte>& bytes) {
    std::ostringstream out;
    const std::size_t shown = std::min<std::size_t>(bytes.size(), 32);
    for (std::size_t index = 0; index < shown; ++index) {
        out << (index ? " " : "") << std::hex << std::to_integer<unsigned>(bytes[index]);
    }
    if (shown < bytes.size()) {
        out << " ... (" << std::dec << bytes.size() << " bytes)";
    }
    return out.str();
}

class ScenarioRunner {
public:
    /// Runs steps through `clients` (one per device, of any backend; none for a device another
    /// process runs, whose steps this runner is never given); `sync_all` waits for all. `ranks`
    /// reaches the buffers of devices of other processes, for a scenario run as a job.
    ScenarioRunner(const Scenario& scenario, std::vector<std::optional<Client>> clients,
                   std::function<Status()> sync_all, RankHooks ranks = {})
        : scenario_(scenario),
          clients_(std::move(clients)),
          sync_all_(std::move(sync_all)),
          ranks_(std::move(ranks)) {
        for (std::size_t index = 0; index < clients_.size(); ++index) {
            if (clients_[index]) {
                streams_[{static_cast<std::uint32_t>(index), "main"}] =
                    clients_[index]->default_stream();
            }
        }
    }

    Outcome execute(const Action& action) {
        return std::visit([this](const auto& step) { return run(step); }, action);
    }
    /// The event a record step named `name` recorded last, if any.
    [[nodiscard]] std::optional<Event> event(const std::string& name) const {
        const auto found = events_.find(name);
        return found == events_.end() ? std::nullopt : std::optional<Event>(found->second);
    }
    /// Makes `name` name `event` (another rank's) for the wait steps that follow.
    void adopt_event(const std::string& name, const Event& event) {
        events_.insert_or_assign(name, event);
    }

    Outcome inject(const InjectStep& step) {
        Fault fault = step.fault;
        if (auto* delay = std::get_if<StreamDelay>(&fault)) {
            const auto stream = streams_.find({step.device, step.stream});
            if (stream == streams_.end()) {
                return Outcome::trouble("stream '" + step.stream + "' was not created");
            }
            delay->stream = stream->second;
        }
        return Outcome::of(client(step.device).inject(fault));
    }

private:
    const Handle* handle(const std::string& name, std::string& problem) {
        auto found = handles_.find(name);
        if (found == handles_.end() && ranks_.resolve) {
            // A buffer of another process's device: looked up once, kept after.
            if (Result<Handle> resolved = ranks_.resolve(name)) {
                found = handles_.insert_or_assign(name, std::move(*resolved)).first;
            } else {
                problem = resolved.error().message();
                return nullptr;
            }
        }
        if (found == handles_.end()) {
            problem = "buffer '" + name + "' does not exist (the step that defined it failed)";
            return nullptr;
        }
        return &found->second;
    }
    /// The client of `device`, a device this runner runs.
    Client& client(std::uint32_t device) { return *clients_[device]; }
    /// The client of `service`, a device this runner runs (in a job, the file's device numbers
    /// are not the rank's).
    Client& client_of(ServiceId service) {
        for (std::optional<Client>& candidate : clients_) {
            if (candidate && candidate->service() == service) {
                return *candidate;
            }
        }
        return client(service.device_index);
    }
    std::optional<StreamId> stream(std::uint32_t device, const std::string& name) {
        const auto found = streams_.find({device, name});
        return found == streams_.end() ? std::nullopt : std::optional(found->second);
    }

    Outcome run(const AllocateStep& step) {
        const std::optional<StreamId> on = stream(step.device, step.stream);
        if (!on) {
            return Outcome::trouble("stream '" + step.stream + "' was not created");
        }
        Result<Handle> allocated = client(step.device).allocate(step.size_bytes, *on);
        if (!allocated) {
            return Outcome{allocated.error(), std::nullopt, {}};
        }
        handles_.insert_or_assign(step.name, std::move(*allocated));
        return {};
    }
    Outcome run(const SliceStep& step) {
        std::string problem;
        const Handle* parent = handle(step.of, problem);
        if (parent == nullptr) {
            return Outcome::trouble(problem);
        }
        Result<Handle> sliced = parent->slice(step.offset_bytes, step.length_bytes);
        if (!sliced) {
            return Outcome{sliced.error(), std::nullopt, {}};
        }
        handles_.insert_or_assign(step.name, std::move(*sliced));
        return {};
    }
    Outcome run(const StreamStep& step) {
        Result<StreamId> created = client(step.device).create_stream();
        if (!created) {
            return Outcome{created.error(), std::nullopt, {}};
        }
        streams_[{step.device, step.name}] = *created;
        return {};
    }
    Outcome run(const DestroyStreamStep& step) {
        const std::optional<StreamId> on = stream(step.device, step.name);
        if (!on) {
            return Outcome::trouble("stream '" + step.name + "' was not created");
        }
        return Outcome::of(client(step.device).destroy_stream(*on));
    }
    Outcome run(const WriteStep& step) {
        std::string problem;
        const Handle* target = handle(step.buffer, problem);
        if (target == nullptr) {
            return Outcome::trouble(problem);
        }
        return Outcome::of(client(step.device).write(*target, step.data.materialize(target->size_in_use())));
    }
    Outcome run(const LaunchStep& step) {
        const std::optional<StreamId> on = stream(step.device, step.stream);
        if (!on) {
            return Outcome::trouble("stream '" + step.stream + "' was not created");
        }
        std::vector<LaunchArgument> arguments;
        for (const LaunchResource& resource : step.resources) {
            std::string problem;
            const Handle* bound = handle(resource.buffer, problem);
            if (bound == nullptr) {
                return Outcome::trouble(problem);
            }
            arguments.push_back(LaunchArgument{*bound, resource.access, resource.tensor_map});
        }
        KernelArgs args;
        for (const ScalarArg& arg : step.args) {
            arg.is_f64 ? args.f64(arg.f64) : args.u64(arg.u64);
        }
        return Outcome::of(
            client(step.device).launch(step.kernel, step.config, std::move(arguments), args, *on));
    }
    Outcome run(const ShareStep& step) {
        std::string problem;
        const Handle* target = handle(step.buffer, problem);
        if (target == nullptr) {
            return Outcome::trouble(problem);
        }
        Result<Handle> shared = client_of(target->service()).share_with_peers(*target);
        if (!shared) {
            return Outcome{shared.error(), std::nullopt, {}};
        }
        if (ranks_.publish) {
            if (Status published = ranks_.publish(step.buffer, *shared); !published) {
                return Outcome{published.error(), std::nullopt, {}};
            }
        }
        handles_.insert_or_assign(step.buffer, std::move(*shared));
        return {};
    }
    Outcome run(const GrantStep& step) {
        const ServiceId accessor = clients_[step.accessor] ? clients_[step.accessor]->service()
                                                           : ranks_.service_of(step.accessor);
        return Outcome::of(client(step.owner).grant_peer_access(accessor));
    }
    Outcome run(const CopyStep& step) {
        std::string problem;
        const Handle* from = handle(step.from, problem);
        const Handle* to = from ? handle(step.to, problem) : nullptr;
        const std::optional<StreamId> on = stream(step.device, step.stream);
        if (from == nullptr || to == nullptr || !on) {
            return Outcome::trouble(problem.empty() ? "stream '" + step.stream + "' was not created" : problem);
        }
        return Outcome::of(client(step.device).copy(*from, *to, *on));
    }
    Outcome run(const RecordStep& step) {
        const std::optional<StreamId> on = stream(step.device, step.stream);
        if (!on) {
            return Outcome::trouble("stream '" + step.stream + "' was not created");
        }
        Result<Event> recorded = client(step.device).record_event(*on);
        if (!recorded) {
            return Outcome{recorded.error(), std::nullopt, {}};
        }
        events_.insert_or_assign(step.event, *recorded);
        return {};
    }
    Outcome run(const WaitStep& step) {
        const std::optional<StreamId> on = stream(step.device, step.stream);
        const auto event = events_.find(step.event);
        if (!on || event == events_.end()) {
            return Outcome::trouble("event '" + step.event + "' was not recorded");
        }
        return Outcome::of(client(step.device).wait_event(*on, event->second));
    }
    Outcome run(const SyncStep& step) {
        if (!step.device) {
            return Outcome::of(sync_all_());
        }
        std::vector<Handle> named;
        for (const std::string& name : step.buffers) {
            std::string problem;
            const Handle* found = handle(name, problem);
            if (found == nullptr) {
                return Outcome::trouble(problem);
            }
            named.push_back(*found);
        }
        Client& device = client(*step.device);
        return Outcome::of(named.empty() ? device.sync() : device.sync(named));
    }
    Outcome run(const ReadStep& step) {
        std::string problem;
        const Handle* source = handle(step.buffer, problem);
        if (source == nullptr) {
            return Outcome::trouble(problem);
        }
        Client& device = client(step.device);
        Result<std::vector<std::byte>> bytes =
            step.strided ? device.read_strided(*source, step.strided->shape, step.strided->strides,
                                               step.strided->elem_size_bytes)
                         : device.read(*source);
        if (!bytes) {
            return Outcome{bytes.error(), std::nullopt, {}};
        }
        return Outcome{std::nullopt, std::move(*bytes), {}};
    }
    Outcome run(const FreeStep& step) {
        handles_.erase(step.buffer);
        return {};
    }
    Outcome run(const BeginCaptureStep& step) {
        const std::optional<StreamId> on = stream(step.device, step.stream);
        return on ? Outcome::of(client(step.device).begin_capture(*on))
                  : Outcome::trouble("stream '" + step.stream + "' was not created");
    }
    Outcome run(const EndCaptureStep& step) {
        const std::optional<StreamId> on = stream(step.device, step.stream);
        if (!on) {
            return Outcome::trouble("stream '" + step.stream + "' was not created");
        }
        Result<CaptureGraph> graph = client(step.device).end_capture(*on);
        if (!graph) {
            return Outcome{graph.error(), std::nullopt, {}};
        }
        graphs_.insert_or_assign(step.graph, std::move(*graph));
        return {};
    }
    Outcome run(const ReplayStep& step) {
        const std::optional<StreamId> on = stream(step.device, step.stream);
        const auto graph = graphs_.find(step.graph);
        if (!on || graph == graphs_.end()) {
            return Outcome::trouble("graph '" + step.graph + "' was not captured");
        }
        return Outcome::of(client(step.device).replay(graph->second, *on));
    }
    Outcome run(const InjectStep& step) { return inject(step); }
    Outcome run(const AbandonStep&) {
        return Outcome::trouble("an abandon step runs only in a job simulated in one process");
    }

    const Scenario& scenario_;
    std::vector<std::optional<Client>> clients_;
    std::function<Status()> sync_all_;
    RankHooks ranks_;
    std::map<std::string, Handle> handles_;
    std::map<std::pair<std::uint32_t, std::string>, StreamId> streams_;
    std::map<std::string, Event> events_;
    std::map<std::string, CaptureGraph> graphs_;
};

std::string describe_outcome(const Outcome& outcome) {
    if (!outcome.problem.empty()) {
        return "problem: " + outcome.problem;
    }
    if (outcome.error) {
        return std::string(to_string(outcome.error->kind())) + ": " + outcome.error->message();
    }
    return outcome.bytes ? "ok: " + hex_dump(*outcome.bytes) : "ok";
}

/// Why `outcome` is not what `step` expects, or empty.
std::string judge(const Step& step, const Outcome& outcome) {
    if (!outcome.problem.empty()) {
        return outcome.problem;
    }
    if (step.fails) {
        if (!outcome.error) {
            return "expected the step to fail, but it succeeded";
        }
        return mismatch(*outcome.error, *step.fails);
    }
    if (outcome.error) {
        return "expected the step to succeed, got:\n" + outcome.error->report();
    }
    const auto* read = std::get_if<ReadStep>(&step.action);
    if (read && read->expect && outcome.bytes) {
        const std::vector<std::byte> expected = read->expect->materialize(outcome.bytes->size());
        if (expected != *outcome.bytes) {
            return "expected " + read->expect->describe() + ", read " + hex_dump(*outcome.bytes);
        }
    }
    return {};
}

std::string race_mismatch(RaceExpectation expected, const std::vector<sim::RaceReport>& races) {
    if (expected == RaceExpectation::Reported && races.empty()) {
        return "expected a race to be reported, but none was";
    }
    if (expected == RaceExpectation::None && !races.empty()) {
        return "expected no race, but one was reported: " + races.front().first + " / " +
               races.front().second + " on " + to_string(races.front().bytes);
    }
    return {};
}

sim::SimOptions sim_options(const Scenario& scenario, const RunOptions& options) {
    sim::SimOptions sim;
    sim.devices = scenario.devices;
    sim.seed = effective_seed(scenario, options);
    sim.capacity_bytes = scenario.capacity_bytes.value_or(default_capacity_bytes);
    sim.grant_all_peers = scenario.grant_all_peers;
    sim.record_trace = options.record_trace;
    sim.segments = options.segments;
    return sim;
}

/// Runs every step; stops at the first that differs from the file.
void run_steps(const Scenario& scenario, ScenarioRunner& runner, ScenarioResult& result) {
    for (const Step& step : scenario.steps) {
        const Outcome outcome = runner.execute(step.action);
        ++result.steps_run;
        result.outcomes.push_back(step.mark.describe() + " " + std::string(step_kind(step.action)) +
                                  ": " + describe_outcome(outcome));
        const std::string problem = judge(step, outcome);
        if (!problem.empty()) {
            result.failure = step.mark.describe() + ": " + std::string(step_kind(step.action)) +
                             " step: " + problem;
            return;
        }
    }
}

/// The device whose rank runs `action` in a scenario run as a job, or none for a step every rank
/// takes for itself (freeing a name, syncing everything). `owners` maps each buffer to its
/// device, as the steps so far defined them; it learns the buffers `action` defines.
std::optional<std::uint32_t> executing_device(const Action& action,
                                              std::map<std::string, std::uint32_t>& owners) {
    if (const auto* allocate = std::get_if<AllocateStep>(&action)) {
        owners[allocate->name] = allocate->device;
        return allocate->device;
    }
    if (const auto* slice = std::get_if<SliceStep>(&action)) {
        const std::uint32_t owner = owners[slice->of];
        owners[slice->name] = owner;
        return owner;  // The owner slices; another rank slices what it looks up.
    }
    if (const auto* share = std::get_if<ShareStep>(&action)) {
        return owners[share->buffer];
    }
    if (const auto* grant = std::get_if<GrantStep>(&action)) {
        return grant->owner;
    }
    if (const auto* sync = std::get_if<SyncStep>(&action)) {
        return sync->device;
    }
    if (std::holds_alternative<FreeStep>(action)) {
        return std::nullopt;
    }
    return std::visit(
        [](const auto& step) -> std::optional<std::uint32_t> {
            if constexpr (requires { step.device; }) {
                return step.device;
            } else {
                return std::nullopt;
            }
        },
        action);
}

/// `run_steps` for one rank of a job: the steps of its devices, a barrier where the file's
/// order passes from one rank to another. `failed_step` is where it stopped.
/// Events across the ranks of a scenario run as a job: a rank shares each event it records, and
/// a rank that waits on an event another rank recorded looks up that record's event first.
class RankEvents {
public:
    explicit RankEvents(const RankRun& run) : run_(run) {}

    /// Called for every step, in the file's order, whichever rank runs it (`rank`).
    void see(const Action& action, std::optional<std::uint32_t> rank) {
        if (const auto* record = std::get_if<RecordStep>(&action); record && rank) {
            ++records_[record->event];
            recorded_by_[record->event] = *rank;
        }
    }
    /// Before this rank runs `action`: a wait on another rank's event gets that event.
    Status before(const Action& action, ScenarioRunner& runner) const {
        const auto* wait = std::get_if<WaitStep>(&action);
        if (wait == nullptr || !run_.hooks.resolve_event) {
            return {};
        }
        const auto by = recorded_by_.find(wait->event);
        if (by == recorded_by_.end() || by->second == run_.rank) {
            return {};  // Its own event, or one never recorded: the step says so itself.
        }
        Result<Event> found =
            run_.hooks.resolve_event(shared_event_name(wait->event, records_.at(wait->event)));
        if (found) {
            runner.adopt_event(wait->event, *found);
        }
        return found ? Status{} : Status(found.error());
    }
    /// After this rank ran `action`: an event it recorded is shared.
    Status after(const Action& action, const ScenarioRunner& runner) const {
        const auto* record = std::get_if<RecordStep>(&action);
        if (record == nullptr || !run_.hooks.publish_event) {
            return {};
        }
        const std::optional<Event> recorded = runner.event(record->event);
        return recorded ? run_.hooks.publish_event(
                              shared_event_name(record->event, records_.at(record->event)),
                              *recorded)
                        : Status{};
    }

private:
    const RankRun& run_;
    std::map<std::string, std::uint64_t> records_;
    std::map<std::string, std::uint32_t> recorded_by_;
};

}  // namespace

std::string shared_event_name(const std::string& event, std::uint64_t count) {
    return "tandem.scenario.event." + std::to_string(count) + "." + event;
}

namespace {

void run_rank_steps(const Scenario& scenario, ScenarioRunner& runner, const RankRun& run,
                    ScenarioResult& result, std::size_t& failed_step) {
    std::map<std::string, std::uint32_t> owners;
    std::optional<std::uint32_t> last_rank;
    RankEvents events(run);
    for (failed_step = 0; failed_step < scenario.steps.size(); ++failed_step) {
        const Step& step = scenario.steps[failed_step];
        const std::optional<std::uint32_t> device = executing_device(step.action, owners);
        const std::optional<std::uint32_t> rank =
            device ? std::optional(run.rank_of(*device)) : std::nullopt;
        if (rank && last_rank && *rank != *last_rank) {
            if (Status passed = run.barrier(); !passed) {
                result.failure = step.mark.describe() + ": the job, before this step: " +
                                 passed.error().message();
                return;
            }
        }
        last_rank = rank ? rank : last_rank;
        events.see(step.action, rank);
        if (rank && *rank != run.rank) {
            continue;  // Another rank's step.
        }
        Status crossed = events.before(step.action, runner);
        const Outcome outcome = crossed ? runner.execute(step.action)
                                        : Outcome::trouble(crossed.error().message());
        if (crossed) {
            crossed = events.after(step.action, runner);
        }
        ++result.steps_run;
        result.outcomes.push_back(step.mark.describe() + " " + std::string(step_kind(step.action)) +
                                  ": " + describe_outcome(outcome));
        const std::string problem =
            crossed ? judge(step, outcome) : "its event could not cross ranks: " +
                                                 crossed.error().message();
        if (!problem.empty()) {
            result.failure = step.mark.describe() + ": " + std::string(step_kind(step.action)) +
                             " step: " + problem;
            return;
        }
    }
}

/// One rank's runner and its view of the events of the job, for `run_scenario_ranks_in_order`.
struct DrivenRank {
    DrivenRank(const Scenario& scenario, const RankRun& rank_run)
        : run(rank_run), runner(scenario, run.clients, run.sync_all, run.hooks), events(run) {}
    RankRun run;
    ScenarioRunner runner;
    RankEvents events;
};

/// Runs `step` on `rank`: its event crossing first, then the step; the problem, or empty.
std::string run_driven_step(const Step& step, DrivenRank& rank, ScenarioResult& result) {
    Status crossed = rank.events.before(step.action, rank.runner);
    const Outcome outcome =
        crossed ? rank.runner.execute(step.action) : Outcome::trouble(crossed.error().message());
    if (crossed) {
        crossed = rank.events.after(step.action, rank.runner);
    }
    ++result.steps_run;
    result.outcomes.push_back(step.mark.describe() + " " + std::string(step_kind(step.action)) +
                              ": " + describe_outcome(outcome));
    const std::string problem = crossed ? judge(step, outcome)
                                        : "its event could not cross ranks: " +
                                              crossed.error().message();
    return problem.empty() ? problem
                           : step.mark.describe() + ": " + std::string(step_kind(step.action)) +
                                 " step: " + problem;
}

/// Every rank's steps in the file's order (`run_scenario_ranks_in_order`): which rank ran last,
/// and which were abandoned.
class InOrderDriver {
public:
    InOrderDriver(std::vector<std::unique_ptr<DrivenRank>>& ranks, const InOrderHooks& hooks,
                  ScenarioResult& result)
        : ranks_(ranks), hooks_(hooks), result_(result), lost_(ranks.size(), false) {}

    /// Runs `step`; false (with `result.failure` set) when it did not do what the file expects.
    bool run(const Step& step) {
        if (const auto* abandon = std::get_if<AbandonStep>(&step.action)) {
            return abandon_rank(step, abandon->rank);
        }
        const std::optional<std::uint32_t> device = executing_device(step.action, owners_);
        const std::optional<std::uint32_t> rank =
            device ? std::optional(ranks_.front()->run.rank_of(*device)) : std::nullopt;
        if (rank && lost_[*rank]) {
            return fail(step, "runs on rank " + std::to_string(*rank) +
                                  ", which an earlier step abandoned");
        }
        if (rank && last_rank_ && *rank != *last_rank_ && !settle(step, *last_rank_)) {
            return false;
        }
        last_rank_ = rank ? rank : last_rank_;
        for (std::unique_ptr<DrivenRank>& each : ranks_) {
            each->events.see(step.action, rank);
        }
        for (std::uint32_t each = 0; each < ranks_.size(); ++each) {
            if ((rank ? each == *rank : !lost_[each])) {
                result_.failure = run_driven_step(step, *ranks_[each], result_);
                if (!result_.failure.empty()) {
                    return false;
                }
            }
        }
        look_up_shared(step.action);
        return true;
    }
    /// Whether `rank` was abandoned.
    [[nodiscard]] bool lost(std::uint32_t rank) const { return lost_[rank]; }

private:
    bool fail(const Step& step, const std::string& why) {
        result_.failure = step.mark.describe() + ": " + std::string(step_kind(step.action)) +
                          " step: " + why;
        return false;
    }
    bool settle(const Step& step, std::uint32_t rank) {
        if (Status settled = hooks_.settle(rank); !settled) {
            result_.failure = step.mark.describe() + ": the job, before this step: " +
                              settled.error().message();
            return false;
        }
        return true;
    }
    /// After a share step, every other living rank looks the buffer up at once: a handle of
    /// memory whose owner is later lost then reads as lost (D1), as a program holding it would,
    /// instead of failing to be looked up.
    void look_up_shared(const Action& action) {
        const auto* share = std::get_if<ShareStep>(&action);
        for (std::uint32_t each = 0; share != nullptr && each < ranks_.size(); ++each) {
            if (!lost_[each] && ranks_[each]->run.hooks.resolve &&
                ranks_[each]->run.rank != last_rank_) {
                (void)ranks_[each]->run.hooks.resolve(share->buffer);
            }
        }
    }
    /// Settles the rank that ran last, then ends `rank` once every other rank knows it lost.
    bool abandon_rank(const Step& step, std::uint32_t rank) {
        if (lost_[rank]) {
            return fail(step, "rank " + std::to_string(rank) + " was abandoned already");
        }
        if (last_rank_ && !settle(step, *last_rank_)) {
            return false;
        }
        last_rank_.reset();
        lost_[rank] = true;
        ++result_.steps_run;
        const Status abandoned = hooks_.abandon(rank);
        return abandoned ? true : fail(step, abandoned.error().message());
    }

    std::vector<std::unique_ptr<DrivenRank>>& ranks_;
    const InOrderHooks& hooks_;
    ScenarioResult& result_;
    std::vector<bool> lost_;
    std::map<std::string, std::uint32_t> owners_;
    std::optional<std::uint32_t> last_rank_;
};

/// Grants, faults and steps through `runner`; fills `result.failure` at the first difference.
void run_program(const Scenario& scenario, ScenarioRunner& runner, ScenarioResult& result) {
    for (const GrantStep& grant : scenario.grants) {
        (void)runner.execute(grant);
    }
    for (const InjectStep& fault : scenario.faults) {
        if (Outcome injected = runner.inject(fault); injected.error || !injected.problem.empty()) {
            result.failure = scenario.path + ": a fault could not be injected: " + describe_outcome(injected);
        }
    }
    if (result.failure.empty()) {
        run_steps(scenario, runner, result);
    }
}

void run_on_simulator(const Scenario& scenario, const RunOptions& options, ScenarioResult& result) {
    auto created = sim::SimRuntime::create(sim_options(scenario, options));
    if (!created) {
        result.failure = scenario.path + ": the simulator could not start:\n" + created.error().report();
        return;
    }
    std::shared_ptr<sim::SimRuntime> runtime = *created;
    {
        std::vector<std::optional<Client>> clients;
        for (std::size_t index = 0; index < runtime->device_count(); ++index) {
            clients.emplace_back(runtime->client(index));
        }
        ScenarioRunner runner(scenario, std::move(clients), [&runtime] { return runtime->sync_all(); });
        run_program(scenario, runner, result);
        (void)runtime->sync_all();
        if (options.snapshot) {
            result.devices = runtime->inspect();
        }
    }
    if (result.failure.empty()) {
        result.failure = race_mismatch(scenario.races, runtime->races());
        if (!result.failure.empty()) {
            result.failure = scenario.path + ": " + result.failure;
        }
    }
    result.races = runtime->races();
    result.trace = runtime->trace();
    result.scheduler_steps = runtime->steps();
    result.trace_hash = runtime->trace_hash();
}

void run_on_gpus(const Scenario& scenario, const RunOptions& options, ScenarioResult& result) {
#if TANDEM_TOOL_HAS_CUDA
    cuda::CudaOptions cuda_options;
    cuda_options.devices = scenario.devices;
    cuda_options.seed = effective_seed(scenario, options);
    cuda_options.capacity_bytes = scenario.capacity_bytes.value_or(0);
    // A machine with fewer GPUs than the scenario names cannot run it as written: that is a
    // skip, as for a test, naming the count, unless devices may share GPUs. No GPU or no driver
    // is a failure, with its reason.
    const cuda::GpuReport gpus = cuda::probe_gpus();
    if (gpus.problem.empty() && gpus.names.size() < scenario.devices && options.share_gpus &&
        !gpus.names.empty()) {
        cuda_options.gpus = cuda::gpus_in_turn(scenario.devices, gpus.names.size());
    } else if (gpus.problem.empty() && gpus.names.size() < scenario.devices) {
        result.skipped = true;
        result.skip_reason = "needs " + std::to_string(scenario.devices) + " GPUs, " +
                             std::to_string(gpus.names.size()) + " visible";
        return;
    }
    auto created = cuda::CudaRuntime::create(cuda_options);
    if (!created) {
        result.failure = scenario.path + ": the cuda backend could not start: " + created.error().message();
        return;
    }
    std::shared_ptr<cuda::CudaRuntime> runtime = *created;
    std::vector<std::optional<Client>> clients;
    for (std::size_t index = 0; index < runtime->device_count(); ++index) {
        clients.emplace_back(runtime->client(index));
    }
    if (scenario.grant_all_peers) {
        for (std::optional<Client>& owner : clients) {
            for (const std::optional<Client>& accessor : clients) {
                if (Status granted = owner->grant_peer_access(accessor->service()); !granted) {
                    result.failure = scenario.path + ": " + granted.error().message();
                    return;
                }
            }
        }
    }
    ScenarioRunner runner(scenario, std::move(clients), [&runtime] { return runtime->sync_all(); });
    run_program(scenario, runner, result);
    (void)runtime->sync_all();
#else
    (void)options;
    result.failure = scenario.path + ": the cuda backend is not built into this tool";
#endif
}

}  // namespace

ScenarioResult run_scenario_rank(const Scenario& scenario, RankRun run, std::size_t& failed_step) {
    ScenarioResult result;
    result.path = scenario.path;
    result.name = scenario.name;
    failed_step = scenario.steps.size();
    {
        ScenarioRunner runner(scenario, run.clients, run.sync_all, run.hooks);
        // The file's grants and faults, each by the rank of its device, before any step.
        for (const GrantStep& grant : scenario.grants) {
            if (run.rank_of(grant.owner) == run.rank) {
                (void)runner.execute(grant);
            }
        }
        for (const InjectStep& fault : scenario.faults) {
            if (run.rank_of(fault.device) != run.rank) {
                continue;
            }
            if (Outcome injected = runner.inject(fault); injected.error || !injected.problem.empty()) {
                result.failure = scenario.path + ": a fault could not be injected: " +
                                 describe_outcome(injected);
                failed_step = 0;
            }
        }
        if (result.failure.empty()) {
            run_rank_steps(scenario, runner, run, result, failed_step);
        }
        (void)run.sync_all();
    }
    result.passed = result.failure.empty();
    return result;
}

ScenarioResult run_scenario_ranks_in_order(const Scenario& scenario, std::vector<RankRun> runs,
                                           const InOrderHooks& hooks) {
    ScenarioResult result;
    result.path = scenario.path;
    result.name = scenario.name;
    std::vector<std::unique_ptr<DrivenRank>> ranks;
    for (const RankRun& run : runs) {
        ranks.push_back(std::make_unique<DrivenRank>(scenario, run));
    }
    for (const GrantStep& grant : scenario.grants) {
        (void)ranks[runs.front().rank_of(grant.owner)]->runner.execute(grant);
    }
    for (const InjectStep& fault : scenario.faults) {
        const Outcome injected = ranks[runs.front().rank_of(fault.device)]->runner.inject(fault);
        if (injected.error || !injected.problem.empty()) {
            result.failure = scenario.path + ": a fault could not be injected: " +
                             describe_outcome(injected);
            return result;
        }
    }
    InOrderDriver driver(ranks, hooks, result);
    for (const Step& step : scenario.steps) {
        if (!driver.run(step)) {
            break;
        }
    }
    for (std::uint32_t rank = 0; rank < ranks.size(); ++rank) {
        if (!driver.lost(rank)) {
            (void)hooks.settle(rank);
        }
    }
    result.passed = result.failure.empty();
    return result;
}

bool abandons_a_rank(const Scenario& scenario) {
    return std::any_of(scenario.steps.begin(), scenario.steps.end(), [](const Step& step) {
        return std::holds_alternative<AbandonStep>(step.action);
    });
}

ScenarioResult run_scenario(const Scenario& scenario, const RunOptions& options) {
    const auto started = std::chrono::steady_clock::now();
    ScenarioResult result;
    result.path = scenario.path;
    result.name = scenario.name;
    result.seed = effective_seed(scenario, options);
    const auto& backends = scenario.backends;
    if (!backends.empty() && std::find(backends.begin(), backends.end(), options.backend) == backends.end()) {
        result.skipped = true;
        result.skip_reason = "meant for " + backends.front() + " only";
        result.passed = true;
        return result;
    }
    if (scenario.ranks > 1) {
        if (std::string why = why_not_as_job(scenario, options); !why.empty()) {
            result.skipped = true;
            result.skip_reason = "runs as a job of " + std::to_string(scenario.ranks) +
                                 " ranks, and " + why;
            result.passed = true;
            return result;
        }
        if (options.ranks_in_one_process || abandons_a_rank(scenario)) {
            run_in_one_process(scenario, options, result);
        } else {
            run_as_job(scenario, result);
        }
    } else if (options.backend == "cuda") {
        run_on_gpus(scenario, options, result);
    } else {
        run_on_simulator(scenario, options, result);
    }
    result.passed = result.failure.empty();
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return result;
}

}  // namespace tandem::tool
