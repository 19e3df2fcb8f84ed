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

namespace tandem::tool {

/// Runs `scenario` (`scenario.ranks` ranks) as a job simulated in this process, on the
/// simulator, each rank seeded with the run's seed plus its rank as a job of processes is, and
/// fills `result` as `run_scenario` does: passed iff every step did what the file expects.
void run_in_one_process(const Scenario& scenario, const RunOptions& options,
                        ScenarioResult& result);

}  // namespace tandem::tool
