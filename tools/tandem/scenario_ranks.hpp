#pragma once

// A scenario run as a job (`devices: {count: D, ranks: N}`): N processes of this program, one
// rank each, each running the devices D/N * rank to D/N * (rank + 1) - 1 of the file. A rank runs
// the steps of its devices in the file's order and meets the others (`Job::barrier`) wherever
// that order passes from one rank to another, so the steps run in the file's order across
// processes; a buffer of another rank's device is looked up by the name it was shared under.
// A rank shares every event it records (`Job::publish`, one name a record), and a wait on an
// event another rank recorded looks that record's event up (`Job::lookup_event`). What does not
// cross processes yet is refused before anything runs, as a skip: an expected race (races are
// found within a process).

#include "scenario_run.hpp"

#include "tandem/job.hpp"

#include <cstdint>
#include <string>

namespace tandem::tool {

/// Whether `scenario` runs as a job, and why not when it cannot (empty: it can).
std::string why_not_as_job(const Scenario& scenario, const RunOptions& options);
/// Runs `scenario` as a job of `scenario.ranks` processes of this program and merges what each
/// found into `result`: passed iff every rank's steps did what the file expects; otherwise the
/// first step, in the file's order, that did not.
void run_as_job(const Scenario& scenario, ScenarioResult& result);
/// Rank `job.rank()`'s part of `scenario` as `run_scenario_rank` takes it: its devices' clients
/// (granting every other rank's devices when the file grants all), another rank's buffers looked
/// up by the name they were shared under, events shared and looked up by record, and barriers of
/// the job. `job` must outlive what it returns.
RankRun job_rank_run(const Scenario& scenario, Job& job);
/// One rank's part, in a process `run_as_job` started (`--as-scenario-rank PATH SEED`): joins
/// the job its environment names, runs, and writes its result into the job folder. The exit
/// code: 0 when it could write one.
int run_as_scenario_rank(const std::string& path, std::uint64_t seed);

}  // namespace tandem::tool
