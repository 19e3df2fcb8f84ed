#pragma once

// A test run again as the ranks of a job, one process each: the test's own program started once
// per rank with a filter that selects that one test, and the variables a launcher gives a rank
// (`tandem launch`: TANDEM_RANK, TANDEM_WORLD_SIZE, TANDEM_JOB_ID, TANDEM_JOB_DIR), so each rank
// joins with `Job::join()` from its environment as a program of one process per device does.
// The test's own process is the launcher: it makes the job folder, waits for every rank, and
// takes their verdicts as its own, each failing rank named with what it wrote. It leaves a rank
// that ended unreaped until every rank has ended, as `tandem launch` does, so the others can
// still read how it ended ("was killed by signal 9").
//
// Nothing here waits for a time: the ranks' own waits are bounded, a rank that fails has the
// others killed at once (they would only wait for it), and the launcher's own bound
// (`rank_processes_guard`) only stops a broken build from hanging; a rank still running then is
// killed and named.

#include "job_test_support.hpp"

#include "tandem/job_folder.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace tandem::conformance {

/// The variable that makes a process a rank of a test: the full name of the test it runs as a
/// rank (`run_this_test_as_ranks` sets it).
inline constexpr const char* rank_of_test_variable = "TANDEM_TEST_RANK_OF";

/// The line a rank writes just before it ends itself by SIGKILL on purpose, having passed so far:
/// the launcher then takes that end as the rank's part done.
inline constexpr const char* ended_on_purpose_line = "this rank passed and ends itself by SIGKILL";

/// How long the launcher waits for the ranks before it kills them: far past any rank's own
/// bounded waits, which end a rank whose partner is gone.
inline constexpr std::chrono::minutes rank_processes_guard{3};

/// The running test's full name, as `--gtest_filter` takes it: "Suite/kind.name".
inline std::string this_test_name() {
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    return std::string(test->test_suite_name()) + "." + test->name();
}

/// Whether this process is a rank that `run_this_test_as_ranks` started for the running test.
inline bool is_a_rank_of_this_test() {
    const char* test = std::getenv(rank_of_test_variable);
    return test != nullptr && test == this_test_name();
}

/// Ends this rank now, as a crash or a `kill -9` would, after saying so on its output: the
/// launcher counts it passed. Only for a rank that has not failed (it would hide the failure).
[[noreturn]] inline void end_this_rank_by_sigkill() {
    std::printf("%s\n", ended_on_purpose_line);
    std::fflush(nullptr);  // What the rank wrote is in its output file before it dies.
    ::kill(::getpid(), SIGKILL);
    std::abort();  // Not reached: SIGKILL cannot be caught.
}

/// One rank process of a test: its number, its pid, how it ended and what it wrote.
struct RankRun {
    std::uint32_t rank = 0;
    pid_t pid = -1;
    /// How it ended, as `waitid` reports it (`CLD_EXITED` with the exit code, or the signal).
    siginfo_t end{};
    /// Its stdout and stderr.
    std::string output;
    /// Why the launcher meant to stop it, if it did (it may have ended on its own first).
    std::string stopped;
};

