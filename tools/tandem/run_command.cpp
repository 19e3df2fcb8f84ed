// `tandem run` and `tandem replay`: parse every scenario first (a malformed file stops everything
// before a runtime exists), then run each on the simulator and report.

#include "chrome_trace.hpp"
#include "commands.hpp"
#include "help_footer.hpp"
#include "json.hpp"
#include "path_checks.hpp"
#include "progress.hpp"
#include "scenario_run.hpp"

#include "tandem/sim/segment.hpp"

#if TANDEM_TOOL_HAS_CUDA
#include "tandem/cuda/runtime.hpp"
#endif

#include <algorithm>
#include <cstdio>
#include <filesystem>

namespace tandem::tool {
namespace {

struct RunFlags {
    /// "run" or "replay", for messages and the JSON document.
    const char* command = "run";
    std::vector<std::string> paths;
    std::string backend = "sim";
    std::optional<std::uint64_t> seed;
    bool share_gpus = false;
    bool json = false;
    bool verbose = false;
    std::string trace;
};

/// Whether a folder's entry is a scenario file: YAML, by either of its extensions.
bool is_scenario_file(const std::filesystem::directory_entry& entry) {
    const std::filesystem::path extension = entry.path().extension();
    return entry.is_regular_file() && (extension == ".yaml" || extension == ".yml");
}

/// Files named directly, and every *.yaml and *.yml of each folder, sorted by name. None on a
/// path that is neither a file nor a folder.
std::optional<std::vector<std::string>> scenario_files(const std::vector<std::string>& paths) {
    std::vector<std::string> files;
    for (const std::string& path : paths) {
        std::error_code error;
        if (std::filesystem::is_directory(path, error)) {
            std::vector<std::string> found;
            for (const auto& entry : std::filesystem::directory_iterator(path, error)) {
                if (is_scenario_file(entry)) {
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
            std::fprintf(stderr, "tandem: %s\n", error->message.c_str());
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
        std::printf("%-6s %-40s %s\n", "SKIP",
                    std::filesystem::path(result.path).filename().c_str(),
                    result.skip_reason.c_str());
        return;
    }
    std::printf("%-6s %-40s %8llu %6zu %10llu %9.1f\n", result.passed ? "PASS" : "FAIL",
                std::filesystem::path(result.path).filename().c_str(),
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
        for (std::size_t at = indented.find('\n'); at != std::string::npos;
             at = indented.find('\n', at + 1)) {
            indented.insert(at + 1, "      ");
        }
        std::printf("%s\n", indented.c_str());
    }
}

Json result_json(const ScenarioResult& result, bool verbose) {
    char trace_hash[17];
    std::snprintf(trace_hash, sizeof trace_hash, "%016llx",
                  static_cast<unsigned long long>(result.trace_hash));
    Json json{{"file", result.path},
              {"name", result.name},
              {"passed", result.passed && !result.skipped},
              {"skipped", result.skipped},
              {"skip_reason", result.skipped ? Json(result.skip_reason) : Json(nullptr)},
              {"seed", result.seed},
              {"steps", result.steps_run},
              {"scheduler_steps", result.scheduler_steps},
              {"trace_hash", trace_hash},
              {"races", result.races.size()},
              {"seconds", result.seconds},
              {"failure", result.passed ? Json(nullptr) : Json(result.failure)}};
    if (verbose) {
        json["outcomes"] = result.outcomes;
    }
    return json;
}

/// Counts of a run: scenarios that did what their file expects, that did not, and that were not
/// run on this backend.
struct RunCounts {
    std::size_t passed = 0;
    std::size_t failed = 0;
    std::size_t skipped = 0;
};

RunCounts count(const std::vector<ScenarioResult>& results) {
    RunCounts counts;
    for (const ScenarioResult& result : results) {
        ++(result.skipped ? counts.skipped : result.passed ? counts.passed : counts.failed);
    }
    return counts;
}

void print_json(const std::vector<ScenarioResult>& results, const RunFlags& flags) {
    Json document = json_document(flags.command);
    document["backend"] = flags.backend;
    Json& scenarios = document["scenarios"] = Json::array();
    for (const ScenarioResult& result : results) {
        scenarios.push_back(result_json(result, flags.verbose));
    }
    const RunCounts counts = count(results);
    document["total"] = results.size();
    document["passed"] = counts.passed;
    document["failed"] = counts.failed;
    document["skipped"] = counts.skipped;
    std::printf("%s\n", json_text(document, 2).c_str());
}

void print_summary(const std::vector<ScenarioResult>& results) {
    const RunCounts counts = count(results);
    std::printf("%zu scenario%s: %zu passed, %zu failed", results.size(),
                results.size() == 1 ? "" : "s", counts.passed, counts.failed);
    if (counts.skipped > 0) {
        std::printf(", %zu skipped (reasons above)", counts.skipped);
    }
    std::printf("\n");
}

/// Refuses a backend this tool or machine cannot run on; returns whether it can.
bool backend_usable(const std::string& backend) {
#if TANDEM_TOOL_HAS_CUDA
    if (backend == "cuda") {
        const cuda::GpuReport gpus = cuda::probe_gpus();
        if (!gpus.problem.empty()) {
            std::fprintf(stderr, "tandem: the cuda backend has no usable GPU: %s\n",
                         gpus.problem.c_str());
            return false;
        }
    }
#else
    if (backend == "cuda") {
        std::fprintf(stderr,
                     "tandem: the cuda backend is not built into this tool (no CUDA "
                     "compiler where it was built); use --backend sim\n");
        return false;
    }
#endif
    return true;
}

/// Runs every scenario in order, printing each result as it comes unless the output is JSON.
std::vector<ScenarioResult> run_each(const std::vector<Scenario>& scenarios,
                                     const RunFlags& flags) {
    RunOptions options{flags.seed, !flags.trace.empty(), false, flags.backend};
    options.share_gpus = flags.share_gpus;
    // One scenario after another on the same segments, reset between them.
    options.segments = std::make_shared<sim::SegmentPool>();
    Progress progress("tandem " + std::string(flags.command), "scenarios", "failed",
                      scenarios.size());
    std::vector<ScenarioResult> results;
    if (!flags.json) {
        std::printf("%-6s %-40s %8s %6s %10s %9s\n", "result", "scenario", "seed", "steps",
                    "scheduler", "ms");
    }
    for (const Scenario& scenario : scenarios) {
        progress.update(results.size(), count(results).failed);
        results.push_back(run_scenario(scenario, options));
        if (!flags.json) {
            progress.clear();
            print_human(results.back(), flags.verbose);
            std::fflush(stdout);
        }
    }
    return results;
}

int run_scenarios(const RunFlags& flags) {
    if (!backend_usable(flags.backend)) {
        return 2;
    }
    // Found now, not after every scenario has run.
    if (!flags.trace.empty() && !file_can_be_written("--trace", flags.trace)) {
        return 2;
    }
    const auto files = scenario_files(flags.paths);
    if (!files) {
        return 2;
    }
    if (files->empty()) {
        std::fprintf(stderr, "tandem: no *.yaml or *.yml scenario files in the given paths\n");
        return 2;
    }
    const auto scenarios = parse_all(*files);
    if (!scenarios) {
        return 2;
    }
    const std::vector<ScenarioResult> results = run_each(*scenarios, flags);
    if (flags.json) {
        print_json(results, flags);
    } else {
        print_summary(results);
    }
    if (!flags.trace.empty() && !write_chrome_trace(flags.trace, results)) {
        std::fprintf(stderr, "tandem: cannot write the trace to %s\n", flags.trace.c_str());
        return 2;
    }
    return count(results).failed == 0 ? 0 : 1;
}

void add_common_flags(CLI::App* command, RunFlags& flags) {
    set_help_footer(
        *command,
        std::string("{schema, command: \"") + flags.command +
            "\", backend, scenarios: [{file, name, passed, skipped, skip_reason, seed, steps, "
            "scheduler_steps, trace_hash, races, seconds, failure" +
            (flags.verbose ? ", outcomes: [one line per step]"
                           : ", outcomes (with -v): [one line per step]") +
            "}], total, passed, failed, skipped}. skip_reason and failure are null when there is "
            "none; trace_hash is 16 hex digits.",
        {{0, "every scenario did what its file expects, or was skipped on this backend"},
         {1, "a scenario did not do what its file expects"},
         {2,
          "usage or input error: an unknown option, a value out of range, a path that is not "
          "there, a malformed file (then nothing runs), a "
          "backend this tool or machine cannot run, or a trace that cannot be written"}});
    command->add_option("--backend", flags.backend, "Backend to run on: sim or cuda")
        ->check(CLI::IsMember({"sim", "cuda"}))
        ->capture_default_str();
    command->add_option("--seed", flags.seed, "Seed for every scenario (overrides the file's)")
        ->check(whole_number(0));
    command->add_flag("--share-gpus", flags.share_gpus,
                      "On cuda, run a scenario of more devices than there are GPUs with devices "
                      "sharing GPUs (in turn) instead of skipping it");
    command->add_flag("--json", flags.json, "Print one JSON document on stdout instead of lines");
    command->add_option("--trace", flags.trace,
                        "Write a Chrome trace event file (Perfetto opens it)");
}

}  // namespace

Run add_run(CLI::App& app) {
    auto flags = std::make_shared<RunFlags>();
    auto* command =
        app.add_subcommand("run", "Run scenario files (or every *.yaml and *.yml of folders)");
    command->add_option("paths", flags->paths, "Scenario files or folders")->required();
    add_common_flags(command, *flags);
    command->add_flag("-v,--verbose", flags->verbose, "Print every step's outcome");
    return [flags] { return run_scenarios(*flags); };
}

Run add_replay(CLI::App& app) {
    auto flags = std::make_shared<RunFlags>();
    flags->command = "replay";
    flags->verbose = true;
    auto* command =
        app.add_subcommand("replay", "Rerun one scenario with a seed, printing every step");
    // Any count, so that a second file or a folder is refused in words of our own.
    command->add_option("file", flags->paths, "The scenario file")->required();
    add_common_flags(command, *flags);
    return [flags] { return one_scenario_file("replay", flags->paths) ? run_scenarios(*flags) : 2; };
}

}  // namespace tandem::tool
