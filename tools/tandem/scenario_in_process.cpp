#include "scenario_in_process.hpp"

#include "scenario_ranks.hpp"
#include "scenario_runner.hpp"

#include "tandem/job.hpp"
#include "tandem/sim/runtime.hpp"

#include <vector>

namespace tandem::tool {
namespace {

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
    const std::string problem =
        crossed ? judge(step, outcome)
                : "its event could not cross ranks: " + crossed.error().message();
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
            return lose_rank(step, abandon->rank, [&] { return hooks_.abandon(abandon->rank); });
        }
        if (const auto* cut = std::get_if<CutStep>(&step.action)) {
            if (lost_[cut->lower]) {
                return fail(step, "rank " + std::to_string(cut->lower) + " is lost already");
            }
            return lose_rank(step, cut->higher,
                             [&] { return hooks_.cut(cut->lower, cut->higher); });
        }
        const std::optional<std::uint32_t> device = executing_device(step.action, owners_);
        const std::optional<std::uint32_t> rank =
            device ? std::optional(ranks_.front()->run.rank_of(*device)) : std::nullopt;
        if (rank && lost_[*rank]) {
            return fail(step, "runs on rank " + std::to_string(*rank) +
                                  ", which an earlier step abandoned or cut off");
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
    /// Whether `rank` was abandoned or cut off.
    [[nodiscard]] bool lost(std::uint32_t rank) const { return lost_[rank]; }

private:
    bool fail(const Step& step, const std::string& why) {
        result_.failure =
            step.mark.describe() + ": " + std::string(step_kind(step.action)) + " step: " + why;
        return false;
    }
    bool settle(const Step& step, std::uint32_t rank) {
        if (Status settled = hooks_.settle(rank); !settled) {
            result_.failure =
                step.mark.describe() + ": the job, before this step: " + settled.error().message();
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
    /// Settles the rank that ran last, then loses `rank` by `end` (an abandon or a cut), which
    /// returns once every other rank knows it lost.
    bool lose_rank(const Step& step, std::uint32_t rank, const std::function<Status()>& end) {
        if (lost_[rank]) {
            return fail(step, "rank " + std::to_string(rank) + " is lost already");
        }
        if (last_rank_ && !settle(step, *last_rank_)) {
            return false;
        }
        last_rank_.reset();
        lost_[rank] = true;
        ++result_.steps_run;
        const Status ended = end();
        return ended ? true : fail(step, ended.error().message());
    }

    std::vector<std::unique_ptr<DrivenRank>>& ranks_;
    const InOrderHooks& hooks_;
    ScenarioResult& result_;
    std::vector<bool> lost_;
    std::map<std::string, std::uint32_t> owners_;
    std::optional<std::uint32_t> last_rank_;
};

}  // namespace

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
            result.failure =
                scenario.path + ": a fault could not be injected: " + describe_outcome(injected);
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

bool loses_a_rank(const Scenario& scenario) {
    return std::any_of(scenario.steps.begin(), scenario.steps.end(), [](const Step& step) {
        return std::holds_alternative<AbandonStep>(step.action) ||
               std::holds_alternative<CutStep>(step.action);
    });
}

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

/// Waits until every rank still in the job knows rank `rank` lost (`how`, as messages say it):
/// a wait for the end of a connection, which the system reports, not for a time to pass.
Status await_loss(const std::vector<Job>& jobs, std::uint32_t rank, const std::string& how) {
    for (const Job& job : jobs) {
        if (job.rank() != rank && job.rank_alive(job.rank()) &&
            !job.wait_for_loss_of(rank, join_wait)) {
            return Error::peer_unreachable(*job.service(job.rank()), *job.service(rank),
                                           "rank " + std::to_string(job.rank()) +
                                               " did not notice that rank " + std::to_string(rank) +
                                               " was " + how);
        }
    }
    return {};
}

/// Settles rank `rank` and abandons it, then waits until every other rank knows it lost.
Status abandon_rank(std::vector<Job>& jobs, std::uint32_t rank) {
    if (Status settled = jobs[rank].runtime()->sync_all(); !settled) {
        return settled;
    }
    jobs[rank].abandon();
    return await_loss(jobs, rank, "abandoned");
}

/// Settles ranks `lower` and `higher` and cuts their connection at the lower end, then waits
/// until every rank still in the job knows `higher` lost and `higher` knows every other rank
/// lost (it sees the whole job lost once it is cut off).
Status cut_ranks(std::vector<Job>& jobs, std::uint32_t lower, std::uint32_t higher) {
    for (std::uint32_t rank : {lower, higher}) {
        if (Status settled = jobs[rank].runtime()->sync_all(); !settled) {
            return settled;
        }
    }
    if (Status cut = jobs[lower].cut_connection(higher); !cut) {
        return cut;
    }
    if (Status noticed = await_loss(jobs, higher, "cut off"); !noticed) {
        return noticed;
    }
    for (const Job& job : jobs) {
        if (job.rank() != higher && !jobs[higher].wait_for_loss_of(job.rank(), join_wait)) {
            return Error::peer_unreachable(
                *jobs[higher].service(higher), *jobs[higher].service(job.rank()),
                "rank " + std::to_string(higher) + " did not notice it was cut off from the job");
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
    join.message_delay_max = options.message_delay_max;
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
    hooks.cut = [&jobs](std::uint32_t lower, std::uint32_t higher) {
        return cut_ranks(jobs, lower, higher);
    };
    const ScenarioResult driven = run_scenario_ranks_in_order(scenario, std::move(runs), hooks);
    result.steps_run = driven.steps_run;
    result.outcomes = driven.outcomes;
    result.failure = driven.failure;
    if (result.failure.empty()) {
        result.failure = unexpected_races(scenario, jobs);
    }
}

}  // namespace tandem::tool