namespace rank_processes_detail {

/// Starts this program as the rank `rank` describes, running the test `test` alone, with
/// `variables` besides the rank's, its stdout and stderr into the file `output`.
inline pid_t start(const std::string& test, const JobEnvironment& rank,
                   const std::vector<std::string>& variables, const std::string& output) {
    std::vector<std::string> environment =
        tandem::testing::rank_variables(rank, {std::string(rank_of_test_variable) + "=" + test});
    // The launcher's gtest settings are its own: a rank that shards or writes the launcher's
    // report would run nothing, or overwrite it.
    std::erase_if(environment,
                  [](const std::string& variable) { return variable.rfind("GTEST_", 0) == 0; });
    environment.insert(environment.end(), variables.begin(), variables.end());
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    const pid_t pid = tandem::testing::spawn({"/proc/self/exe", "--gtest_filter=" + test},
                                             std::move(environment), &actions);
    posix_spawn_file_actions_destroy(&actions);
    return pid;
}

/// The ends of the rank processes as they come: a thread a rank waits for its end without
/// reaping it (`WNOWAIT`), so the others can still read how it ended.
class RankEnds {
public:
    explicit RankEnds(const std::vector<RankRun>& runs) : ended_(runs.size()) {
        for (std::size_t index = 0; index < runs.size(); ++index) {
            waiters_.emplace_back([this, index, pid = runs[index].pid] {
                siginfo_t end{};
                while (::waitid(P_PID, static_cast<id_t>(pid), &end, WEXITED | WNOWAIT) != 0 &&
                       errno == EINTR) {
                }
                std::lock_guard lock(mutex_);
                ended_[index] = end;
                changed_.notify_all();
            });
        }
    }
    /// Waits for every waiter (each rank has ended, or was killed).
    ~RankEnds() {
        for (std::thread& waiter : waiters_) {
            waiter.join();
        }
    }
    RankEnds(const RankEnds&) = delete;
    RankEnds& operator=(const RankEnds&) = delete;

    /// The index of a rank that has ended and that `seen` does not hold yet, waiting until
    /// `deadline` for one; none at the deadline, or when `seen` holds every rank.
    std::optional<std::size_t> next(const std::vector<bool>& seen,
                                    std::chrono::steady_clock::time_point deadline) {
        std::unique_lock lock(mutex_);
        std::optional<std::size_t> found;
        changed_.wait_until(lock, deadline, [&] {
            for (std::size_t index = 0; index < ended_.size(); ++index) {
                if (ended_[index] && !seen[index]) {
                    found = index;
                    return true;
                }
            }
            return std::find(seen.begin(), seen.end(), false) == seen.end();
        });
        return found;
    }
    /// How rank `index` ended; once `next` gave it.
    siginfo_t end(std::size_t index) {
        std::lock_guard lock(mutex_);
        return *ended_[index];
    }

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<std::optional<siginfo_t>> ended_;
    std::vector<std::thread> waiters_;
};

/// How `run` ended, in words: "exited with code 1", "was killed by signal 9", and why the
/// launcher killed it when it did (a rank it meant to stop may have ended on its own first).
inline std::string how_it_ended(const RankRun& run) {
    if (run.end.si_code == CLD_EXITED) {
        return "exited with code " + std::to_string(run.end.si_status);
    }
    const bool stopped = !run.stopped.empty() && run.end.si_status == SIGKILL;
    return "was killed by signal " + std::to_string(run.end.si_status) +
           (stopped ? " (by the launcher: " + run.stopped + ")" : "");
}

/// Whether `run` did its part of test `test`: it ran the test and passed, or it ended itself on
/// purpose having passed so far (`end_this_rank_by_sigkill`).
inline bool passed(const RankRun& run, const std::string& test) {
    if (run.end.si_code == CLD_EXITED) {
        return run.end.si_status == 0 &&
               run.output.find("[       OK ] " + test) != std::string::npos;
    }
    return run.end.si_code == CLD_KILLED && run.end.si_status == SIGKILL &&
           run.output.find(ended_on_purpose_line) != std::string::npos;
}

/// Expects nothing of the ranks to be left in /dev/shm: no segment of theirs (a segment's name
/// starts with its process's pid, "tandem-PID-"), and no job folder.
inline void expect_nothing_left(const std::vector<RankRun>& runs, const std::string& folder) {
    EXPECT_FALSE(std::filesystem::exists(folder)) << "the job folder is left: " << folder;
    for (const std::filesystem::directory_entry& entry :
         std::filesystem::directory_iterator("/dev/shm")) {
        const std::string name = entry.path().filename().string();
        for (const RankRun& run : runs) {
            EXPECT_NE(name.rfind("tandem-" + std::to_string(run.pid) + "-", 0), 0u)
                << "rank " << run.rank << " left a segment: " << entry.path();
        }
    }
}

/// What the file at `path` holds.
inline std::string text_of(const std::string& path) {
    std::ifstream file(path);
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
}

/// Where rank `rank` writes its output: in the job folder, which goes with the job.
inline std::string output_path(const std::string& folder, std::uint32_t rank) {
    return folder + "/output-" + std::to_string(rank);
}

/// Kills every rank `seen` does not hold, noting `why` on each.
inline void stop_the_others(std::vector<RankRun>& runs, const std::vector<bool>& seen,
                            const std::string& why) {
    for (std::size_t index = 0; index < runs.size(); ++index) {
        if (!seen[index] && runs[index].stopped.empty()) {
            runs[index].stopped = why;
            ::kill(runs[index].pid, SIGKILL);
        }
    }
}

/// Waits for every rank to end, reading what each wrote as it ends. A rank that ends without
/// passing has the others killed at once rather than left waiting for it up to their own bounds,
/// and so has the guard's bound. Reaps every rank once all have ended.
inline void await_ranks(std::vector<RankRun>& runs, const std::string& test,
                        const std::string& folder) {
    {
        RankEnds ends(runs);
        std::vector<bool> seen(runs.size(), false);
        auto deadline = std::chrono::steady_clock::now() + rank_processes_guard;
        while (std::find(seen.begin(), seen.end(), false) != seen.end()) {
            const std::optional<std::size_t> index = ends.next(seen, deadline);
            if (!index) {
                stop_the_others(runs, seen,
                                "it was still running after " +
                                    std::to_string(rank_processes_guard.count()) + " minutes");
                deadline = std::chrono::steady_clock::now() + rank_processes_guard;
                continue;
            }
            RankRun& run = runs[*index];
            seen[*index] = true;
            run.end = ends.end(*index);
            run.output = text_of(output_path(folder, run.rank));
            if (!passed(run, test)) {
                stop_the_others(runs, seen, "rank " + std::to_string(run.rank) + " failed first");
            }
        }
    }
    for (const RankRun& run : runs) {
        ::waitpid(run.pid, nullptr, 0);
    }
}

}  // namespace rank_processes_detail

