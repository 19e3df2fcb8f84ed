// `tandem explore`: random programs with injected faults, each checked against the byte-level
// oracle (explore_program.hpp). A violation prints the program's seed and writes the shrunk
// program as a scenario file that `tandem run` replays exactly; `--keep N` writes the first N
// programs as they were generated, so that a user can read and replay what explore runs.
//
// `--ranks N` runs each program on a job of N ranks simulated in one process, the devices split
// evenly among them (scenario_in_process.hpp says how one thread drives every rank), and a unit
// may abandon a rank, as its death would (explore_program.hpp gives the model of it), and with
// `--cut-percent P` cut the connection between two living ranks, which the job answers by
// cutting off the higher. What it writes are scenarios of ranks: `tandem replay` runs one that
// abandons or cuts off a rank in one process too, and one that does not as a job of processes.
//
// `--minutes M` turns it into a soak: programs keep coming until M minutes have passed, and the
// summary gives the faults injected and the peak resident memory after the first programs and at
// the end, so a reader sees whether a long run holds on to memory it should have given back.

#include "commands.hpp"
#include "explore_jobs.hpp"
#include "explore_program.hpp"
#include "explore_report.hpp"
#include "help_footer.hpp"
#include "path_checks.hpp"
#include "progress.hpp"
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

/// Devices a program may span: each program starts a simulator runtime of that many devices.
constexpr std::uint64_t explore_devices_max = 16;
/// Random units a program may hold, which bounds one program's time and memory.
constexpr std::uint64_t explore_units_max = 10'000;
/// Programs `--keep` may write, which bounds the files one run leaves.
constexpr std::uint64_t explore_keep_max = 10'000;

struct ExploreFlags {
    std::uint64_t runs = 100;
    /// A soak when positive: run until this much time has passed instead of `runs` programs.
    double minutes = 0;
    std::uint64_t seed = 1;
    std::uint32_t devices = 2;
    /// Whether --devices was given; without it, a run of jobs has one device a rank.
    bool devices_given = false;
    /// The ranks of the job each program runs on, simulated in one process; 1: no job.
    std::uint32_t ranks = 1;
    std::uint64_t steps = 100;
    std::string out = ".";
    /// The first programs to write to `out` as scenario files, violation or not.
    std::uint64_t keep = 0;
    bool json = false;
    /// Worker processes, as written (explore_jobs.hpp).
    std::string jobs;
    /// For tests of the explorer: the program of this seed is a violation on purpose.
    std::optional<std::uint64_t> plant_violation;
    /// The longest delay of a frame between ranks (`JoinOptions::message_delay_max`), in us.
    std::uint64_t message_delay_us = 0;
    /// The chance, in percent, that a unit cuts a connection between two living ranks.
    std::uint32_t cut_percent = 0;
};

/// How every program runs: a program of several ranks as a job simulated in this process, its
/// frames between ranks delayed as `flags` says.
RunOptions run_options(const ExploreFlags& flags) {
    RunOptions options;
    options.ranks_in_one_process = true;
    options.message_delay_max = std::chrono::microseconds(flags.message_delay_us);
    return options;
}

bool violates(const ExploreFlags& flags, const ExploreProgram& program) {
    return !run_scenario(annotate(program), run_options(flags)).passed;
}

/// Drops whole units while the program still fails, until no single unit can go. Bounded:
/// every pass removes at least one unit or ends the loop.
ExploreProgram shrink(const ExploreFlags& flags, ExploreProgram program) {
    bool removed = true;
    while (removed) {
        removed = false;
        for (std::size_t index = program.units.size(); index-- > 0;) {
            ExploreProgram candidate = program;
            candidate.units.erase(candidate.units.begin() + static_cast<std::ptrdiff_t>(index));
            if (violates(flags, candidate)) {
                program = std::move(candidate);
                removed = true;
            }
        }
    }
    return program;
}

