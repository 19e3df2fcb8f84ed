// `tandem explore`: random programs with injected faults, each checked against the byte-level
// oracle (explore_program.hpp). A violation prints the program's seed and writes the shrunk
// program as a scenario file that `tandem run` replays exactly.

#include "commands.hpp"
#include "explore_program.hpp"
#include "scenario_run.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace tandem::tool {
namespace {

struct ExploreFlags {
    std::uint64_t runs = 100;
    std::uint64_t seed = 1;
    std::uint32_t devices = 2;
    std::uint64_t steps = 100;
    std::string out = ".";
};

bool violates(const ExploreProgram& program) {
    return !run_scenario(annotate(program), RunOptions{}).passed;
}

/// Drops whole units while the program still fails, until no single unit can go. Bounded:
/// every pass removes at least one unit or ends the loop.
ExploreProgram shrink(ExploreProgram program) {
    bool removed = true;
    while (removed) {
        removed = false;
        for (std::size_t index = program.units.size(); index-- > 0;) {
            ExploreProgram candidate = program;
            candidate.units.erase(candidate.units.begin() + static_cast<std::ptrdiff_t>(index));
            if (violates(candidate)) {
                program = std::move(candidate);
                removed = true;
            }
        }
    }
    return program;
}

int report_violation(const ExploreFlags& flags, const ExploreProgram& program, const ScenarioResult& result) {
    std::printf("violation: program seed %llu (explore --seed %llu --devices %u --steps %llu)\n%s\n",
                static_cast<unsigned long long>(program.seed), static_cast<unsigned long long>(program.seed),
                flags.devices, static_cast<unsigned long long>(flags.steps), result.failure.c_str());
    const ExploreProgram shrunk = shrink(program);
    Scenario scenario = annotate(shrunk);
    scenario.name = "explore violation, seed " + std::to_string(program.seed);
    const std::filesystem::path file =
        std::filesystem::path(flags.out) / ("explore-" + std::to_string(program.seed) + ".yaml");
    std::error_code error;
    std::filesystem::create_directories(flags.out, error);
    std::ofstream out(file);
    out << "# Shrunk by tandem explore from " << program.units.size() << " units to "
        << shrunk.units.size() << ". Rerun: tandem replay " << file.string() << "\n"
        << write_scenario(scenario);
    if (!out) {
        std::fprintf(stderr, "tandem: cannot write %s\n", file.string().c_str());
        return 2;
    }
    std::printf("shrunk from %zu to %zu units; written to %s\n", program.units.size(),
                shrunk.units.size(), file.string().c_str());
    return 1;
}

int explore(const ExploreFlags& flags) {
    if (flags.devices == 0 || flags.devices > 16) {
        std::fprintf(stderr, "tandem: explore takes 1 to 16 devices\n");
        return 2;
    }
    std::printf("tandem explore: %llu programs from seed %llu, %u devices, %llu steps each\n",
                static_cast<unsigned long long>(flags.runs), static_cast<unsigned long long>(flags.seed),
                flags.devices, static_cast<unsigned long long>(flags.steps));
    std::fflush(stdout);
    const auto started = std::chrono::steady_clock::now();
    for (std::uint64_t run = 0; run < flags.runs; ++run) {
        const ExploreProgram program = generate_program(flags.devices, flags.steps, flags.seed + run);
        const ScenarioResult result = run_scenario(annotate(program), RunOptions{});
        if (!result.passed) {
            return report_violation(flags, program, result);
        }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::printf("%llu programs passed in %.2f s (%.0f programs per second)\n",
                static_cast<unsigned long long>(flags.runs), seconds,
                seconds > 0 ? static_cast<double>(flags.runs) / seconds : 0.0);
    return 0;
}

}  // namespace

Run add_explore(CLI::App& app) {
    auto flags = std::make_shared<ExploreFlags>();
    auto* command = app.add_subcommand(
        "explore", "Run random programs with injected faults against the byte-level oracle");
    command->add_option("--runs", flags->runs, "How many programs")->capture_default_str();
    command->add_option("--seed", flags->seed, "Seed of the first program (the next get seed+1, ...)")
        ->capture_default_str();
    command->add_option("--devices", flags->devices, "Devices per program")->capture_default_str();
    command->add_option("--steps", flags->steps, "Random units per program")->capture_default_str();
    command->add_option("--out", flags->out, "Folder for the shrunk program of a violation")
        ->capture_default_str();
    return [flags] { return explore(*flags); };
}

}  // namespace tandem::tool