/// Runs the running test again as the `world_size` ranks of a fresh job, each a process of this
/// program started with the rank's variables and `variables` (the runtime's: TANDEM_BACKEND and
/// its fellows), and expects every rank to pass: a rank that fails, hangs or dies other than on
/// purpose fails this test, naming the rank, how it ended and what it wrote. Expects the ranks
/// to leave nothing behind in /dev/shm. Returns once every rank has ended and is reaped.
inline void run_this_test_as_ranks(std::uint32_t world_size,
                                   const std::vector<std::string>& variables) {
    namespace detail = rank_processes_detail;
    const std::string test = this_test_name();
    const std::string id = new_job_id();
    Result<JobFolderLock> folder = JobFolderLock::create(job_folder_path(id));
    ASSERT_TRUE(folder) << folder.error().report();
    std::vector<RankRun> runs(world_size);
    for (std::uint32_t rank = 0; rank < world_size; ++rank) {
        runs[rank].rank = rank;
        runs[rank].pid = detail::start(test, tandem::testing::rank_of(id, rank, world_size),
                                       variables, detail::output_path(folder->path(), rank));
    }
    std::erase_if(runs, [](const RankRun& run) { return run.pid < 0; });  // Failed already.
    detail::await_ranks(runs, test, folder->path());
    for (const RankRun& run : runs) {
        EXPECT_TRUE(detail::passed(run, test))
            << "rank " << run.rank << " (pid " << run.pid << ") of " << test << " "
            << detail::how_it_ended(run) << "; what it wrote:\n"
            << run.output;
    }
    const std::string path = folder->path();
    folder->release_and_remove();
    detail::expect_nothing_left(runs, path);
}

}  // namespace tandem::conformance