/// Writes `scenario` as `<out>/<prefix><seed>.yaml`, opening with `header` and the command that
/// reruns it. Returns the file's path, or says on stderr that it cannot be written and returns
/// nothing.
std::string write_program(const ExploreFlags& flags, const std::string& prefix, std::uint64_t seed,
                          const Scenario& scenario, const std::string& header) {
    const std::filesystem::path file =
        std::filesystem::path(flags.out) / (prefix + std::to_string(seed) + ".yaml");
    std::error_code error;
    std::filesystem::create_directories(flags.out, error);
    std::ofstream out(file);
    out << "# " << header << " Rerun: tandem replay " << file.string() << "\n"
        << write_scenario(scenario);
    if (!out) {
        std::fprintf(stderr, "tandem: cannot write %s\n", file.string().c_str());
        return {};
    }
    return file.string();
}

/// The violation `program` made: with `shrink_it`, shrunk and written as a scenario under
/// `flags.out` (a file that cannot be written is said on stderr and leaves `file` empty);
/// otherwise only its seed and failure.
ExploreViolation record_violation(const ExploreFlags& flags, const ExploreProgram& program,
                                  const ScenarioResult& result, bool shrink_it) {
    ExploreViolation violation{program.seed, result.failure, program.units.size(), {}, {}};
    if (!shrink_it) {
        return violation;
    }
    const ExploreProgram shrunk = shrink(flags, program);
    violation.shrunk_units = shrunk.units.size();
    Scenario scenario = annotate(shrunk);
    scenario.name = "explore violation, seed " + std::to_string(program.seed);
    const std::string shrunk_from = "Shrunk by tandem explore from " +
                                    std::to_string(program.units.size()) + " units to " +
                                    std::to_string(shrunk.units.size()) + ".";
    violation.file = write_program(flags, "explore-", program.seed, scenario, shrunk_from);
    return violation;
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

/// Counts a violation in the tally, listing it while the list has room, and reports it.
void record(ExploreTally& tally, const ExploreReport& report, ExploreViolation violation) {
    tally.unwritten = tally.unwritten || (violation.shrunk_units && violation.file.empty());
    report.violation(violation);
    if (tally.listed.size() < explore_violations_listed_max) {
        tally.listed.push_back(std::move(violation));
    }
}

/// Program `index` of the run (`flags.seed + index` its seed).
ExploreProgram program_at(const ExploreFlags& flags, std::uint64_t index) {
    ExploreProgram program = generate_program(flags.devices, flags.steps, flags.seed + index,
                                              flags.ranks, flags.cut_percent);
    if (flags.plant_violation == program.seed) {
        program.planted_violation = loses_a_rank(program.units) ? PlantedViolation::loss_denied
                                                                : PlantedViolation::wrong_byte;
    }
    return program;
}

/// Runs programs of `flags` by index, on segments the runner keeps between its programs.
std::function<ProgramRunner()> program_runner(const ExploreFlags& flags) {
    return [&flags] {
        RunOptions options = run_options(flags);
        options.segments = std::make_shared<sim::SegmentPool>();
        return [&flags, options](std::uint64_t index) {
            const ExploreProgram program = program_at(flags, index);
            return ProgramVerdict{run_scenario(annotate(program), options).passed,
                                  injected_faults(program)};
        };
    };
}

/// Writes program `index` to `flags.out` as a scenario that `tandem replay` runs, and lists it.
void keep_program(const ExploreFlags& flags, std::uint64_t index, ExploreTally& tally) {
    const ExploreProgram program = program_at(flags, index);
    Scenario scenario = annotate(program);
    scenario.name = "explore program, seed " + std::to_string(program.seed);
    const std::string header =
        "Program " + std::to_string(index + 1) + " of tandem explore --seed " +
        std::to_string(flags.seed) + " --devices " + std::to_string(flags.devices) +
        (flags.ranks > 1 ? " --ranks " + std::to_string(flags.ranks) : "") +
        (flags.cut_percent > 0 ? " --cut-percent " + std::to_string(flags.cut_percent) : "") +
        " --steps " + std::to_string(flags.steps) + ", kept by --keep.";
    const std::string file = write_program(flags, "program-", program.seed, scenario, header);
    tally.unwritten = tally.unwritten || file.empty();
    if (!file.empty()) {
        tally.kept.push_back(file);
    }
}

/// Refuses, saying why, flags that cannot make a run: a seed that would wrap, a --jobs that is
/// not a count, an --out that cannot be written. Returns the jobs to run with.
std::optional<std::uint32_t> check_flags(const ExploreFlags& flags) {
    if (flags.minutes == 0 && flags.runs > 0 && flags.seed > whole_number_max - (flags.runs - 1)) {
        std::fprintf(stderr,
                     "tandem: --seed %llu with --runs %llu: the last program's seed would "
                     "pass 2^64 - 1\n",
                     static_cast<unsigned long long>(flags.seed),
                     static_cast<unsigned long long>(flags.runs));
        return std::nullopt;
    }
    const std::optional<std::uint32_t> jobs = parse_jobs(flags.jobs);
    // Found now, not at the first violation, which may come after hours of a soak.
    if (!jobs || !folder_can_be_written("--out", flags.out)) {
        return std::nullopt;
    }
    return jobs;
}

/// The flags of a run of jobs: one device a rank unless --devices says, and then a multiple of
/// the ranks; delayed frames only between ranks. Refuses, saying why, what does not fit.
bool resolve_job_flags(ExploreFlags& flags) {
    if (flags.ranks > 1 && !flags.devices_given) {
        flags.devices = flags.ranks;
    }
    if (flags.message_delay_us > 0 && flags.ranks < 2) {
        std::fprintf(stderr,
                     "tandem: --message-delay-us delays frames between ranks: give "
                     "--ranks 2 or more\n");
        return false;
    }
    if (flags.cut_percent > 0 && flags.ranks < 2) {
        std::fprintf(stderr,
                     "tandem: --cut-percent cuts connections between ranks: give --ranks 2 or "
                     "more\n");
        return false;
    }
    if (flags.devices % flags.ranks != 0) {
        std::fprintf(stderr,
                     "tandem: --ranks %u does not split --devices %u evenly: give a device "
                     "count that is a multiple of the ranks (each rank runs devices/ranks)\n",
                     flags.ranks, flags.devices);
        return false;
    }
    return true;
}

int explore(ExploreFlags flags) {
    if (!resolve_job_flags(flags)) {
        return 2;
    }
    const std::optional<std::uint32_t> jobs = check_flags(flags);
    if (!jobs) {
        return 2;
    }
    const bool soak = flags.minutes > 0;
    const ExploreReport report(
        ExploreRequest{flags.seed, flags.devices, flags.ranks, flags.steps, flags.runs,
                       flags.minutes, flags.message_delay_us, flags.cut_percent},
        flags.json);
    report.start();
    const auto started = std::chrono::steady_clock::now();
    const auto deadline =
        started + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double, std::ratio<60>>(flags.minutes));
    ExploreTally tally;
    // On a terminal, a line that shows a long run is alive; stdout keeps only the summary and the
    // violations.
    Progress progress("tandem explore", "programs", "violations", soak ? 0 : flags.runs,
                      soak ? std::optional(deadline) : std::nullopt);
    VerdictFeed verdicts(*jobs, soak ? std::nullopt : std::optional(flags.runs),
                         program_runner(flags));
    for (std::uint64_t run = 0;; ++run) {
        const auto now = std::chrono::steady_clock::now();
        if (soak ? now >= deadline : run >= flags.runs) {
            break;
        }
        progress.update(run, tally.violations);
        const std::optional<ProgramVerdict> verdict = verdicts.next();
        if (!verdict) {
            progress.clear();
            std::fprintf(stderr, "tandem: %s\n", verdicts.failure().c_str());
            return 2;
        }
        ++tally.programs;
        tally.faults += verdict->faults_injected;
        if (run < flags.keep) {
            keep_program(flags, run, tally);
        }
        if (tally.programs == soak_warmup_programs) {
            tally.peak_kib_at_start = verdicts.peak_resident_kib();
        }
        if (!verdict->passed) {
            progress.clear();
            // Run again here, from its seed, for the report: it replays exactly.
            const ExploreProgram program = program_at(flags, run);
            const ScenarioResult result = run_scenario(annotate(program), run_options(flags));
            ++tally.violations;
            record(tally, report,
                   record_violation(flags, program, result,
                                    tally.violations <= soak_violations_shrunk_max));
            // A soak keeps going so that its summary still gives the figures; a run stops at the
            // first violation.
            if (!soak) {
                verdicts.stop();
                break;
            }
        }
    }
    progress.clear();
    if (tally.programs < soak_warmup_programs) {
        tally.peak_kib_at_start = verdicts.peak_resident_kib();
    }
    tally.peak_kib_programs = std::min(tally.programs, soak_warmup_programs);
    tally.peak_kib_at_end = verdicts.peak_resident_kib();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return report.finish(tally, seconds);
}

