#pragma once

// What the job tests share: a fresh job of N ranks, ranks joined on threads of this process, and
// a rank in a process of its own (job_test_rank) behind a pipe the test reads as its gate.
// Nothing here waits on time: a test waits on what a rank writes, or on a file a rank makes, and
// the generous bounds only stop a broken build from hanging.

#include "tandem/job.hpp"
#include "tandem/job_folder.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <poll.h>
#include <spawn.h>
#include <sys/inotify.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace tandem::testing {

/// The bound on every wait of these tests: far past what a join or a notice takes.
inline constexpr std::chrono::milliseconds guard_timeout{std::chrono::seconds(60)};

/// The environment of rank `rank` of a job of `world_size` ranks and id `job_id`.
inline JobEnvironment rank_of(const std::string& job_id, std::uint32_t rank,
                              std::uint32_t world_size) {
    JobEnvironment environment;
    environment.rank = rank;
    environment.local_rank = rank;
    environment.world_size = world_size;
    environment.job_id = job_id;
    environment.job_folder = job_folder_path(job_id);
    return environment;
}

/// Joins as `environment` without a runtime.
inline Result<Job> join_as(const JobEnvironment& environment,
                           std::chrono::milliseconds timeout = guard_timeout) {
    JoinOptions options;
    options.environment = environment;
    options.open_runtime = false;
    options.timeout = timeout;
    return Job::join(options);
}

/// Joins every rank of `job_id` on threads of this process; their results in rank order.
inline std::vector<Result<Job>> join_all(const std::string& job_id, std::uint32_t world_size) {
    std::vector<std::future<Result<Job>>> joining;
    for (std::uint32_t rank = 0; rank < world_size; ++rank) {
        joining.push_back(std::async(std::launch::async, [&job_id, rank, world_size] {
            return join_as(rank_of(job_id, rank, world_size));
        }));
    }
    std::vector<Result<Job>> joined;
    for (auto& future : joining) {
        joined.push_back(future.get());
    }
    return joined;
}

/// The options of a job simulated in this process (`Job::join_in_process`) as the tests join it:
/// every rank a simulated runtime of one device, scheduled as `scheduler` says ("deterministic"
/// or "threads"), from these options alone (the environment is not read), waiting up to
/// `guard_timeout` for the other ranks.
inline JoinOptions sim_ranks_in_one_process(const std::string& scheduler = "deterministic") {
    JoinOptions options;
    options.runtime.from_environment = false;
    options.runtime.backend = "sim";
    options.runtime.devices = 1;
    options.runtime.scheduler = scheduler;
    options.timeout = guard_timeout;
    return options;
}

/// Waits until `path` exists: the gate on a rank that has reached a point of its join. Woken by
/// the system as entries appear in the nearest folder of `path` that exists (inotify), never by
/// a clock; the guard bound only stops a broken build from hanging.
inline bool wait_for_file(const std::filesystem::path& path) {
    const int watcher = ::inotify_init1(IN_CLOEXEC);
    if (watcher < 0) {
        return false;
    }
    const auto deadline = std::chrono::steady_clock::now() + guard_timeout;
    bool found = false;
    while (!found && std::chrono::steady_clock::now() < deadline) {
        // Watch first, then look: an entry made in between still wakes the poll below.
        std::filesystem::path folder = path.parent_path();
        while (!std::filesystem::exists(folder) && folder.has_parent_path()) {
            folder = folder.parent_path();
        }
        const int watch = ::inotify_add_watch(watcher, folder.c_str(), IN_CREATE | IN_MOVED_TO);
        found = std::filesystem::exists(path);
        pollfd ready{watcher, POLLIN, 0};
        if (!found && watch >= 0 &&
            ::poll(&ready, 1, static_cast<int>(guard_timeout.count())) > 0) {
            char events[4096];
            (void)!::read(watcher, events, sizeof events);
        }
        if (watch >= 0) {
            ::inotify_rm_watch(watcher, watch);
        }
        found = found || std::filesystem::exists(path);
    }
    ::close(watcher);
    return found;
}

/// A rank in a process of its own: job_test_rank with `arguments`, its stdout a pipe the test
/// reads and its stdin a pipe the test holds.
struct RankProcess {
    pid_t pid = -1;
    int output = -1;
    int input = -1;

