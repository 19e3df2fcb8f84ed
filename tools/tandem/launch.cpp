// `tandem launch -n N -- PROGRAM ARGS...`: starts a job of N ranks on this host, one process each,
// as torchrun does: it makes the job folder, starts the ranks with TANDEM_RANK, TANDEM_WORLD_SIZE,
// TANDEM_LOCAL_RANK, TANDEM_JOB_ID and TANDEM_JOB_DIR set, forwards SIGINT and SIGTERM to them,
// and waits for every one. A rank that exits non-zero or dies by a signal is named as it ends,
// and the launcher then exits 1. A rank that ended stays unreaped (a zombie: a process id and
// its exit status, its memory freed) until every rank has ended, so that its peers can read how
// it ended. The job folder goes at the end, whatever happened; if the launcher itself is killed,
// `tandem clean` removes it once the ranks are gone too.
//
// A rank that ends does not stop the others: they learn of it through their job (Job::rank_alive,
// Job::wait_for_loss) and decide, which is the point of one process per device.

#include "c_strings.hpp"
#include "commands.hpp"
#include "help_footer.hpp"

#include "tandem/job.hpp"
#include "tandem/job_folder.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

extern char** environ;

namespace tandem::tool {
namespace {

struct LaunchFlags {
    std::uint32_t ranks = 1;
    std::string backend;
    std::uint32_t devices_per_rank = 0;
    std::vector<std::string> program;
};

/// The environment of rank `rank`: this process's, without the job variables of an outer job,
/// and with the rank's own.
std::vector<std::string> rank_environment(const LaunchFlags& flags, const std::string& job_id,
                                          const std::string& folder, std::uint32_t rank) {
    std::vector<std::string> variables;
    for (char** variable = environ; *variable != nullptr; ++variable) {
        const std::string text = *variable;
        const std::string name = text.substr(0, text.find('='));
        const bool replaced = name == "TANDEM_RANK" || name == "TANDEM_WORLD_SIZE" ||
                              name == "TANDEM_LOCAL_RANK" || name == "TANDEM_JOB_ID" ||
                              name == "TANDEM_JOB_DIR" ||
                              (name == "TANDEM_BACKEND" && !flags.backend.empty()) ||
                              (name == "TANDEM_DEVICES" && flags.devices_per_rank != 0);
        if (!replaced) {
            variables.push_back(text);
        }
    }
    variables.push_back("TANDEM_RANK=" + std::to_string(rank));
    variables.push_back("TANDEM_WORLD_SIZE=" + std::to_string(flags.ranks));
    variables.push_back("TANDEM_LOCAL_RANK=" + std::to_string(rank));
    variables.push_back("TANDEM_JOB_ID=" + job_id);
    variables.push_back("TANDEM_JOB_DIR=" + folder);
    if (!flags.backend.empty()) {
        variables.push_back("TANDEM_BACKEND=" + flags.backend);
    }
    if (flags.devices_per_rank != 0) {
        variables.push_back("TANDEM_DEVICES=" + std::to_string(flags.devices_per_rank));
    }
    return variables;
}

/// Starts rank `rank` with the signals the launcher blocks unblocked; its pid, or 0 with the
/// error written to `error`.
pid_t start_rank(const LaunchFlags& flags, const std::string& job_id, const std::string& folder,
                 std::uint32_t rank, int& error) {
    std::vector<std::string> words = flags.program;
    std::vector<std::string> variables = rank_environment(flags, job_id, folder, rank);
    std::vector<char*> argv = c_strings(words);
    std::vector<char*> envp = c_strings(variables);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK);
    pid_t pid = 0;
    error = ::posix_spawnp(&pid, argv[0], nullptr, &attributes, argv.data(), envp.data());
    posix_spawnattr_destroy(&attributes);
    return error == 0 ? pid : 0;
}

/// Why a rank's process ended, from what waitid reports; empty when it exited with 0.
std::string failure_of(const siginfo_t& info) {
    if (info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED) {
        const char* name = ::strsignal(info.si_status);
        return "was killed by signal " + std::to_string(info.si_status) +
               (name != nullptr ? std::string(" (") + name + ")" : std::string());
    }
    if (info.si_status != 0) {
        return "exited with code " + std::to_string(info.si_status);
    }
    return {};
}

/// The ranks running and those that ended, by pid, and how many failed.
struct Ranks {
    std::map<pid_t, std::uint32_t> running;
    std::vector<pid_t> ended;
    std::uint32_t failed = 0;
};

/// Notes every rank that has ended, naming each that failed, and leaves it unreaped: while its
/// parent has not reaped it the system shows how it ended, so its peers' notices can say
/// "killed by signal 9" rather than only that it is gone. The ranks are reaped once all ended.
void note_ended(Ranks& ranks) {
    for (auto it = ranks.running.begin(); it != ranks.running.end();) {
        siginfo_t info{};
        if (::waitid(P_PID, static_cast<id_t>(it->first), &info, WEXITED | WNOHANG | WNOWAIT) !=
                0 ||
            info.si_pid != it->first) {
            ++it;
            continue;
        }
        const std::string failure = failure_of(info);
        if (!failure.empty()) {
            std::fprintf(stderr, "tandem: rank %u (pid %d) %s\n", it->second, it->first,
                         failure.c_str());
            ++ranks.failed;
        }
        ranks.ended.push_back(it->first);
        it = ranks.running.erase(it);
    }
}

/// Reaps every rank that ended.
void reap_ended(Ranks& ranks) {
    for (const pid_t pid : ranks.ended) {
        ::waitpid(pid, nullptr, 0);
    }
    ranks.ended.clear();
}

/// Waits for every rank, forwarding SIGINT and SIGTERM (blocked in this process, so they wait
/// in `signals` for this loop) to the ranks still running.
void wait_for_ranks(Ranks& ranks, const sigset_t& signals) {
    note_ended(ranks);
    while (!ranks.running.empty()) {
        siginfo_t info{};
        const int signal = ::sigwaitinfo(&signals, &info);
        if (signal == SIGINT || signal == SIGTERM) {
            std::fprintf(stderr, "tandem: %s: passing it to every rank still running\n",
                         ::strsignal(signal));
            for (const auto& [pid, rank] : ranks.running) {
                ::kill(pid, signal);
            }
        }
        note_ended(ranks);
    }
    reap_ended(ranks);
}

/// Starts every rank and waits for them; the exit code.
int launch(const LaunchFlags& flags) {
    const std::string job_id = new_job_id();
    Result<JobFolderLock> folder = JobFolderLock::create(job_folder_path(job_id));
    if (!folder) {
        std::fprintf(stderr, "tandem: %s\n", folder.error().message().c_str());
        return 2;
    }
    sigset_t signals;
    sigemptyset(&signals);
    for (const int signal : {SIGINT, SIGTERM, SIGCHLD}) {
        sigaddset(&signals, signal);
    }
    sigset_t before;
    ::sigprocmask(SIG_BLOCK, &signals, &before);
    Ranks ranks;
    int exit_code = 0;
    for (std::uint32_t rank = 0; rank < flags.ranks; ++rank) {
        int error = 0;
        const pid_t pid = start_rank(flags, job_id, folder->path(), rank, error);
        if (pid == 0) {
            std::fprintf(stderr, "tandem: cannot start rank %u, '%s': %s\n", rank,
                         flags.program[0].c_str(), std::strerror(error));
            for (const auto& [started, started_rank] : ranks.running) {
                ::kill(started, SIGTERM);
            }
            exit_code = 2;
            break;
        }
        ranks.running[pid] = rank;
    }
    wait_for_ranks(ranks, signals);
    ::sigprocmask(SIG_SETMASK, &before, nullptr);
    folder->release_and_remove();
    if (exit_code == 0 && ranks.failed != 0) {
        std::fprintf(stderr, "tandem: %u of %u ranks failed (job %s)\n", ranks.failed, flags.ranks,
                     job_id.c_str());
        exit_code = 1;
    }
    return exit_code;
}

}  // namespace

