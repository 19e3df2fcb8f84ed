#pragma once

// What the job benchmarks share: this program started again as rank 1 of a job of two, its
// stdout a pipe this process reads as a gate; what rank 1 publishes; the figures both backends'
// benchmarks take the same way, and the median of a run of them.

#include "tandem/job.hpp"
#include "tandem/job_folder.hpp"

#include <spawn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

extern char** environ;

namespace tandem::bench {

/// Starts this program (`/proc/self/exe`) with `arguments` as rank 1 of job `id` (two ranks),
/// with `extra` variables beside this process's; its pid and the read end of its stdout.
inline std::pair<pid_t, int> start_rank_one(const std::string& id,
                                            const std::vector<std::string>& arguments,
                                            const std::vector<std::string>& extra = {}) {
    int gate[2];
    if (::pipe(gate) != 0) {
        std::perror("pipe");
        std::exit(2);
    }
    std::vector<std::string> variables;
    for (char** variable = environ; *variable != nullptr; ++variable) {
        variables.emplace_back(*variable);
    }
    for (const std::string& set :
         {std::string("TANDEM_RANK=1"), std::string("TANDEM_WORLD_SIZE=2"), "TANDEM_JOB_ID=" + id,
          "TANDEM_JOB_DIR=" + job_folder_path(id)}) {
        variables.push_back(set);
    }
    variables.insert(variables.end(), extra.begin(), extra.end());
    std::vector<std::string> words{"/proc/self/exe"};
    words.insert(words.end(), arguments.begin(), arguments.end());
    std::vector<char*> argv;
    std::vector<char*> envp;
    for (std::string& word : words) {
        argv.push_back(word.data());
    }
    for (std::string& variable : variables) {
        envp.push_back(variable.data());
    }
    argv.push_back(nullptr);
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, gate[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, gate[0]);
    pid_t pid = 0;
    if (::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data()) != 0) {
        std::perror("posix_spawn");
        std::exit(2);
    }
    posix_spawn_file_actions_destroy(&actions);
    ::close(gate[1]);
    return {pid, gate[0]};
}

using Clock = std::chrono::steady_clock;

/// Ends the benchmark with exit code 2, saying what failed and why.
[[noreturn]] inline void fail(const char* what, const std::string& why) {
    std::fprintf(stderr, "%s: %s\n", what, why.c_str());
    std::exit(2);
}

/// `fail` when `status` is an error.
inline void check(const Status& status, const char* what) {
    if (!status) {
        fail(what, status.error().report());
    }
}

inline double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

/// `bytes` of `device` set to `value` by the fill kernel launched as `config`.
inline Handle filled(Client& device, std::uint64_t bytes, std::uint8_t value,
                     const LaunchConfig& config) {
    Result<Handle> buffer = device.allocate(bytes);
    check(buffer ? Status{} : Status(buffer.error()), "allocate");
    check(device.launch("fill", config, {{*buffer, AccessMode::Write, std::nullopt}},
                        KernelArgs().u64(value)),
          "fill");
    return *buffer;
}

/// Rank 1: publishes "small" (256 bytes) and "large" (`large_bytes`), each filled with 3 by
/// launches of `config`, for rank 0's two devices, says so on its stdout (the gate), then waits at
/// the barrier rank 0 reaches when it is done.
inline int be_rank_one(std::uint64_t large_bytes, const LaunchConfig& config) {
    Result<Job> job = Job::join();
    check(job ? Status{} : Status(job.error()), "join");
    Client device = job->runtime()->client(0);
    for (std::uint32_t accessor : {0u, 1u}) {
        check(device.grant_peer_access(*job->service(0, accessor)), "grant");
    }
    check(job->publish("small", filled(device, 256, 3, config)), "publish");
    check(job->publish("large", filled(device, large_bytes, 3, config)), "publish");
    (void)!::write(STDOUT_FILENO, "p", 1);
    check(job->barrier(std::chrono::minutes(30)), "barrier");
    return 0;
}

/// `launches` one-thread copies of `source` into `target` on `device`, then a sync: seconds each.
inline double launch_batch(Client& device, const Handle& source, const Handle& target,
                           int launches) {
    const Clock::time_point start = Clock::now();
    for (int index = 0; index < launches; ++index) {
        check(device.launch("copy", LaunchConfig::linear(1),
                            {{source, AccessMode::Read, std::nullopt},
                             {target, AccessMode::Write, std::nullopt}}),
              "launch");
    }
    check(device.sync(), "sync");
    return seconds_since(start) / launches;
}

/// One `Job::lookup` of `name`, the handle dropped: seconds.
inline double lookup_once(Job& job, const char* name) {
    const Clock::time_point start = Clock::now();
    Result<Handle> found = job.lookup(name);
    const double took = seconds_since(start);
    check(found ? Status{} : Status(found.error()), "lookup");
    return took;
}

/// The median of `figures` (sorted here).
inline double median(std::vector<double> figures) {
    std::sort(figures.begin(), figures.end());
    const std::size_t half = figures.size() / 2;
    return figures.size() % 2 == 1 ? figures[half] : (figures[half - 1] + figures[half]) / 2;
}

}  // namespace tandem::bench
