#pragma once

// A scenario run as a job simulated in one process (`Job::join_in_process`): each rank a `Job`
// of this process with a runtime of its own, the same ranks, names and rules as a job of
// processes (scenario_ranks.hpp), but one thread drives every rank's steps in the file's order.
//
// Where that order passes from one rank to another, a job of processes meets at `Job::barrier`,
// which every rank must call. One driver thread cannot call N barriers (each waits for the
// others), so it settles the rank it leaves instead (`Runtime::sync_all` of that rank's
// runtime). That gives what the barrier promises the next step: the barrier is each rank's
// `sync_all` followed by a meeting, and here every other rank was settled when the driver last
// left it and has run nothing since, so only the rank left has unsettled work; its `sync_all`
// returns once that work ran and settled, and a rank's work puts its claims on other ranks'
// memory onto the owners' claims before it settles (P4, C3). The meeting adds nothing a single
// thread does not already have: no step of the next rank starts before the settle returns. It
// costs one settle a switch instead of N threads meeting over sockets, and it keeps working once
// a rank is lost, where every later barrier would fail with the loss.

#include "scenario_run.hpp"

#include <cstdint>
#include <functional>
#include <vector>

namespace tandem::tool {

/// What `run_scenario_ranks_in_order` asks of the job.
struct InOrderHooks {
    /// Settles the work of rank `rank`, and its claims on the other ranks' memory (what
    /// `Job::barrier` promises of it).
    std::function<Status(std::uint32_t rank)> settle;
    /// Ends rank `rank` as its death would, returning once every other rank knows it lost.
    std::function<Status(std::uint32_t rank)> abandon;
    /// Breaks the connection between ranks `lower` and `higher`, both living, returning once
    /// every rank has read what it will of it: `higher` cut off, and every other rank lost to it.
    std::function<Status(std::uint32_t lower, std::uint32_t higher)> cut;
};

/// Every rank's part of `scenario` driven by this one thread, in the file's order: `runs[r]` is
/// rank r's part (its `barrier` is not used). Where the order passes from one rank to another,
/// the rank left is settled before the next rank's step runs. An abandon step settles the rank
/// that ran last, then abandons its rank (the rank is settled at its death); a later step of
/// that rank is a failure, and a step every rank takes (freeing a name) runs on each living
/// rank in rank order. A cut step does the same with the higher of its two ranks, cut off (its
/// runtime lives on, outside the job). The living ranks are settled at the end. Passed iff
/// every step did what the file expects; otherwise the first that did not.
ScenarioResult run_scenario_ranks_in_order(const Scenario& scenario, std::vector<RankRun> runs,
                                           const InOrderHooks& hooks);

/// Whether `scenario` has an abandon or cut step, which loses a rank: it then runs as a job
/// simulated in one process.
bool loses_a_rank(const Scenario& scenario);

/// Runs `scenario` (`scenario.ranks` ranks) as a job simulated in this process, on the
/// simulator, each rank seeded with the run's seed plus its rank as a job of processes is, and
/// fills `result` as `run_scenario` does: passed iff every step did what the file expects.
void run_in_one_process(const Scenario& scenario, const RunOptions& options,
                        ScenarioResult& result);

}  // namespace tandem::tool