    /// Writes one line to the rank's stdin (a command, for a rank that reads them).
    void say(const std::string& line) const {
        const std::string text = line + "\n";
        EXPECT_EQ(::write(input, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    }
    /// Says `line` and returns the rank's answer, its next line.
    [[nodiscard]] std::string ask(const std::string& line) const {
        say(line);
        return first_line();
    }
    /// Reads the rank's next line (its first: "joined" once it has joined).
    [[nodiscard]] std::string first_line() const {
        std::string line;
        char byte = 0;
        while (::read(output, &byte, 1) == 1 && byte != '\n') {
            line += byte;
        }
        return line;
    }
    /// Reaps the process and closes the pipes; its wait status.
    int reap() {
        int status = 0;
        ::waitpid(pid, &status, 0);
        ::close(output);
        ::close(input);
        return status;
    }
};

/// The environment of a process that is `environment`'s rank: this process's, without its
/// TANDEM_ variables (an outer job's, or a runtime's this test did not mean for the rank), with
/// the rank's variables and those in `extra`.
inline std::vector<std::string> rank_variables(const JobEnvironment& environment,
                                               const std::vector<std::string>& extra = {}) {
    std::vector<std::string> variables;
    for (char** variable = environ; *variable != nullptr; ++variable) {
        if (std::string(*variable).rfind("TANDEM_", 0) != 0) {
            variables.emplace_back(*variable);
        }
    }
    variables.push_back("TANDEM_RANK=" + std::to_string(environment.rank));
    variables.push_back("TANDEM_WORLD_SIZE=" + std::to_string(environment.world_size));
    variables.push_back("TANDEM_JOB_ID=" + environment.job_id);
    variables.push_back("TANDEM_JOB_DIR=" + environment.job_folder);
    variables.insert(variables.end(), extra.begin(), extra.end());
    return variables;
}

/// Starts `words` (the program, then its arguments) with exactly `variables` as its environment
/// and `actions` on its descriptors; its pid, or -1 when it could not start.
inline pid_t spawn(std::vector<std::string> words, std::vector<std::string> variables,
                   const posix_spawn_file_actions_t* actions) {
    // What posix_spawn takes: pointers into the strings, which outlive the call, then a null.
    const auto pointers = [](std::vector<std::string>& texts) {
        std::vector<char*> into;
        for (std::string& text : texts) {
            into.push_back(text.data());
        }
        into.push_back(nullptr);
        return into;
    };
    std::vector<char*> argv = pointers(words);
    std::vector<char*> envp = pointers(variables);
    pid_t pid = -1;
    EXPECT_EQ(::posix_spawn(&pid, argv[0], actions, nullptr, argv.data(), envp.data()), 0)
        << "cannot start " << words[0];
    return pid;
}

/// Starts `program` as `environment`'s rank, with `arguments` and the variables of the rank in its
/// environment (and no other TANDEM_ variable of this one but those in `extra`).
inline RankProcess start_program(const std::string& program, const JobEnvironment& environment,
                                 const std::vector<std::string>& arguments,
                                 const std::vector<std::string>& extra = {}) {
    int to_rank[2];
    int from_rank[2];
    EXPECT_EQ(::pipe2(to_rank, O_CLOEXEC), 0);
    EXPECT_EQ(::pipe2(from_rank, O_CLOEXEC), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, to_rank[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, from_rank[1], STDOUT_FILENO);
    std::vector<std::string> words{program};
    words.insert(words.end(), arguments.begin(), arguments.end());
    RankProcess process;
    process.pid = spawn(std::move(words), rank_variables(environment, extra), &actions);
    posix_spawn_file_actions_destroy(&actions);
    ::close(to_rank[0]);
    ::close(from_rank[1]);
    process.output = from_rank[0];
    process.input = to_rank[1];
    return process;
}

#ifdef TANDEM_JOB_TEST_RANK
/// Starts job_test_rank (built next to the tests, TANDEM_JOB_TEST_RANK) as `environment`'s rank.
inline RankProcess start_rank(const JobEnvironment& environment,
                              const std::vector<std::string>& arguments) {
    return start_program(TANDEM_JOB_TEST_RANK, environment, arguments);
}
#endif

}  // namespace tandem::testing
