#include "scenario_in_process.hpp"

#include "scenario_ranks.hpp"

#include "tandem/job.hpp"
#include "tandem/sim/runtime.hpp"

#include <vector>

namespace tandem::tool {
namespace {

/// How long a rank of the job waits for the others to join.
constexpr std::chrono::seconds join_wait{60};

/// Why the ranks' runtimes reported races the file does not expect, or empty.
std::string unexpected_races(const Scenario& scenario, const std::vector<Job>& jobs) {
    if (scenario.races != RaceExpectation::None) {
        return {};
    }
    for (const Job& job : jobs) {
        const auto simulated = std::dynamic_pointer_cast<sim::SimRuntime>(job.runtime());
        if (simulated && !simulated->races().empty()) {
            return scenario.path + ": rank " + std::to_string(job.rank()) +
                   ": expected no race, but one was reported";
        }
    }
    return {};
}

/// Settles rank `rank` and abandons it, then waits until every other rank knows it lost: a wait
/// for the end of a connection, which the system reports, not for a time to pass.
Status abandon_rank(std::vector<Job>& jobs, std::uint32_t rank) {
    if (Status settled = jobs[rank].runtime()->sync_all(); !settled) {
        return settled;
    }
    jobs[rank].abandon();
    for (const Job& job : jobs) {
        if (job.rank() != rank && job.rank_alive(job.rank()) &&
            !job.wait_for_loss_of(rank, join_wait)) {
            return Error::peer_unreachable(*job.service(job.rank()), *job.service(rank),
                                           "rank " + std::to_string(job.rank()) +
                                               " did not notice that rank " +
                                               std::to_string(rank) + " was abandoned");
        }
    }
    return {};
}

}  // namespace

void run_in_one_process(const Scenario& scenario, const RunOptions& options,
                        ScenarioResult& result) {
    JoinOptions join;
    join.runtime.backend = "sim";
    join.runtime.devices = scenario.devices / scenario.ranks;
    join.runtime.seed = effective_seed(scenario, options);
    join.runtime.from_environment = false;
    join.timeout = join_wait;
    Result<std::vector<Job>> joined = Job::join_in_process(scenario.ranks, join);
    if (!joined) {
        result.failure = scenario.path + ": the job could not start:\n" + joined.error().report();
        return;
    }
    std::vector<Job>& jobs = *joined;
    std::vector<RankRun> runs;
    for (Job& job : jobs) {
        runs.push_back(job_rank_run(scenario, job));
    }
    InOrderHooks hooks;
    hooks.settle = [&jobs](std::uint32_t rank) { return jobs[rank].runtime()->sync_all(); };
    hooks.abandon = [&jobs](std::uint32_t rank) { return abandon_rank(jobs, rank); };
    const ScenarioResult driven = run_scenario_ranks_in_order(scenario, std::move(runs), hooks);
    result.steps_run = driven.steps_run;
    result.outcomes = driven.outcomes;
    result.failure = driven.failure;
    if (result.failure.empty()) {
        result.failure = unexpected_races(scenario, jobs);
    }
}

}  // namespace tandem::tool
