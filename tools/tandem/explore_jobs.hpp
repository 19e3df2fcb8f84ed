#pragma once

// `tandem explore --jobs J`: programs run in J worker processes, and their verdicts come back in
// program order, so that a parallel run finds what a serial one finds, in the same order, and
// reports it the same way (the report, and the shrinking, happen in the explorer's own process).
//
// Program i runs in worker i mod J. Each worker writes one fixed-size verdict per program to a
// pipe of its own, and the reader takes program i's verdict from worker i mod J's pipe: the order
// costs no sorting and no table. A worker runs at most a pipe's capacity of verdicts ahead of the
// reader (`pipe_bytes`); when the reader stops (a violation, the end of a soak) it closes the
// pipes and each worker ends at its next write. Workers are forked before the explorer makes any
// runtime, so that none inherits a segment, and each makes its own runner (and with it the
// segments it reuses) after the fork; they go with the worker's process, however it ends.
//
// With one job nothing is forked: the runner runs in the explorer's process, as before.

#include <CLI/CLI.hpp>

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tandem::tool {

/// What one program came to.
struct ProgramVerdict {
    bool passed = true;
    std::uint64_t faults_injected = 0;
};

/// Runs program `index` (counted from the run's first seed) and says what it came to.
using ProgramRunner = std::function<ProgramVerdict(std::uint64_t index)>;

/// Worker processes a run may ask for.
inline constexpr std::uint32_t max_jobs = 256;

/// Adds `--jobs` to `command`, kept as written for `parse_jobs`.
void add_jobs_option(CLI::App* command, std::string& jobs);
/// `--jobs` as written: 1 to `max_jobs`, or one per core when not given. Prints why not, naming
/// the option, and returns nothing when it is not a count in that range.
std::optional<std::uint32_t> parse_jobs(const std::string& text);

class VerdictFeed {
public:
    /// Bytes of each worker's pipe: how far (in verdicts of 24 bytes) a worker runs ahead.
    static constexpr int pipe_bytes = 4096;

    /// A feed of `programs` verdicts (none: until stopped, for a soak) from `jobs` workers, each
    /// of which calls `make_runner` once, in its own process, before its first program.
    VerdictFeed(std::uint32_t jobs, std::optional<std::uint64_t> programs,
                std::function<ProgramRunner()> make_runner);
    /// Stops the workers and waits for them.
    ~VerdictFeed();
    VerdictFeed(const VerdictFeed&) = delete;
    VerdictFeed& operator=(const VerdictFeed&) = delete;

    /// The verdict of the next program, in program order from index 0. Nothing when the worker
    /// running it died or could not start; `failure()` then says which and how.
    std::optional<ProgramVerdict> next();
    [[nodiscard]] const std::string& failure() const { return failure_; }
    /// Closes the pipes and waits for every worker to end. Idempotent.
    void stop();
    /// Peak resident memory in KiB of what runs the programs: this process with one job, the
    /// largest worker with more.
    [[nodiscard]] std::uint64_t peak_resident_kib() const;

private:
    struct Worker {
        pid_t pid = -1;
        int verdicts = -1;  // The read end of the worker's pipe.
    };
    void start_workers(std::uint32_t jobs, const std::function<ProgramRunner()>& make_runner);
    /// Reaps `worker`, which closed its pipe early, and says how it ended.
    static std::string describe_death(Worker& worker);

    std::optional<std::uint64_t> programs_;
    std::uint64_t next_index_ = 0;
    ProgramRunner in_process_;
    std::vector<Worker> workers_;
    std::string failure_;
};

}  // namespace tandem::tool
