// `tandem launch` and `tandem clean` with jobs: N job_probe ranks start with their place in the
// environment, a rank that fails is named by the launcher and by its peers, a signal to the
// launcher reaches every rank, and the job folder is gone at the end whatever happened. The
// tests wait on what the ranks print (a pipe), never on time.

#include "tandem/job_folder.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

extern char** environ;

namespace tandem {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

/// A running `tandem` with its stdout and stderr on pipes.
struct Tool {
    pid_t pid = -1;
    int output = -1;
    int errors = -1;

    /// The next line of stdout; empty at its end.
    std::string line() const {
        std::string text;
        char byte = 0;
        while (::read(output, &byte, 1) == 1) {
            text += byte;
            if (byte == '\n') {
                break;
            }
        }
        return text;
    }
};

/// What a finished `tandem` printed and how it ended.
struct Finished {
    int status = 0;
    std::string output;
    std::string errors;
};

std::string read_all(int descriptor) {
    std::string text;
    char bytes[4096];
    ssize_t got = 0;
    while ((got = ::read(descriptor, bytes, sizeof bytes)) > 0) {
        text.append(bytes, static_cast<std::size_t>(got));
    }
    return text;
}

Tool start(std::vector<std::string> words) {
    words.insert(words.begin(), TANDEM_TOOL_PATH);
    int output[2];
    int errors[2];
    EXPECT_EQ(::pipe2(output, O_CLOEXEC), 0);
    EXPECT_EQ(::pipe2(errors, O_CLOEXEC), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, output[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, errors[1], STDERR_FILENO);
    std::vector<char*> argv;
    for (std::string& word : words) {
        argv.push_back(word.data());
    }
    argv.push_back(nullptr);
    Tool tool;
    EXPECT_EQ(::posix_spawn(&tool.pid, argv[0], &actions, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    ::close(output[1]);
    ::close(errors[1]);
    tool.output = output[0];
    tool.errors = errors[0];
    return tool;
}

Finished finish(Tool tool, std::string output_so_far = {}) {
    Finished finished;
    finished.output = output_so_far + read_all(tool.output);
    finished.errors = read_all(tool.errors);
    ::waitpid(tool.pid, &finished.status, 0);
    ::close(tool.output);
    ::close(tool.errors);
    return finished;
}

Finished run(const std::vector<std::string>& words) { return finish(start(words)); }

/// The job folders the ranks named in `output` ("... in FOLDER: ..."); each must be gone.
std::vector<std::string> folders_named(const std::string& output) {
    std::vector<std::string> folders;
    const std::regex named(" in (/[^:]+): ");
    for (auto match = std::sregex_iterator(output.begin(), output.end(), named);
         match != std::sregex_iterator(); ++match) {
        folders.push_back((*match)[1]);
    }
    return folders;
}

void expect_folders_gone(const std::string& output, std::size_t ranks) {
    const std::vector<std::string> folders = folders_named(output);
    EXPECT_EQ(folders.size(), ranks) << output;
    for (const std::string& folder : folders) {
        EXPECT_FALSE(fs::exists(folder)) << folder << " is still there";
    }
}

TEST(Launch, two_ranks_start_with_their_rank_the_world_and_a_simulator_runtime) {
    const Finished done =
        run({"launch", "-n", "2", "--backend", "sim", "--", JOB_PROBE_PATH, "check", "2"});
    EXPECT_EQ(WEXITSTATUS(done.status), 0) << done.output << done.errors;
    EXPECT_THAT(done.output, HasSubstr("rank 0 of 2 joined job "));
    EXPECT_THAT(done.output, HasSubstr("rank 1 of 2 joined job "));
    EXPECT_THAT(done.output, HasSubstr(": sim, 1 devices"));
    expect_folders_gone(done.output, 2);
}

TEST(Launch, three_ranks_of_two_devices_each_start_and_pass_their_arguments_through) {
    const Finished done = run({"launch", "-n", "3", "--backend", "sim", "--devices-per-rank", "2",
                               "--", JOB_PROBE_PATH, "check", "3"});
    EXPECT_EQ(WEXITSTATUS(done.status), 0) << done.output << done.errors;
    for (const char* rank : {"rank 0 of 3", "rank 1 of 3", "rank 2 of 3"}) {
        EXPECT_THAT(done.output, HasSubstr(rank));
    }
    EXPECT_THAT(done.output, HasSubstr(": sim, 2 devices"));
    expect_folders_gone(done.output, 3);
}

TEST(Launch, a_rank_killed_is_named_by_the_launcher_and_by_every_survivor) {
    const Finished done =
        run({"launch", "-n", "3", "--backend", "sim", "--", JOB_PROBE_PATH, "kill", "1"});
    EXPECT_EQ(WEXITSTATUS(done.status), 1) << done.output << done.errors;
    EXPECT_THAT(done.errors, HasSubstr("was killed by signal 9"));
    EXPECT_THAT(done.errors, ::testing::ContainsRegex("tandem: rank 1 \\(pid [0-9]+\\) was "
                                                      "killed by signal 9"));
    EXPECT_THAT(done.errors, HasSubstr("tandem: 1 of 3 ranks failed"));
    // The launcher leaves rank 1 unreaped until every rank has ended, so its peers read how.
    EXPECT_THAT(done.output, ::testing::ContainsRegex("rank 0 saw: rank 1 \\(pid [0-9]+\\) was "
                                                      "killed by signal 9"));
    EXPECT_THAT(done.output, ::testing::ContainsRegex("rank 2 saw: rank 1 \\(pid [0-9]+\\) was "
                                                      "killed by signal 9"));
    expect_folders_gone(done.output, 3);
}

TEST(Launch, a_rank_that_exits_non_zero_is_named_with_its_code) {
    const Finished done = run({"launch", "-n", "2", "--", JOB_PROBE_PATH, "exit", "0", "7"});
    EXPECT_EQ(WEXITSTATUS(done.status), 1) << done.output << done.errors;
    EXPECT_THAT(done.errors, ::testing::ContainsRegex("tandem: rank 0 \\(pid [0-9]+\\) exited "
                                                      "with code 7"));
    EXPECT_THAT(done.output, ::testing::ContainsRegex("rank 1 saw: rank 0 \\(pid [0-9]+\\) "
                                                      "exited with code 7 without leaving"));
    expect_folders_gone(done.output, 2);
}

TEST(Launch, sigterm_to_the_launcher_reaches_every_rank_and_the_folder_goes) {
    Tool tool = start({"launch", "-n", "2", "--", JOB_PROBE_PATH, "wait"});
    std::string output;
    for (int joined = 0; joined < 2;) {
        const std::string line = tool.line();
        ASSERT_FALSE(line.empty()) << "the launcher ended early: " << output;
        output += line;
        joined += line.find(" joined job ") != std::string::npos ? 1 : 0;
    }
    ASSERT_EQ(::kill(tool.pid, SIGTERM), 0);
    const Finished done = finish(tool, output);
    EXPECT_EQ(WEXITSTATUS(done.status), 1) << done.output << done.errors;
    EXPECT_THAT(done.errors, HasSubstr("passing it to every rank still running"));
    EXPECT_THAT(done.errors, ::testing::ContainsRegex("rank 0 \\(pid [0-9]+\\) was killed by "
                                                      "signal 15"));
    EXPECT_THAT(done.errors, ::testing::ContainsRegex("rank 1 \\(pid [0-9]+\\) was killed by "
                                                      "signal 15"));
    expect_folders_gone(done.output, 2);
}

TEST(Launch, a_program_that_cannot_start_is_a_usage_error_and_leaves_no_folder) {
    const std::vector<JobFolderEntry> before = list_job_folders();
    const Finished done = run({"launch", "-n", "2", "--", "/nonexistent/program"});
    EXPECT_EQ(WEXITSTATUS(done.status), 2) << done.errors;
    EXPECT_THAT(done.errors,
                HasSubstr("tandem: cannot start rank 0, '/nonexistent/program': No such file"));
    // A folder left behind is one no process holds; tests running beside this one hold theirs.
    for (const JobFolderEntry& folder : list_job_folders()) {
        bool existed = false;
        for (const JobFolderEntry& old : before) {
            existed = existed || old.path == folder.path;
        }
        EXPECT_TRUE(existed || folder.in_use) << folder.path << " was left behind";
    }
}

TEST(Launch, bad_options_are_refused_before_anything_starts) {
    EXPECT_EQ(WEXITSTATUS(run({"launch", "-n", "0", "--", "true"}).status), 2);
    EXPECT_EQ(WEXITSTATUS(run({"launch", "-n", "257", "--", "true"}).status), 2);
    EXPECT_EQ(WEXITSTATUS(run({"launch", "-n", "2"}).status), 2);
    const Finished backend = run({"launch", "-n", "2", "--backend", "simm", "--", "true"});
    EXPECT_EQ(WEXITSTATUS(backend.status), 2);
    EXPECT_THAT(backend.errors, HasSubstr("--backend"));
}

TEST(Clean, removes_a_job_folder_nobody_holds_and_keeps_one_that_is_held) {
    const std::string abandoned = job_folder_path(new_job_id());
    const std::string running = job_folder_path(new_job_id());
    { Result<JobFolderLock> dead = JobFolderLock::create(abandoned); }  // Its holder is gone.
    Result<JobFolderLock> held = JobFolderLock::create(running);
    ASSERT_TRUE(held.ok()) << held.error().report();
    const Finished listed = run({"clean", "--dry-run"});
    EXPECT_THAT(listed.output, HasSubstr("remove " + abandoned + " (job folder nobody holds)"));
    EXPECT_THAT(listed.output, HasSubstr("keep   " + running + " (job folder in use)"));
    EXPECT_TRUE(fs::exists(abandoned));
    // The removal itself through the library: a real `tandem clean` here would also remove
    // simulator segments that other tests running beside this one are looking at.
    const std::vector<std::string> removed = clean_job_folders();
    EXPECT_NE(std::find(removed.begin(), removed.end(), abandoned), removed.end());
    EXPECT_FALSE(fs::exists(abandoned));
    EXPECT_TRUE(fs::exists(running));
    held->release_and_remove();
    EXPECT_FALSE(fs::exists(running));
}

}  // namespace
}  // namespace tandem
