#include "explore_jobs.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

namespace tandem::tool {
namespace {

/// One verdict on the wire: fixed size, written whole (far below PIPE_BUF, so never torn).
struct VerdictRecord {
    std::uint64_t index = 0;
    std::uint64_t faults_injected = 0;
    std::uint64_t passed = 0;
};

bool write_whole(int descriptor, const VerdictRecord& record) {
    const auto* bytes = reinterpret_cast<const char*>(&record);
    std::size_t done = 0;
    while (done < sizeof record) {
        const ssize_t wrote = ::write(descriptor, bytes + done, sizeof record - done);
        if (wrote < 0 && errno == EINTR) {
            continue;
        }
        if (wrote <= 0) {
            return false;  // The reader has gone (EPIPE): the run is over.
        }
        done += static_cast<std::size_t>(wrote);
    }
    return true;
}

bool read_whole(int descriptor, VerdictRecord& record) {
    auto* bytes = reinterpret_cast<char*>(&record);
    std::size_t done = 0;
    while (done < sizeof record) {
        const ssize_t got = ::read(descriptor, bytes + done, sizeof record - done);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            return false;  // The worker died before writing it.
        }
        done += static_cast<std::size_t>(got);
    }
    return true;
}

/// The body of worker `worker` of `jobs`, in its own process: programs worker, worker + jobs, ...
void run_worker(int verdicts, std::uint32_t worker, std::uint32_t jobs,
                std::optional<std::uint64_t> programs,
                const std::function<ProgramRunner()>& make_runner) {
    std::signal(SIGPIPE, SIG_IGN);  // A closed pipe ends the loop, not the process.
    const ProgramRunner runner = make_runner();
    for (std::uint64_t index = worker; !programs || index < *programs; index += jobs) {
        const ProgramVerdict verdict = runner(index);
        if (!write_whole(verdicts,
                         VerdictRecord{index, verdict.faults_injected, verdict.passed ? 1u : 0u})) {
            break;
        }
    }
    ::close(verdicts);
}

/// Peak resident memory of process `pid` (0: this one) in KiB: VmHWM, else ru_maxrss for this
/// process where /proc is missing.
std::uint64_t peak_resident_kib_of(pid_t pid) {
    std::ifstream status(pid == 0 ? std::string("/proc/self/status")
                                  : "/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("VmHWM:", 0) == 0) {
            return std::stoull(line.substr(6));
        }
    }
    if (pid != 0) {
        return 0;
    }
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<std::uint64_t>(usage.ru_maxrss);
}

}  // namespace

void add_jobs_option(CLI::App* command, std::string& jobs) {
    command->add_option("--jobs", jobs,
                        "Worker processes that run programs side by side (default: one per core; "
                        "1 runs them in this process); results are those of a serial run");
}

std::optional<std::uint32_t> parse_jobs(const std::string& text) {
    if (text.empty()) {
        const unsigned cores = std::thread::hardware_concurrency();
        return cores == 0 ? 1 : std::min<std::uint32_t>(cores, max_jobs);
    }
    std::uint64_t value = 0;
    bool digits = text.size() <= 9;
    for (const char character : text) {
        digits = digits && character >= '0' && character <= '9';
        value = digits ? value * 10 + static_cast<std::uint64_t>(character - '0') : 0;
    }
    if (!digits || value < 1 || value > max_jobs) {
        std::fprintf(stderr,
                     "tandem: --jobs takes a count of worker processes from 1 to %u, not '%s'\n",
                     max_jobs, text.c_str());
        return std::nullopt;
    }
    return static_cast<std::uint32_t>(value);
}

VerdictFeed::VerdictFeed(std::uint32_t jobs, std::optional<std::uint64_t> programs,
                         std::function<ProgramRunner()> make_runner)
    : programs_(programs) {
    if (programs && *programs < jobs) {
        jobs = static_cast<std::uint32_t>(std::max<std::uint64_t>(*programs, 1));
    }
    if (jobs <= 1) {
        in_process_ = make_runner();
        return;
    }
    start_workers(jobs, make_runner);
}

VerdictFeed::~VerdictFeed() { stop(); }

void VerdictFeed::start_workers(std::uint32_t jobs,
                                const std::function<ProgramRunner()>& make_runner) {
    // What is buffered would be written again by every child that flushes it.
    std::fflush(stdout);
    std::fflush(stderr);
    for (std::uint32_t worker = 0; worker < jobs; ++worker) {
        int ends[2];
        if (::pipe(ends) != 0) {
            failure_ = std::string("cannot make a pipe for explore worker ") +
                       std::to_string(worker) + ": " + std::strerror(errno);
            return;
        }
        (void)::fcntl(ends[1], F_SETPIPE_SZ, pipe_bytes);
        const pid_t pid = ::fork();
        if (pid == 0) {
            ::close(ends[0]);
            for (const Worker& earlier : workers_) {
                ::close(earlier.verdicts);
            }
            int status = 0;
            try {
                run_worker(ends[1], worker, jobs, programs_, make_runner);
            } catch (...) {
                status = 3;
            }
            // Not exit(): the explorer's own state is not this process's to tear down; only
            // what the worker itself printed is flushed.
            std::fflush(nullptr);
            ::_exit(status);
        }
        ::close(ends[1]);
        if (pid < 0) {
            ::close(ends[0]);
            failure_ = std::string("cannot start explore worker ") + std::to_string(worker) + ": " +
                       std::strerror(errno);
            return;
        }
        workers_.push_back(Worker{pid, ends[0]});
    }
}

std::optional<ProgramVerdict> VerdictFeed::next() {
    const std::uint64_t index = next_index_++;
    if (in_process_) {
        return in_process_(index);
    }
    if (!failure_.empty() || workers_.empty()) {
        return std::nullopt;
    }
    Worker& worker = workers_[index % workers_.size()];
    VerdictRecord record;
    if (!read_whole(worker.verdicts, record) || record.index != index) {
        failure_ = "explore worker " + std::to_string(index % workers_.size()) +
                   " ended before it reported program " + std::to_string(index) +
                   " of this run (the program of seed --seed + " + std::to_string(index) +
                   "): " + describe_death(worker);
        return std::nullopt;
    }
    return ProgramVerdict{record.passed != 0, record.faults_injected};
}

std::string VerdictFeed::describe_death(Worker& worker) {
    int status = 0;
    ::close(worker.verdicts);
    worker.verdicts = -1;
    if (::waitpid(worker.pid, &status, 0) != worker.pid) {
        return "its status is unknown";
    }
    worker.pid = -1;
    if (WIFSIGNALED(status)) {
        return std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
               strsignal(WTERMSIG(status)) + ")";
    }
    return "it exited with status " + std::to_string(WEXITSTATUS(status));
}

std::uint64_t VerdictFeed::peak_resident_kib() const {
    if (workers_.empty()) {
        return peak_resident_kib_of(0);
    }
    std::uint64_t largest = 0;
    for (const Worker& worker : workers_) {
        if (worker.pid > 0) {
            largest = std::max(largest, peak_resident_kib_of(worker.pid));
        }
    }
    return largest;
}

void VerdictFeed::stop() {
    for (Worker& worker : workers_) {
        if (worker.verdicts >= 0) {
            ::close(worker.verdicts);
            worker.verdicts = -1;
        }
    }
    for (Worker& worker : workers_) {
        if (worker.pid > 0) {
            int status = 0;
            while (::waitpid(worker.pid, &status, 0) < 0 && errno == EINTR) {
            }
            worker.pid = -1;
        }
    }
    workers_.clear();
    in_process_ = nullptr;
}

}  // namespace tandem::tool
