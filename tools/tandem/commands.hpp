#pragma once

// The subcommands of the `tandem` tool. Each registers itself on the CLI11 app and returns the
// process exit code: 0 when everything passed, 1 when a check failed, 2 on bad input.

#include "number_options.hpp"

#include <CLI/CLI.hpp>

#include <functional>

namespace tandem::tool {

using Run = std::function<int()>;

/// `tandem selfcheck`: exercises the core rules on one in-process device and prints each check.
Run add_selfcheck(CLI::App& app);
/// `tandem clean`: removes segments of simulator runtimes whose process is gone, and job folders
/// no process holds.
Run add_clean(CLI::App& app);
/// `tandem bench`: runs the benchmarks built next to the tool and prints the ratios.
Run add_bench(CLI::App& app);
/// `tandem run PATH...`: runs scenario files on a backend and reports each.
Run add_run(CLI::App& app);
/// `tandem replay FILE`: reruns one scenario, printing every step's outcome.
Run add_replay(CLI::App& app);
/// `tandem explore`: random programs with injected faults, checked against a byte-level oracle.
Run add_explore(CLI::App& app);
/// `tandem doctor`: what this build and machine offer.
Run add_doctor(CLI::App& app);
/// `tandem launch -n N -- PROGRAM ARGS...`: starts a job of N ranks, one process each.
Run add_launch(CLI::App& app);
/// `tandem inspect FILE`: runs a scenario and prints the simulator's devices at the end.
Run add_inspect(CLI::App& app);

}  // namespace tandem::tool
