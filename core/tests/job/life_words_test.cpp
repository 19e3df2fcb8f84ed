// Life words: a rank whose process ends is named to its peers by the system marking its word,
// even while a process it forked keeps its descriptors; a rank that clears its word (it left) is
// named by no one. The dying rank is a forked child of the test; a guard timeout only bounds a
// failing test, nothing waits for time to pass.

#include "life_words.hpp"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <vector>

namespace tandem::job_detail {
namespace {

namespace fs = std::filesystem;

constexpr auto guard_timeout = std::chrono::seconds(30);

/// A folder of its own under /dev/shm, removed with everything in it.
struct Folder {
    std::string path = "/dev/shm/tandem-life-test-" + std::to_string(::getpid()) + "-" +
                       std::to_string(std::rand());
    Folder() { fs::create_directory(path); }
    ~Folder() { fs::remove_all(path); }
};

/// The ranks a watch named, in order.
struct Endings {
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<std::uint32_t> ranks;

    std::function<void(std::uint32_t)> callback() {
        return [this](std::uint32_t rank) {
            std::lock_guard lock(mutex);
            ranks.push_back(rank);
            changed.notify_all();
        };
    }
    std::vector<std::uint32_t> wait_for(std::size_t count) {
        std::unique_lock lock(mutex);
        changed.wait_for(lock, guard_timeout, [&] { return ranks.size() >= count; });
        return ranks;
    }
};

/// Forks rank 1 of a job of 2, once rank 0's word exists: it creates its word and starts its
/// watch, forks a process that holds its descriptors when `fork_one`, writes that pid and 'w'
/// (or 'x' when a step failed) to `ready`, and waits to be killed. Returns its pid.
std::pair<pid_t, pid_t> start_rank_1(const std::string& folder, bool fork_one, int ready) {
    const pid_t child = ::fork();
    if (child != 0) {
        return {child, 0};
    }
    auto words = LifeWords::create(folder, 1);
    const char ok =
        words && (*words)->watch(2, [](std::uint32_t) {}) && (*words)->watching() ? 'w' : 'x';
    pid_t held = 0;
    if (fork_one && (held = ::fork()) == 0) {
        ::pause();  // Holds every descriptor of rank 1, as a data loader's worker would.
        ::_exit(0);
    }
    (void)!::write(ready, &held, sizeof held);
    (void)!::write(ready, &ok, 1);
    ::pause();
    ::_exit(0);
}

void a_killed_rank_is_named(bool fork_one) {
    Folder folder;
    int pipe_ends[2];
    ASSERT_EQ(::pipe(pipe_ends), 0);
    auto words = LifeWords::create(folder.path, 0);  // Before rank 1, which watches it.
    ASSERT_TRUE(words.ok()) << words.error().report();
    auto [child, held] = start_rank_1(folder.path, fork_one, pipe_ends[1]);
    char state = 0;
    ASSERT_EQ(::read(pipe_ends[0], &held, sizeof held), static_cast<ssize_t>(sizeof held));
    ASSERT_EQ(::read(pipe_ends[0], &state, 1), 1);
    ASSERT_EQ(state, 'w') << "rank 1 could not watch";
    Endings endings;
    ASSERT_TRUE((*words)->watch(2, endings.callback()));
    ASSERT_TRUE((*words)->watching());
    ASSERT_EQ(::kill(child, SIGKILL), 0);
    EXPECT_EQ(endings.wait_for(1), std::vector<std::uint32_t>{1});
    ::waitpid(child, nullptr, 0);
    if (held > 0) {
        ::kill(held, SIGKILL);
        ::waitpid(held, nullptr, 0);
    }
    ::close(pipe_ends[0]);
    ::close(pipe_ends[1]);
}

TEST(LifeWords, a_rank_killed_is_named_by_the_system_marking_its_word) {
    a_killed_rank_is_named(false);
}

TEST(LifeWords, a_rank_killed_is_named_while_a_process_it_forked_holds_its_descriptors) {
    a_killed_rank_is_named(true);
}

TEST(LifeWords, a_rank_that_clears_its_word_is_named_by_no_one) {
    Folder folder;
    auto first = LifeWords::create(folder.path, 0);
    auto second = LifeWords::create(folder.path, 1);
    ASSERT_TRUE(first.ok() && second.ok());
    Endings endings;
    ASSERT_TRUE((*first)->watch(2, endings.callback()));
    ASSERT_TRUE((*second)->watch(2, [](std::uint32_t) {}));
    second->reset();  // Clears its word, stops its keeper and removes its file.
    EXPECT_FALSE(fs::exists(folder.path + "/life-1"));
    first->reset();
    EXPECT_TRUE(endings.ranks.empty());
    EXPECT_FALSE(fs::exists(folder.path + "/life-0"));
}

TEST(LifeWords, a_word_in_a_folder_that_is_not_there_is_refused_naming_it) {
    auto words = LifeWords::create("/dev/shm/tandem-life-test-no-such-folder", 3);
    ASSERT_FALSE(words.ok());
    EXPECT_EQ(words.error().kind(), ErrorKind::PeerUnreachable);
    EXPECT_NE(words.error().message().find("tandem-life-test-no-such-folder/life-3"),
              std::string::npos)
        << words.error().message();
}

TEST(LifeWords, a_rank_without_a_word_is_not_watched_and_the_others_are) {
    Folder folder;
    auto words = LifeWords::create(folder.path, 0);
    auto two = LifeWords::create(folder.path, 2);
    ASSERT_TRUE(words.ok() && two.ok());
    Endings endings;
    ASSERT_TRUE((*words)->watch(3, endings.callback()));  // Rank 1 keeps no word.
    EXPECT_TRUE((*words)->watching());
    two->reset();
    words->reset();
    EXPECT_TRUE(endings.ranks.empty());
}

TEST(LifeWords, a_word_that_cannot_be_opened_is_refused_naming_it_and_nothing_is_watched) {
    Folder folder;
    auto words = LifeWords::create(folder.path, 0);
    ASSERT_TRUE(words.ok());
    fs::create_directory(folder.path + "/life-1");  // A folder where rank 1's word should be.
    const Status watched = (*words)->watch(2, [](std::uint32_t) {});
    ASSERT_FALSE(watched);
    EXPECT_EQ(watched.error().kind(), ErrorKind::PeerUnreachable);
    EXPECT_NE(watched.error().message().find("life-1"), std::string::npos);
    EXPECT_FALSE((*words)->watching());
}

}  // namespace
}  // namespace tandem::job_detail
