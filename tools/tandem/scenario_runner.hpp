#pragma once

// What runs a scenario's steps: one runner per process (or per rank of a job simulated in one
// process), each step through the public Client, so a scenario checks exactly what a program
// would see; `judge` then compares a step's outcome with the file's expectation. Shared by the
// run in one runtime and as a job (scenario_run.cpp) and by the job simulated in one process
// (scenario_in_process.cpp), so the steps mean the same wherever they run.

#include "scenario_run.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tandem::tool {

/// What a step did: an error, the bytes a read returned, or a problem the runner found itself
/// (a name whose defining step failed, a graph that was never captured).
struct Outcome {
    std::optional<Error> error;
    std::optional<std::vector<std::byte>> bytes;
    std::string problem;

    static Outcome of(const Status& status) {
        return status ? Outcome{} : Outcome{status.error(), std::nullopt, {}};
    }
    static Outcome trouble(std::string what) {
        return Outcome{std::nullopt, std::nullopt, std::move(what)};
    }
};

/// The outcome as one line: "ok" (with the bytes a read returned), the error kind and message, or
/// the problem.
std::string describe_outcome(const Outcome& outcome);
/// Why `outcome` is not what `step` expects, or empty.
std::string judge(const Step& step, const Outcome& outcome);

/// Runs a scenario's steps on the devices it is given, one step a call, keeping the names the
/// steps define (buffers, streams, events, graphs).
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

    /// Runs one step and says what it did (an abandon or cut step is a problem here: only the
    /// driver of a job simulated in one process runs it).
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

    /// Injects `step`'s fault into its device (a stream delay on the stream it names).
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
        return Outcome::of(
            client(step.device).write(*target, step.data.materialize(target->size_in_use())));
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
            return Outcome::trouble(problem.empty() ? "stream '" + step.stream + "' was not created"
                                                    : problem);
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
    Outcome run(const CutStep&) {
        return Outcome::trouble("a cut step runs only in a job simulated in one process");
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

/// The device whose rank runs `action` in a scenario run as a job, or none for a step every rank
/// takes for itself (freeing a name, syncing everything). `owners` maps each buffer to its
/// device, as the steps so far defined them; it learns the buffers `action` defines.
std::optional<std::uint32_t> executing_device(const Action& action,
                                              std::map<std::string, std::uint32_t>& owners);

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
        return recorded
                   ? run_.hooks.publish_event(
                         shared_event_name(record->event, records_.at(record->event)), *recorded)
                   : Status{};
    }

private:
    const RankRun& run_;
    std::map<std::string, std::uint64_t> records_;
    std::map<std::string, std::uint32_t> recorded_by_;
};

}  // namespace tandem::tool