Run add_launch(CLI::App& app) {
    auto* command = app.add_subcommand(
        "launch", "Start a job: N processes of PROGRAM, one rank each, on this host");
    auto flags = std::make_shared<LaunchFlags>();
    set_help_footer(*command, "",
                    {{0, "every rank exited with 0"},
                     {1, "a rank exited with another code or was killed (stderr names it)"},
                     {2,
                      "usage or input error: an unknown option, a value out of range, a "
                      "program that cannot be started, a job folder that cannot be made"}});
    command->add_option("-n,--ranks", flags->ranks, "Number of ranks (processes), 1 to 256")
        ->required()
        ->check(whole_number(1, job_ranks_max));
    command
        ->add_option("--backend", flags->backend,
                     "Backend of every rank (TANDEM_BACKEND): sim, reference or cuda; unset: "
                     "the environment's")
        ->check(CLI::IsMember({"sim", "reference", "cuda"}));
    command
        ->add_option("--devices-per-rank", flags->devices_per_rank,
                     "Devices of each rank's runtime (TANDEM_DEVICES), 1 to 64; unset: the "
                     "environment's, else 1")
        ->check(whole_number(1, 64));
    command->add_option("program", flags->program, "PROGRAM ARGS..., after --")->required();
    return [flags] { return launch(*flags); };
}

}  // namespace tandem::tool
