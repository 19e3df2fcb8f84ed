// Runs a scenario's steps on a fresh simulator runtime. Each step runs through the public
// Client, so a scenario checks exactly what a program would see; the runner then compares the
// step's outcome with the file's expectation and stops at the first step that differs.

#include "scenario_run.hpp"

#include "scenario_in_process.hpp"
#include "scenario_ranks.hpp"
#include "scenario_runner.hpp"

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

}  // namespace

std::string shared_event_name(const std::string& event, std::uint64_t count) {
    return "tandem.scenario.event." + std::to_string(count) + "." + event;
}

namespace {

/// `run_steps` for one rank of a job: the steps of its devices, a barrier where the file's
/// order passes from one rank to another. `failed_step` is where it stopped.
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
        if (options.ranks_in_one_process || loses_a_rank(scenario)) {
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
