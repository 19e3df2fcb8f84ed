// `tandem explore`: random programs with injected faults, each checked against the byte-level
// oracle (explore_program.hpp). A violation prints the program's seed and writes the shrunk
// program as a scenario file that `tandem run` replays exactly.
//
// `--minutes M` turns it into a soak: programs keep coming until M minutes have passed, and the
// summary gives the faults injected and the peak resident memory after the first programs and at
// the end, so a reader sees whether a long run holds on to memory it should have given back.

#include "commands.hpp"
#include "explore_jobs.hpp"
#include "explore_program.hpp"
#include "scenario_run.hpp"

#include "tandem/sim/segment.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <variant>

namespace tandem::tool {
namespace {

struct ExploreFlags {
    std::uint64_t runs = 100;
    /// A soak when positive: run until this much time has passed instead of `runs` programs.
    double minutes = 0;
    std::uint64_t seed = 1;
    std::uint32_t devices = 2;
    std::uint64_t steps = 100;
    std::string out = ".";
    /// Worker processes, as written (explore_jobs.hpp).
    std::string jobs;
    /// For tests of the explorer: the program of this seed is a violation on purpose.
    std::optional<std::uint64_t> plant_violation;
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

int report_violation(const ExploreFlags& flags, const ExploreProgram& program,
                     const ScenarioResult& result) {
    std::printf(
        "violation: program seed %llu (explore --seed %llu --devices %u --steps %llu)\n%s\n",
        static_cast<unsigned long long>(program.seed),
        static_cast<unsigned long long>(program.seed), flags.devices,
        static_cast<unsigned long long>(flags.steps), result.failure.c_str());
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

/// Faults the program carries for the simulator to inject (kernel faults, allocation faults, ...).
std::uint64_t injected_faults(const ExploreProgram& program) {
    std::uint64_t count = 0;
    const auto count_in = [&count](const std::vector<Step>& steps) {
        for (const Step& step : steps) {
            count += std::holds_alternative<InjectStep>(step.action) ? 1 : 0;
        }
    };
    count_in(program.setup);
    for (const std::vector<Step>& unit : program.units) {
        count_in(unit);
    }
    return count;
}

/// Programs after which a soak takes its first memory sample: past start-up and first growth.
constexpr std::uint64_t soak_warmup_programs = 100;
/// Violations a soak shrinks and writes; later ones print their seed only, which bounds the time
/// and files a soak spends on them.
constexpr std::uint64_t soak_violations_shrunk_max = 10;

struct ExploreTally {
    std::uint64_t programs = 0;
    std::uint64_t faults = 0;
    std::uint64_t violations = 0;
    std::uint64_t peak_kib_at_start = 0;
};

void print_soak(const ExploreTally& tally, double seconds, std::uint64_t peak_kib_at_end) {
    std::printf("soak: %.1f minutes (%.0f s)\n", seconds / 60, seconds);
    std::printf("programs run:        %llu (%.0f per second)\n",
                static_cast<unsigned long long>(tally.programs),
                seconds > 0 ? static_cast<double>(tally.programs) / seconds : 0.0);
    std::printf("faults injected:     %llu\n", static_cast<unsigned long long>(tally.faults));
    std::printf("rule violations:     %llu\n", static_cast<unsigned long long>(tally.violations));
    std::printf("peak resident (KiB): %llu after %llu programs, %llu at the end\n",
                static_cast<unsigned long long>(tally.peak_kib_at_start),
                static_cast<unsigned long long>(std::min(tally.programs, soak_warmup_programs)),
                static_cast<unsigned long long>(peak_kib_at_end));
}

/// Program `index` of the run (`flags.seed + index` its seed).
ExploreProgram program_at(const ExploreFlags& flags, std::uint64_t index) {
    ExploreProgram program = generate_program(flags.devices, flags.steps, flags.seed + index);
    program.planted_violation = flags.plant_violation == program.seed;
    return program;
}

/// Runs programs of `flags` by index, on segments the runner keeps between its programs.
std::function<ProgramRunner()> program_runner(const ExploreFlags& flags) {
    return [&flags] {
        RunOptions options;
        options.segments = std::make_shared<sim::SegmentPool>();
        return [&flags, options](std::uint64_t index) {
            const ExploreProgram program = program_at(flags, index);
            return ProgramVerdict{run_scenario(annotate(program), options).passed,
                                  injected_faults(program)};
        };
    };
}

int explore(const ExploreFlags& flags) {
    if (flags.devices == 0 || flags.devices > 16) {
        std::fprintf(stderr, "tandem: explore takes 1 to 16 devices\n");
        return 2;
    }
    const std::optional<std::uint32_t> jobs = parse_jobs(flags.jobs);
    if (!jobs) {
        return 2;
    }
    const bool soak = flags.minutes > 0;
    if (soak) {
        std::printf(
            "tandem explore: programs from seed %llu for %g minutes, %u devices, %llu steps each\n",
            static_cast<unsigned long long>(flags.seed), flags.minutes, flags.devices,
            static_cast<unsigned long long>(flags.steps));
    } else {
        std::printf("tandem explore: %llu programs from seed %llu, %u devices, %llu steps each\n",
                    static_cast<unsigned long long>(flags.runs),
                    static_cast<unsigned long long>(flags.seed), flags.devices,
                    static_cast<unsigned long long>(flags.steps));
    }
    std::fflush(stdout);
    const auto started = std::chrono::steady_clock::now();
    const auto deadline =
        started + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double, std::ratio<60>>(flags.minutes));
    ExploreTally tally;
    // A line on stderr every few seconds, so a long run shows it is alive; stdout keeps only the
    // summary and the violations.
    constexpr auto progress_every = std::chrono::seconds(5);
    auto next_progress = started + progress_every;
    VerdictFeed verdicts(*jobs, soak ? std::nullopt : std::optional(flags.runs),
                         program_runner(flags));
    for (std::uint64_t run = 0;; ++run) {
        const auto now = std::chrono::steady_clock::now();
        if (soak ? now >= deadline : run >= flags.runs) {
            break;
        }
        if (now >= next_progress) {
            next_progress = now + progress_every;
            std::fprintf(stderr, "tandem explore: %llu programs, %llu faults injected, %.0f s\n",
                         static_cast<unsigned long long>(run),
                         static_cast<unsigned long long>(tally.faults),
                         std::chrono::duration<double>(now - started).count());
        }
        const std::optional<ProgramVerdict> verdict = verdicts.next();
        if (!verdict) {
            std::fprintf(stderr, "tandem: %s\n", verdicts.failure().c_str());
            return 2;
        }
        if (!verdict->passed) {
            // Run again here, from its seed, for the report: it replays exactly.
            const ExploreProgram program = program_at(flags, run);
            const ScenarioResult result = run_scenario(annotate(program), RunOptions{});
            // A soak keeps going so that its summary still gives the figures; a run stops at the
            // first violation.
            if (!soak) {
                verdicts.stop();
                return report_violation(flags, program, result);
            }
            ++tally.violations;
            if (tally.violations <= soak_violations_shrunk_max) {
                report_violation(flags, program, result);
            } else {
                std::printf("violation: program seed %llu (not shrunk)\n",
                            static_cast<unsigned long long>(program.seed));
            }
            std::fflush(stdout);
        }
        ++tally.programs;
        tally.faults += verdict->faults_injected;
        if (tally.programs == soak_warmup_programs) {
            tally.peak_kib_at_start = verdicts.peak_resident_kib();
        }
    }
    if (tally.programs < soak_warmup_programs) {
        tally.peak_kib_at_start = verdicts.peak_resident_kib();
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (soak) {
        print_soak(tally, seconds, verdicts.peak_resident_kib());
        return tally.violations == 0 ? 0 : 1;
    }
    std::printf("%llu programs passed in %.2f s (%.0f programs per second), %llu faults injected\n",
                static_cast<unsigned long long>(tally.programs), seconds,
                seconds > 0 ? static_cast<double>(tally.programs) / seconds : 0.0,
                static_cast<unsigned long long>(tally.faults));
    return 0;
}

}  // namespace

Run add_explore(CLI::App& app) {
    auto flags = std::make_shared<ExploreFlags>();
    auto* command = app.add_subcommand(
        "explore", "Run random programs with injected faults against the byte-level oracle");
    auto* runs = command->add_option("--runs", flags->runs, "How many programs")
                     ->check(non_negative())
                     ->capture_default_str();
    command
        ->add_option("--minutes", flags->minutes,
                     "Soak: run programs until this many minutes have passed")
        ->check(CLI::Range(1.0 / 60, 1e6).description("from 1/60 (a second) to 1000000 minutes"))
        ->excludes(runs);
    command
        ->add_option("--seed", flags->seed, "Seed of the first program (the next get seed+1, ...)")
        ->check(non_negative())
        ->capture_default_str();
    command->add_option("--devices", flags->devices, "Devices per program")
        ->check(non_negative())
        ->capture_default_str();
    command->add_option("--steps", flags->steps, "Random units per program")
        ->check(non_negative())
        ->capture_default_str();
    command->add_option("--out", flags->out, "Folder for the shrunk program of a violation")
        ->capture_default_str();
    add_jobs_option(command, flags->jobs);
    command
        ->add_option("--plant-violation", flags->plant_violation,
                     "Testing the explorer: the program of this seed expects a wrong byte")
        ->group("");  // Hidden: not an option a user needs.
    return [flags] { return explore(*flags); };
}

}  // namespace tandem::tool
