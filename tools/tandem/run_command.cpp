// `tandem run` and `tandem replay`: parse every scenario first (a malformed file stops everything
// before a runtime exists), then run each on the simulator and report.

#include "chrome_trace.hpp"
#include "commands.hpp"
#include "json.hpp"
#include "scenario_run.hpp"

#include "tandem/sim/segment.hpp"

#if TANDEM_TOOL_HAS_CUDA
#include "tandem/cuda/runtime.hpp"
#endif

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <unistd.h>

namespace tandem::tool {
namespace {

struct RunFlags {
    std::vector<std::string> paths;
    std::string backend = "sim";
    std::optional<std::uint64_t> seed;
    bool json = false;
    bool verbose = false;
    std::string trace;
};

/// Files named directly, and every *.yaml of each folder, sorted by name. Empty on a bad path.
std::optional<std::vector<std::string>> scenario_files(const std::vector<std::string>& paths) {
    std::vector<std::string> files;
    for (const std::string& path : paths) {
        std::error_code error;
        if (std::filesystem::is_directory(path, error)) {
            std::vector<std::string> found;
            for (const auto& entry : std::filesystem::directory_iterator(path, error)) {
                if (entry.is_regular_file() && entry.path().extension() == ".yaml") {
                    found.push_back(entry.path().string());
                }
            }
            std::sort(found.begin(), found.end());
            files.insert(files.end(), found.begin(), found.end());
        } else if (std::filesystem::is_regular_file(path, error)) {
            files.push_back(path);
        } else {
            std::fprintf(stderr, "tandem: %s: no such file or folder\n", path.c_str());
            return std::nullopt;
        }
    }
    return files;
}

std::optional<std::vector<Scenario>> parse_all(const std::vector<std::string>& files) {
    std::vector<Scenario> scenarios;
    bool malformed = false;
    for (const std::string& file : files) {
        auto parsed = parse_scenario_file(file);
        if (const auto* error = std::get_if<ParseError>(&parsed)) {
            std::fprintf(stderr, "%s\n", error->message.c_str());
            malformed = true;
        } else {
            scenarios.push_back(std::move(std::get<Scenario>(parsed)));
        }
    }
    if (malformed) {
        std::fprintf(stderr, "tandem: malformed scenario file; nothing was run\n");
        return std::nullopt;
    }
    return scenarios;
}

void print_human(const ScenarioResult& result, bool verbose) {
    if (result.skipped) {
        std::printf("%-6s %-40s %s\n", "SKIP", std::filesystem::path(result.path).filename().c_str(),
                    result.skip_reason.c_str());
        return;
    }
    std::printf("%-6s %-40s %8llu %6zu %10llu %9.1f\n",
                result.passed ? "PASS" : "FAIL", std::filesystem::path(result.path).filename().c_str(),
                static_cast<unsigned long long>(result.seed), result.steps_run,
                static_cast<unsigned long long>(result.scheduler_steps), result.seconds * 1000);
    if (verbose) {
        for (const std::string& outcome : result.outcomes) {
            std::printf("      %s\n", outcome.c_str());
        }
        std::printf("      trace hash %016llx, %zu race%s\n",
                    static_cast<unsigned long long>(result.trace_hash), result.races.size(),
                    result.races.size() == 1 ? "" : "s");
    }
    if (!result.passed) {
        std::string indented = "      " + result.failure;
        for (std::size_t at = indented.find('\n'); at != std::string::npos; at = indented.find('\n', at + 1)) {
            indented.insert(at + 1, "      ");
        }
        std::printf("%s\n", indented.c_str());
    }
}

void print_json(const std::vector<ScenarioResult>& results, const std::string& backend) {
    std::size_t passed = 0;
    std::printf("{\"backend\":\"%s\",\"scenarios\":[", backend.c_str());
    for (std::size_t index = 0; index < results.size(); ++index) {
        const ScenarioResult& result = results[index];
        passed += result.passed ? 1 : 0;
        std::printf("%s\n  {\"file\":%s,\"name\":%s,\"passed\":%s,\"skipped\":%s,\"seed\":%llu,\"steps\":%zu,"
                    "\"scheduler_steps\":%llu,\"trace_hash\":\"%016llx\",\"races\":%zu,"
                    "\"seconds\":%.6f,\"failure\":%s}",
                    index ? "," : "", json_string(result.path).c_str(), json_string(result.name).c_str(),
                    result.passed ? "true" : "false", result.skipped ? "true" : "false",
                    static_cast<unsigned long long>(result.seed),
                    result.steps_run, static_cast<unsigned long long>(result.scheduler_steps),
                    static_cast<unsigned long long>(result.trace_hash), result.races.size(),
                    result.seconds, result.passed ? "null" : json_string(result.failure).c_str());
    }
    std::printf("\n],\"total\":%zu,\"passed\":%zu,\"failed\":%zu}\n", results.size(), passed,
                results.size() - passed);
}

int run_scenarios(const RunFlags& flags) {
#if TANDEM_TOOL_HAS_CUDA
    if (flags.backend == "cuda") {
        const cuda::GpuReport gpus = cuda::probe_gpus();
        if (!gpus.problem.empty()) {
            std::fprintf(stderr, "tandem: the cuda backend has no usable GPU: %s\n", gpus.problem.c_str());
            return 2;
        }
    }
#else
    if (flags.backend == "cuda") {
        std::fprintf(stderr, "tandem: the cuda backend is not built into this tool (no CUDA "
                             "compiler where it was built); use --backend sim\n");
        return 2;
    }
#endif
    const auto files = scenario_files(flags.paths);
    if (!files) {
        return 2;
    }
    if (files->empty()) {
        std::fprintf(stderr, "tandem: no *.yaml scenario files in the given paths\n");
        return 2;
    }
    const auto scenarios = parse_all(*files);
    if (!scenarios) {
        return 2;
    }
    const bool progress = !flags.json && ::isatty(STDOUT_FILENO) == 1;
    RunOptions options{flags.seed, !flags.trace.empty(), false, flags.backend};
    // One scenario after another on the same segments, reset between them.
    options.segments = std::make_shared<sim::SegmentPool>();
    std::vector<ScenarioResult> results;
    if (!flags.json) {
        std::printf("%-6s %-40s %8s %6s %10s %9s\n", "result", "scenario", "seed", "steps",
                    "scheduler", "ms");
    }
    for (std::size_t index = 0; index < scenarios->size(); ++index) {
        const Scenario& scenario = (*scenarios)[index];
        if (progress) {
            std::printf("\r\033[K[%zu/%zu] %s", index + 1, scenarios->size(), scenario.path.c_str());
            std::fflush(stdout);
        }
        results.push_back(run_scenario(scenario, options));
        if (progress) {
            std::printf("\r\033[K");
        }
        if (!flags.json) {
            print_human(results.back(), flags.verbose);
            std::fflush(stdout);
        }
    }
    const auto skipped = static_cast<std::size_t>(
        std::count_if(results.begin(), results.end(), [](const auto& result) { return result.skipped; }));
    const auto passed = static_cast<std::size_t>(std::count_if(
        results.begin(), results.end(), [](const auto& result) { return result.passed; })) - skipped;
    if (flags.json) {
        print_json(results, flags.backend);
    } else {
        std::printf("%zu scenario%s: %zu passed, %zu failed", results.size(),
                    results.size() == 1 ? "" : "s", passed, results.size() - passed - skipped);
        if (skipped > 0) {
            std::printf(", %zu skipped (reasons above)", skipped);
        }
        std::printf("\n");
    }
    if (!flags.trace.empty() && !write_chrome_trace(flags.trace, results)) {
        std::fprintf(stderr, "tandem: cannot write the trace to %s\n", flags.trace.c_str());
        return 2;
    }
    return passed + skipped == results.size() ? 0 : 1;
}

void add_common_flags(CLI::App* command, RunFlags& flags) {
    command->add_option("--backend", flags.backend, "Backend to run on: sim or cuda")
        ->check(CLI::IsMember({"sim", "cuda"}))
        ->capture_default_str();
    command->add_option("--seed", flags.seed, "Seed for every scenario (overrides the file's)")
        ->check(non_negative());
    command->add_flag("--json", flags.json, "Print a machine-readable result on stdout");
    command->add_option("--trace", flags.trace, "Write a Chrome trace event file (Perfetto opens it)");
}

}  // namespace

Run add_run(CLI::App& app) {
    auto flags = std::make_shared<RunFlags>();
    auto* command = app.add_subcommand("run", "Run scenario files (or every *.yaml of folders)");
    command->add_option("paths", flags->paths, "Scenario files or folders")->required();
    add_common_flags(command, *flags);
    command->add_flag("-v,--verbose", flags->verbose, "Print every step's outcome");
    return [flags] { return run_scenarios(*flags); };
}

Run add_replay(CLI::App& app) {
    auto flags = std::make_shared<RunFlags>();
    flags->verbose = true;
    auto* command = app.add_subcommand("replay", "Rerun one scenario with a seed, printing every step");
    command->add_option("file", flags->paths, "The scenario file")->required()->expected(1);
    add_common_flags(command, *flags);
    return [flags] { return run_scenarios(*flags); };
}

}  // namespace tandem::tool