/// The options of a run of jobs: the ranks, and the faults between them.
void add_job_options(CLI::App& command, ExploreFlags& flags) {
    command
        .add_option("--ranks", flags.ranks,
                    "Run each program on a job of this many ranks simulated in one process, "
                    "the devices split evenly among them (one a rank unless --devices says), "
                    "a rank's death drawn from the seed")
        ->check(whole_number(1, explore_devices_max))
        ->capture_default_str();
    command
        .add_option("--message-delay-us", flags.message_delay_us,
                    "With --ranks: delay every frame between ranks by a time drawn from 0 to "
                    "this many microseconds (from each rank's seed): outcomes must not change")
        ->check(whole_number(0, 1'000'000))
        ->capture_default_str();
    command
        .add_option("--cut-percent", flags.cut_percent,
                    "With --ranks: the chance in percent that a unit cuts the connection between "
                    "two living ranks (drawn from the seed); the job cuts off the higher, which "
                    "the others read as lost")
        ->check(whole_number(0, 100))
        ->capture_default_str();
}

}  // namespace

Run add_explore(CLI::App& app) {
    auto flags = std::make_shared<ExploreFlags>();
    auto* command = app.add_subcommand(
        "explore", "Run random programs with injected faults against the byte-level oracle");
    auto* runs = command->add_option("--runs", flags->runs, "How many programs")
                     ->check(whole_number(0))
                     ->capture_default_str();
    command
        ->add_option("--minutes", flags->minutes,
                     "Soak: run programs until this many minutes have passed")
        ->check(decimal_number(1.0 / 60, 1e6, "from 1/60 (a second) to 1000000 minutes"))
        ->excludes(runs);
    command
        ->add_option("--seed", flags->seed, "Seed of the first program (the next get seed+1, ...)")
        ->check(whole_number(0))
        ->capture_default_str();
    auto* devices = command->add_option("--devices", flags->devices, "Devices per program")
                        ->check(whole_number(1, explore_devices_max))
                        ->capture_default_str();
    add_job_options(*command, *flags);
    command->add_option("--steps", flags->steps, "Random units per program")
        ->check(whole_number(1, explore_units_max))
        ->capture_default_str();
    command
        ->add_option("--out", flags->out,
                     "Folder for the shrunk program of a violation and the programs --keep "
                     "writes (made if missing; its parent must exist)")
        ->capture_default_str();
    command
        ->add_option("--keep", flags->keep,
                     "Write the first N programs to --out as program-SEED.yaml, scenarios that "
                     "'tandem replay' runs")
        ->check(whole_number(0, explore_keep_max));
    command->add_flag("--json", flags->json, "Print one JSON document on stdout instead of lines");
    set_help_footer(
        *command,
        "{schema, command: \"explore\", seed, devices, ranks, message_delay_us, cut_percent, "
        "steps, runs (null in a soak), "
        "minutes (null unless a soak), programs, faults, violations, violating_programs: [{seed, "
        "rerun, failure, units, shrunk_units, file}], kept: [file], seconds, programs_per_second, "
        "peak_resident_kib: {after_programs, at_start, at_end}}. violating_programs lists the "
        "first 1000; shrunk_units and file are null for a program that was not shrunk or not "
        "written; kept lists the files --keep wrote.",
        {{0, "every program kept every rule"},
         {1, "a program broke a rule (a run stops at the first; a soak counts them all)"},
         {2,
          "usage or input error: an unknown option, a value out of range, an --out that cannot "
          "be written (refused before anything runs), or a program that could not be written "
          "there"}});
    add_jobs_option(command, flags->jobs);
    command
        ->add_option("--plant-violation", flags->plant_violation,
                     "Testing the explorer: the program of this seed expects a wrong byte")
        ->group("");  // Hidden: not an option a user needs.
    return [flags, devices] {
        flags->devices_given = devices->count() > 0;
        return explore(*flags);
    };
}

}  // namespace tandem::tool
