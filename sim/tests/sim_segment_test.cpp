// Segments across process death: removed on SIGTERM and SIGINT, left by SIGKILL and then
// removed by `tandem clean`'s logic, which never touches a live process's segments.

#include "sim_test_support.hpp"

#include "tandem/sim/segment.hpp"

#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

namespace tandem::sim {
namespace {

using namespace testing;

bool exists(const std::string& name) {
    struct stat status{};
    return ::stat(("/dev/shm/" + name).c_str(), &status) == 0;
}

/// Starts a child that creates a two-device runtime, reports its segment names and waits to be
/// killed. Returns the child's pid and the names.
std::pair<pid_t, std::vector<std::string>> spawn_runtime_child() {
    int pipe_ends[2];
    EXPECT_EQ(::pipe(pipe_ends), 0);
    const pid_t child = ::fork();
    if (child == 0) {
        ::close(pipe_ends[0]);
        auto runtime = SimRuntime::create(SimOptions{.capacity_bytes = 8 << 20});
        std::string names;
        for (const std::string& name : (*runtime)->segment_names()) {
            names += name + "\n";
        }
        (void)!::write(pipe_ends[1], names.data(), names.size());
        ::close(pipe_ends[1]);
        while (true) {
            ::pause();
        }
    }
    ::close(pipe_ends[1]);
    std::string text;
    char buffer[256];
    ssize_t count = 0;
    while ((count = ::read(pipe_ends[0], buffer, sizeof buffer)) > 0) {
        text.append(buffer, static_cast<std::size_t>(count));
    }
    ::close(pipe_ends[0]);
    std::vector<std::string> names;
    std::size_t start = 0;
    for (std::size_t end = text.find('\n'); end != std::string::npos; end = text.find('\n', start)) {
        names.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    return {child, names};
}

void expect_death_removes_segments(int signal_number) {
    auto [child, names] = spawn_runtime_child();
    ASSERT_EQ(names.size(), 2u);
    for (const std::string& name : names) {
        EXPECT_TRUE(exists(name)) << name;
    }
    ::kill(child, signal_number);
    int status = 0;
    ::waitpid(child, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status));
    for (const std::string& name : names) {
        EXPECT_FALSE(exists(name)) << name << " survived signal " << signal_number;
    }
}

TEST(SimSegments, sigterm_removes_the_segments_of_the_run) { expect_death_removes_segments(SIGTERM); }

TEST(SimSegments, sigint_removes_the_segments_of_the_run) { expect_death_removes_segments(SIGINT); }

TEST(SimSegments, clean_removes_segments_of_a_killed_run_and_nothing_else) {
    auto live = make_runtime();
    auto [child, names] = spawn_runtime_child();
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    for (const std::string& name : names) {
        EXPECT_TRUE(exists(name)) << "SIGKILL leaves segments behind";
    }
    const std::vector<std::string> removed = clean_stale_segments();
    for (const std::string& name : names) {
        EXPECT_FALSE(exists(name)) << name;
        EXPECT_NE(std::find(removed.begin(), removed.end(), name), removed.end());
    }
    for (const std::string& name : live->segment_names()) {
        EXPECT_TRUE(exists(name)) << "clean removed a live run's segment " << name;
    }
}

TEST(SimSegments, a_new_run_never_opens_an_existing_segment) {
    auto runtime = make_runtime();
    const std::string taken = runtime->segment_names().front();
    auto again = Segment::create(taken, 1 << 20);
    ASSERT_FALSE(again);
    EXPECT_EQ(again.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_TRUE(exists(taken));
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
