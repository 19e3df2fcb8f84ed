// `tandem bench`: runs the benchmark binaries built next to the tool (the simulator's, and the
// CUDA backend's where it was built), reads back the JSON report each writes, then prints each
// median and the ratios that have goals, side by side from one run.

#include "commands.hpp"
#include "help_footer.hpp"

#include "json.hpp"

#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <span>
#include <string>

namespace tandem::tool {
namespace {

/// How a ratio is read from the medians.
enum class Compare {
    Times,        ///< The numerator's real time over the denominator's.
    Throughputs,  ///< The numerator's throughput over the denominator's: the inverse ratio of
                  ///< times.
    Paired,       ///< A counter the numerator's run computed itself (`denominator` names it).
};

struct Ratio {
    const char* title;
    const char* numerator;
    const char* denominator;
    Compare compare;
    /// Zero: printed for reference, with no verdict.
    double goal;
    bool at_least;
};

constexpr Ratio sim_ratios[] = {
    {"sim copy / memcpy throughput", "sim_copy_256mib/real_time", "host_memcpy_256mib/real_time",
     Compare::Throughputs, 0.5, true},
    {"checked axpy (1 thread) time / plain axpy time", "sim_axpy_checked/1/real_time",
     "host_axpy_plain/real_time", Compare::Times, 5.0, false},
};

// The launch goals are read from the paired benchmarks: a tandem batch and a raw batch timed one
// after the other in each iteration, so both meet the machine in the same state. The ratios of
// the separate benchmarks compare medians taken seconds apart, which the machine's load moves by
// more than tandem's cost; they are printed for reference.
constexpr Ratio cuda_ratios[] = {
    {"cudaMallocAsync+free time / tandem allocate+free time",
     "cuda_malloc_async_free/1048576/real_time", "tandem_allocate_free/1048576/real_time",
     Compare::Times, 10.0, true},
    {"tandem launch / raw launch, paired batches", "launch_pair_empty/manual_time", "ratio",
     Compare::Paired, 1.15, false},
    {"two bindings / raw launch, paired batches", "launch_pair_bound_copy/manual_time", "ratio",
     Compare::Paired, 1.15, false},
    {"updating a binding in place / raw launch, paired batches",
     "launch_pair_in_place_axpy/manual_time", "ratio", Compare::Paired, 1.15, false},
    {"tandem launch / raw launch, separate benchmarks", "tandem_launch_empty/real_time",
     "raw_launch_empty/real_time", Compare::Times, 0, false},
    {"two bindings / raw launch, separate benchmarks", "tandem_launch_bound_copy/real_time",
     "raw_launch_bound_copy/real_time", Compare::Times, 0, false},
    {"updating a binding in place / raw launch, separate benchmarks",
     "tandem_launch_in_place_axpy/real_time", "raw_launch_in_place_axpy/real_time", Compare::Times,
     0, false},
    {"tandem peer-reading kernel / raw pointer (throughput)", "tandem_peer_read_kernel/real_time",
     "raw_peer_read_kernel/real_time", Compare::Throughputs, 0.95, true},
    {"tandem peer copy / cudaMemcpyPeerAsync (throughput)", "tandem_peer_copy/real_time",
     "raw_peer_copy/real_time", Compare::Throughputs, 0.95, true},
};

/// A benchmark's medians over its repetitions: real time in seconds, and its counters.
struct Median {
    double seconds = 0;
    std::map<std::string, double> counters;
};

std::filesystem::path tool_directory() {
    std::error_code error;
    return std::filesystem::read_symlink("/proc/self/exe", error).parent_path();
}

/// The median of `run`, a row of a Google Benchmark JSON report: its real time in seconds, and
/// every number it holds (its counters, iterations, repetitions).
Median median_of(const Json& run, double seconds_per_unit) {
    Median median;
    median.seconds = run.value("real_time", 0.0) * seconds_per_unit;
    for (const auto& [key, value] : run.items()) {
        if (value.is_number()) {
            median.counters[key] = value.get<double>();
        }
    }
    return median;
}

/// The medians of a Google Benchmark JSON report, by run name; empty if `report` is not one. A
/// benchmark run once has no aggregates (Google Benchmark computes none for one repetition):
/// its one measurement is its median.
std::map<std::string, Median> read_medians(const Json& report) {
    static const std::map<std::string, double> per_second{
        {"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1.0}};
    std::map<std::string, Median> medians;
    if (!report.is_object() || !report.contains("benchmarks")) {
        return medians;
    }
    std::map<std::string, Median> single;
    for (const Json& run : report["benchmarks"]) {
        const auto unit = per_second.find(run.value("time_unit", ""));
        if (unit == per_second.end()) {
            continue;
        }
        const std::string name = run.value("run_name", "");
        if (run.value("aggregate_name", "") == "median") {
            medians[name] = median_of(run, unit->second);
        } else if (run.value("run_type", "") == "iteration" && run.value("repetitions", 0) <= 1) {
            single[name] = median_of(run, unit->second);
        }
    }
    medians.merge(single);  // Only those with no median of their own.
    return medians;
}

/// What one run of a benchmark binary gave: its medians by run name, or why there are none.
struct SuiteRun {
    std::map<std::string, Median> medians;
    std::string problem;
};

/// Runs `binary` and returns its medians by run name. With `quiet_stdout` its console output
/// goes to stderr.
SuiteRun run_benchmark(const std::filesystem::path& binary, int repetitions,
                       const std::string& filter, bool quiet_stdout) {
    const std::filesystem::path report = std::filesystem::temp_directory_path() /
                                         ("tandem-bench-" + std::to_string(getpid()) + ".json");
    std::string command = "'" + binary.string() +
                          "' --benchmark_repetitions=" + std::to_string(repetitions) +
                          " --benchmark_enable_random_interleaving=true"
                          " --benchmark_report_aggregates_only=true --benchmark_out='" +
                          report.string() + "' --benchmark_out_format=json";
    if (!filter.empty()) {
        command += " --benchmark_filter='" + filter + "'";
    }
    if (quiet_stdout) {
        command += " >&2";  // stdout holds the tool's JSON document.
    }
    SuiteRun run;
    if (const int status = std::system(command.c_str()); status != 0) {
        run.problem = "failed (status " + std::to_string(status) + ")";
        std::filesystem::remove(report);
        return run;
    }
    std::ifstream in(report);
    run.medians = read_medians(Json::parse(in, nullptr, false));
    std::filesystem::remove(report);
    if (run.medians.empty()) {
        run.problem = filter.empty() ? "measured nothing"
                                     : "has no benchmark that matches --filter '" + filter + "'";
    }
    return run;
}

/// The value of `ratio` from `medians`, if the runs it needs were measured.
std::optional<double> ratio_value(const std::map<std::string, Median>& medians,
                                  const Ratio& ratio) {
    auto top = medians.find(ratio.numerator);
    if (top == medians.end()) {
        return std::nullopt;
    }
    if (ratio.compare == Compare::Paired) {
        auto counter = top->second.counters.find(ratio.denominator);
        if (counter == top->second.counters.end()) {
            return std::nullopt;
        }
        return counter->second;
    }
    auto bottom = medians.find(ratio.denominator);
    if (bottom == medians.end()) {
        return std::nullopt;
    }
    return ratio.compare == Compare::Times ? top->second.seconds / bottom->second.seconds
                                           : bottom->second.seconds / top->second.seconds;
}

void print_ratios(const std::map<std::string, Median>& medians, std::span<const Ratio> ratios) {
    for (const Ratio& ratio : ratios) {
        const std::optional<double> value = ratio_value(medians, ratio);
        if (!value) {
            std::printf("  %-62s not measured\n", ratio.title);
        } else if (ratio.goal == 0) {
            std::printf("  %-62s %7.3f  (for reference)\n", ratio.title, *value);
        } else {
            const bool met = ratio.at_least ? *value >= ratio.goal : *value <= ratio.goal;
            std::printf("  %-62s %7.3f  (goal %s %.2f: %s)\n", ratio.title, *value,
                        ratio.at_least ? "at least" : "at most", ratio.goal,
                        met ? "met" : "MISSED");
        }
    }
}

struct BenchFlags {
    int repetitions = 5;
    std::string filter;
    bool json = false;
};

Json ratios_json(const std::map<std::string, Median>& medians, std::span<const Ratio> ratios) {
    Json out = Json::array();
    for (const Ratio& ratio : ratios) {
        const std::optional<double> value = ratio_value(medians, ratio);
        const bool judged = value && ratio.goal != 0;
        const bool met = judged && (ratio.at_least ? *value >= ratio.goal : *value <= ratio.goal);
        out.push_back({{"title", ratio.title},
                       {"value", value ? Json(*value) : Json()},
                       {"goal", ratio.goal != 0 ? Json(ratio.goal) : Json()},
                       {"at_least", ratio.at_least},
                       {"met", judged ? Json(met) : Json()}});
    }
    return out;
}

/// Runs one suite's binary and prints what it measured; returns its part of the JSON document.
Json run_suite(const BenchFlags& flags, const char* name, std::span<const Ratio> ratios) {
    const std::filesystem::path binary = tool_directory() / "bench" / name;
    Json suite{{"name", name},
               {"built", std::filesystem::exists(binary)},
               {"ran", false},
               {"problem", Json()}};
    if (!suite["built"].get<bool>()) {
        if (!flags.json) {
            std::printf("%s: not built here\n", name);
        }
        return suite;
    }
    const SuiteRun result = run_benchmark(binary, flags.repetitions, flags.filter, flags.json);
    const std::map<std::string, Median>& medians = result.medians;
    if (medians.empty()) {
        std::fprintf(stderr, "tandem: %s %s\n", name, result.problem.c_str());
        suite["problem"] = result.problem;
        return suite;
    }
    suite["ran"] = true;
    Json& listed = suite["medians"] = Json::array();
    for (const auto& [run, median] : medians) {
        listed.push_back({{"run", run}, {"seconds", median.seconds}});
    }
    suite["ratios"] = ratios_json(medians, ratios);
    if (!flags.json) {
        std::printf("\n%s medians (real time)\n", name);
        for (const auto& [run, median] : medians) {
            std::printf("  %-62s %12.3f us\n", run.c_str(), median.seconds * 1e6);
        }
        std::printf("%s ratios\n", name);
        print_ratios(medians, ratios);
    }
    return suite;
}

int bench(const BenchFlags& flags) {
    Json document = json_document("bench");
    document["repetitions"] = flags.repetitions;
    document["filter"] = flags.filter;
    Json& suites = document["suites"] = Json::array();
    suites.push_back(run_suite(flags, "tandem_bench", sim_ratios));
    suites.push_back(run_suite(flags, "tandem_cuda_bench", cuda_ratios));
    if (flags.json) {
        std::printf("%s\n", json_text(document, 2).c_str());
    }
    const bool ran = suites[0]["ran"].get<bool>() || suites[1]["ran"].get<bool>();
    return ran ? 0 : 1;
}

}  // namespace

Run add_bench(CLI::App& app) {
    auto* command = app.add_subcommand(
        "bench", "Run the benchmarks built next to the tool and print the ratios with their goals");
    auto flags = std::make_shared<BenchFlags>();
    command
        ->add_option("--repetitions", flags->repetitions,
                     "Runs of each benchmark (medians are kept)")
        ->check(whole_number(1, 100))
        ->capture_default_str();
    command
        ->add_option("--filter", flags->filter, "Only benchmarks matching this regular expression")
        ->check(CLI::Validator(
            [](const std::string& filter) {
                // The filter is quoted on the benchmark's command line.
                return filter.find('\'') == std::string::npos
                           ? std::string()
                           : std::string("must not hold a single quote");
            },
            "REGEX"));
    command->add_flag("--json", flags->json,
                      "Print one JSON document on stdout instead of lines (the benchmarks' own "
                      "output goes to stderr)");
    set_help_footer(
        *command,
        "{schema, command: \"bench\", repetitions, filter, suites: [{name, built, ran, problem, "
        "medians: [{run, seconds}], ratios: [{title, value, goal, at_least, met}]}]}. medians "
        "and ratios are there when the suite ran, problem (why it did not) when it was built and "
        "did not; value is null when a ratio's runs were not measured, goal and met are null "
        "for a ratio printed for reference. With --repetitions 1 a run's one measurement is its "
        "median.",
        {{0, "at least one suite ran (a missed goal is reported, not an error)"},
         {1, "no suite is built here, or every one failed or measured nothing"},
         {2, "usage error: an unknown option, a value out of range"}});
    return [flags] { return bench(*flags); };
}

}  // namespace tandem::tool
