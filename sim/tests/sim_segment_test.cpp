// Segments and the end of a process: however a program that made a simulator runtime ends (a
// return, std::exit, abort, an uncaught exception, SIGPIPE, SIGTERM, SIGINT, SIGKILL), /dev/shm
// holds none of its segments afterwards, because each is unlinked as soon as it is mapped.
// `tandem clean`'s logic still removes names that older versions left, and never a live
// process's.
//
// The program that ends is sim_segment_ending (segment_ending.cpp), run as its own process so
// that it ends exactly as a user's program would. Its segments are looked for by its pid, which
// every segment name carries: tests that run beside this one make segments of their own.

#include "sim_test_support.hpp"

#include "tandem/sim/segment.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <csignal>
#include <filesystem>

namespace tandem::sim {
namespace {

using namespace testing;

bool exists(const std::string& name) {
    struct stat status{};
    return ::stat(("/dev/shm/" + name).c_str(), &status) == 0;
}

/// The names in /dev/shm of segments that process `pid` made.
std::vector<std::string> segments_of(pid_t pid) {
    const std::string prefix = "tandem-" + std::to_string(pid) + "-";
    std::vector<std::string> found;
    if (DIR* directory = ::opendir("/dev/shm")) {
        while (const dirent* entry = ::readdir(directory)) {
            if (std::string(entry->d_name).starts_with(prefix)) {
                found.emplace_back(entry->d_name);
            }
        }
        ::closedir(directory);
    }
    return found;
}

/// How a run of the ending program went: its pid, its wait status, and the segment names it
/// printed before it ended.
struct Ending {
    pid_t pid = -1;
    int status = 0;
    std::vector<std::string> names;
};

/// sim_segment_ending, built next to this test.
std::string ending_program() {
    std::error_code error;
    return (std::filesystem::read_symlink("/proc/self/exe", error).parent_path() /
            "sim_segment_ending")
        .string();
}

Ending run_ending_program(const char* how) {
    const std::string program = ending_program();
    int pipe_ends[2];
    EXPECT_EQ(::pipe(pipe_ends), 0);
    const pid_t child = ::fork();
    if (child == 0) {
        ::dup2(pipe_ends[1], STDOUT_FILENO);
        ::close(pipe_ends[0]);
        ::close(pipe_ends[1]);
        ::execl(program.c_str(), program.c_str(), how, nullptr);
        ::_exit(127);
    }
    ::close(pipe_ends[1]);
    std::string text;
    char buffer[256];
    ssize_t count = 0;
    while ((count = ::read(pipe_ends[0], buffer, sizeof buffer)) > 0) {
        text.append(buffer, static_cast<std::size_t>(count));
    }
    ::close(pipe_ends[0]);
    Ending ending{child, 0, {}};
    ::waitpid(child, &ending.status, 0);
    std::size_t start = 0;
    for (std::size_t end = text.find('\n'); end != std::string::npos; end = text.find('\n', start)) {
        ending.names.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    return ending;
}

/// Runs the program ending `how`, checks that it ended so, and that it left no segment.
void expect_no_segment_left(const char* how, bool by_signal, int code_or_signal) {
    const Ending ending = run_ending_program(how);
    if (by_signal) {
        ASSERT_TRUE(WIFSIGNALED(ending.status)) << how << ": status " << ending.status;
        EXPECT_EQ(WTERMSIG(ending.status), code_or_signal) << how;
    } else {
        ASSERT_TRUE(WIFEXITED(ending.status)) << how << ": status " << ending.status;
        EXPECT_EQ(WEXITSTATUS(ending.status), code_or_signal) << how;
    }
    // It made its runtime and touched its memory before it ended.
    ASSERT_EQ(ending.names.size(), 2u) << how;
    for (const std::string& name : ending.names) {
        EXPECT_TRUE(name.starts_with("tandem-" + std::to_string(ending.pid) + "-")) << name;
        EXPECT_FALSE(exists(name)) << how << " left " << name;
    }
    EXPECT_EQ(segments_of(ending.pid), std::vector<std::string>{}) << how;
}

TEST(SimSegmentEnding, a_return_from_main_leaves_no_segment) {
    expect_no_segment_left("return", false, 0);
}

TEST(SimSegmentEnding, std_exit_leaves_no_segment) { expect_no_segment_left("exit", false, 1); }

TEST(SimSegmentEnding, abort_leaves_no_segment) { expect_no_segment_left("abort", true, SIGABRT); }

TEST(SimSegmentEnding, an_uncaught_exception_leaves_no_segment) {
    expect_no_segment_left("throw", true, SIGABRT);
}

TEST(SimSegmentEnding, sigpipe_leaves_no_segment) {
    expect_no_segment_left("sigpipe", true, SIGPIPE);
}

TEST(SimSegmentEnding, sigterm_leaves_no_segment) {
    expect_no_segment_left("sigterm", true, SIGTERM);
}

TEST(SimSegmentEnding, sigint_leaves_no_segment) { expect_no_segment_left("sigint", true, SIGINT); }

TEST(SimSegmentEnding, sigkill_leaves_no_segment) {
    expect_no_segment_left("sigkill", true, SIGKILL);
}

/// Puts a file in /dev/shm as an older version's segment of process `pid` would be named.
std::string plant_segment(pid_t pid, std::uint32_t device) {
    char name[96];
    std::snprintf(name, sizeof name, "tandem-%d-00000000deadbeef-d%u", static_cast<int>(pid),
                  device);
    const int descriptor = ::shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    EXPECT_GE(descriptor, 0) << name;
    ::close(descriptor);
    return name;
}

TEST(SimSegments, clean_removes_segments_of_a_gone_process_and_nothing_else) {
    const pid_t gone = ::fork();
    if (gone == 0) {
        ::_exit(0);
    }
    ::waitpid(gone, nullptr, 0);
    const std::vector<std::string> stale{plant_segment(gone, 0), plant_segment(gone, 1)};
    const std::string live = plant_segment(::getpid(), 0);
    const std::vector<std::string> removed = clean_stale_segments();
    for (const std::string& name : stale) {
        EXPECT_FALSE(exists(name)) << name;
        EXPECT_NE(std::find(removed.begin(), removed.end(), name), removed.end()) << name;
    }
    EXPECT_TRUE(exists(live)) << "clean removed a live process's segment " << live;
    EXPECT_EQ(std::find(removed.begin(), removed.end(), live), removed.end());
    ::shm_unlink(("/" + live).c_str());
}

TEST(SimSegments, a_new_segment_never_opens_one_already_in_dev_shm) {
    const std::string taken = plant_segment(::getpid(), 7);
    auto again = Segment::create(taken, 1 << 20);
    ASSERT_FALSE(again);
    EXPECT_EQ(again.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(again.error().report().find("cannot create segment " + taken),
              std::string::npos)
        << again.error().report();
    EXPECT_TRUE(exists(taken)) << "a refused segment removed the one that was there";
    ::shm_unlink(("/" + taken).c_str());
}

TEST(SimSegments, runtimes_get_distinct_random_ids) {
    auto first = make_runtime();
    auto second = make_runtime();
    EXPECT_NE(first->runtime_id(), second->runtime_id());
    EXPECT_NE(first->segment_names(), second->segment_names());
}

TEST(SimRuntime, device_counts_outside_one_to_sixty_four_are_invalid) {
    EXPECT_EQ(SimRuntime::create(SimOptions{.devices = 0}).error().kind(), ErrorKind::InvalidArgument);
    EXPECT_EQ(SimRuntime::create(SimOptions{.devices = 65}).error().kind(), ErrorKind::InvalidArgument);
    auto eight = SimRuntime::create(SimOptions{.devices = 8, .capacity_bytes = 8 << 20});
    ASSERT_TRUE(eight) << eight.error().report();
    EXPECT_EQ((*eight)->device_count(), 8u);
}

}  // namespace
}  // namespace tandem::sim
