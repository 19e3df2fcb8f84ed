#include "tandem/backend/detail/spin_lock.hpp"

#include <gtest/gtest.h>

#include <mutex>
#include <thread>
#include <vector>

namespace tandem::detail {
namespace {

TEST(SpinLock, excludes_other_threads) {
    SpinLock lock;
    std::uint64_t counter = 0;  // Plain: only the lock orders the increments.
    constexpr int threads = 4;
    constexpr int increments = 100000;
    std::vector<std::thread> workers;
    for (int thread = 0; thread < threads; ++thread) {
        workers.emplace_back([&] {
            for (int increment = 0; increment < increments; ++increment) {
                std::lock_guard guard(lock);
                ++counter;
            }
        });
    }
    for (std::thread& worker : workers) {
        worker.join();
    }
    EXPECT_EQ(counter, std::uint64_t{threads} * increments);
}

TEST(SpinLock, try_lock_fails_while_held) {
    SpinLock lock;
    ASSERT_TRUE(lock.try_lock());
    EXPECT_FALSE(lock.try_lock());
    lock.unlock();
    EXPECT_TRUE(lock.try_lock());
    lock.unlock();
}

}  // namespace
}  // namespace tandem::detail
