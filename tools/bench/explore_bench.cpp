// `tandem explore` as a user runs it: programs of 100 units on two devices, checked against the
// oracle, in one worker per core (and in one process, for the comparison), timed from the start
// of the tool to its exit. The figure is programs per second (items_per_second). The same
// programs on a job of 2 and of 4 ranks simulated in one process (`--ranks`, one device a rank)
// run in one process too, beside the plain run of one process they are compared with.

#include <benchmark/benchmark.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace tandem::bench {
namespace {

/// Programs per run of the tool: about a second of work on two cores.
constexpr int programs_per_run = 2000;
/// Programs per run of the tool on jobs: about two seconds of work, each program a job.
constexpr int programs_per_run_of_ranks = 400;

/// The folder explore may write violations to: none are expected, and `--out` must be a folder
/// it can write (a run refuses one it cannot, /dev/null included, before anything runs).
std::string out_folder() {
    const std::filesystem::path folder =
        std::filesystem::temp_directory_path() / "tandem-explore-bench";
    std::error_code error;
    std::filesystem::create_directories(folder, error);
    return folder.string();
}

/// Runs the tool built next to this benchmark with `arguments`, its output discarded; true
/// when it exits 0.
bool run_tool(const std::vector<std::string>& arguments) {
    std::vector<char*> argv;
    std::string tool = TANDEM_TOOL_PATH;
    argv.push_back(tool.data());
    std::vector<std::string> copies = arguments;
    for (std::string& argument : copies) {
        argv.push_back(argument.data());
    }
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    pid_t pid = 0;
    const int spawned = posix_spawn(&pid, tool.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    int status = 0;
    return spawned == 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
           WEXITSTATUS(status) == 0;
}

void explore_programs(benchmark::State& state) {
    const std::string jobs = std::to_string(state.range(0));
    for (auto _ : state) {
        if (!run_tool({"explore", "--runs", std::to_string(programs_per_run), "--seed", "1",
                       "--devices", "2", "--steps", "100", "--jobs", jobs, "--out",
                       out_folder()})) {
            state.SkipWithError("tandem explore failed (or is not built next to the benchmarks)");
            return;
        }
    }
    state.SetItemsProcessed(state.iterations() * programs_per_run);
}

void explore_programs_of_ranks(benchmark::State& state) {
    const std::string ranks = std::to_string(state.range(0));
    for (auto _ : state) {
        if (!run_tool({"explore", "--runs", std::to_string(programs_per_run_of_ranks), "--seed",
                       "1", "--ranks", ranks, "--steps", "100", "--jobs", "1", "--out",
                       out_folder()})) {
            state.SkipWithError("tandem explore failed (or is not built next to the benchmarks)");
            return;
        }
    }
    state.SetItemsProcessed(state.iterations() * programs_per_run_of_ranks);
}

int cores() {
    const unsigned count = std::thread::hardware_concurrency();
    return count == 0 ? 1 : static_cast<int>(count);
}

BENCHMARK(explore_programs)
    ->ArgName("jobs")
    ->Arg(1)
    ->Arg(cores())
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(explore_programs_of_ranks)
    ->ArgName("ranks")
    ->Arg(2)
    ->Arg(4)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tandem::bench
