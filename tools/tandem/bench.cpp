// `tandem bench`: runs the benchmark binaries built next to the tool (the simulator's, and the
// CUDA backend's where it was built), then prints each median and the ratios the issues set
// goals for, side by side from one run.

#include "commands.hpp"

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <unistd.h>

namespace tandem::tool {
namespace {

struct Ratio {
    const char* title;
    const char* numerator;
    const char* denominator;
    /// Compares real times (false: throughputs, numerator over denominator).
    bool times;
    double goal;
    bool at_least;
};

constexpr Ratio sim_ratios[] = {
    {"sim copy / memcpy throughput", "sim_copy_256mib/real_time", "host_memcpy_256mib/real_time",
     false, 0.5, true},
    {"checked axpy (1 thread) time / plain axpy time", "sim_axpy_checked/1/real_time",
     "host_axpy_plain/real_time", true, 5.0, false},
};

constexpr Ratio cuda_ratios[] = {
    {"cudaMallocAsync+free time / tandem allocate+free time",
     "cuda_malloc_async_free/1048576/real_time", "tandem_allocate_free/1048576/real_time", true,
     10.0, true},
    {"tandem launch time / raw launch time", "tandem_launch_empty/real_time",
     "raw_launch_empty/real_time", true, 1.15, false},
    {"tandem launch with two bindings / raw launch of the same kernel",
     "tandem_launch_bound_copy/real_time", "raw_launch_bound_copy/real_time", true, 1.15, false},
    {"tandem launch updating a binding in place / raw launch", "tandem_launch_in_place_axpy/real_time",
     "raw_launch_in_place_axpy/real_time", true, 1.15, false},
    {"tandem peer-reading kernel / raw pointer (throughput)", "tandem_peer_read_kernel/real_time",
     "raw_peer_read_kernel/real_time", false, 0.95, true},
    {"tandem peer copy / cudaMemcpyPeerAsync (throughput)", "tandem_peer_copy/real_time",
     "raw_peer_copy/real_time", false, 0.95, true},
};

std::filesystem::path tool_directory() {
    std::error_code error;
    return std::filesystem::read_symlink("/proc/self/exe", error).parent_path();
}

/// Runs `binary` and returns its medians (real time in seconds), or an empty map on failure.
std::map<std::string, double> run_benchmark(const std::filesystem::path& binary, int repetitions,
                                            const std::string& filter) {
    const std::filesystem::path report =
        std::filesystem::temp_directory_path() / ("tandem-bench-" + std::to_string(getpid()) + ".json");
    std::string command = "'" + binary.string() + "' --benchmark_repetitions=" +
                          std::to_string(repetitions) +
                          " --benchmark_enable_random_interleaving=true"
                          " --benchmark_report_aggregates_only=true --benchmark_out='" +
                          report.string() + "' --benchmark_out_format=json";
    if (!filter.empty()) {
        command += " --benchmark_filter='" + filter + "'";
    }
    std::map<std::string, double> medians;
    if (std::system(command.c_str()) != 0) {
        return medians;
    }
    const std::map<std::string, double> per_second{{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1.0}};
    // JSON is YAML: the tool's YAML reader parses the report.
    for (const YAML::Node& run : YAML::LoadFile(report.string())["benchmarks"]) {
        if (run["aggregate_name"] && run["aggregate_name"].as<std::string>() == "median") {
            medians[run["run_name"].as<std::string>()] =
                run["real_time"].as<double>() * per_second.at(run["time_unit"].as<std::string>());
        }
    }
    std::filesystem::remove(report);
    return medians;
}

void print_ratios(const std::map<std::string, double>& medians, std::span<const Ratio> ratios) {
    for (const Ratio& ratio : ratios) {
        auto top = medians.find(ratio.numerator);
        auto bottom = medians.find(ratio.denominator);
        if (top == medians.end() || bottom == medians.end()) {
            std::printf("  %-58s not measured\n", ratio.title);
            continue;
        }
        // Times: the ratio of times as titled. Throughputs: the inverse ratio of times.
        const double value = ratio.times ? top->second / bottom->second : bottom->second / top->second;
        const bool met = ratio.at_least ? value >= ratio.goal : value <= ratio.goal;
        std::printf("  %-58s %7.3f  (goal %s %.2f: %s)\n", ratio.title, value,
                    ratio.at_least ? "at least" : "at most", ratio.goal, met ? "met" : "MISSED");
    }
}

}  // namespace

Run add_bench(CLI::App& app) {
    auto* command = app.add_subcommand(
        "bench", "Run the benchmarks built next to the tool and print the ratios with their goals");
    auto repetitions = std::make_shared<int>(5);
    auto filter = std::make_shared<std::string>();
    command->add_option("--repetitions", *repetitions, "Runs of each benchmark (medians are kept)")
        ->check(CLI::Range(1, 100));
    command->add_option("--filter", *filter, "Only benchmarks matching this regular expression");
    return [repetitions, filter] {
        const std::filesystem::path bench = tool_directory() / "bench";
        bool ran = false;
        const std::pair<const char*, std::span<const Ratio>> suites[] = {
            {"tandem_bench", sim_ratios}, {"tandem_cuda_bench", cuda_ratios}};
        for (const auto& [name, ratios] : suites) {
            const std::filesystem::path binary = bench / name;
            if (!std::filesystem::exists(binary)) {
                std::printf("%s: not built here\n", name);
                continue;
            }
            const std::map<std::string, double> medians = run_benchmark(binary, *repetitions, *filter);
            if (medians.empty()) {
                std::printf("%s: failed or measured nothing\n", name);
                continue;
            }
            ran = true;
            std::printf("\n%s medians (real time)\n", name);
            for (const auto& [run, seconds] : medians) {
                std::printf("  %-58s %12.3f us\n", run.c_str(), seconds * 1e6);
            }
            std::printf("%s ratios\n", name);
            print_ratios(medians, ratios);
        }
        return ran ? 0 : 1;
    };
}

}  // namespace tandem::tool
