#pragma once

// What the job benchmarks share: this program started again as rank 1 of a job of two, its
// stdout a pipe this process reads as a gate, and the median of a run of figures.

#include "tandem/job_folder.hpp"

#include <spawn.h>
#include <unistd.h>

#include <algorithm>
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

/// The median of `figures` (sorted here).
inline double median(std::vector<double> figures) {
    std::sort(figures.begin(), figures.end());
    const std::size_t half = figures.size() / 2;
    return figures.size() % 2 == 1 ? figures[half] : (figures[half - 1] + figures[half]) / 2;
}

}  // namespace tandem::bench
