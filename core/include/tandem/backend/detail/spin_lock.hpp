#pragma once

// A lock for critical sections of a few dozen instructions that one thread nearly always takes
// alone: the memory manager's, which every allocation and sweep takes. Taking it is one atomic
// exchange and releasing it a plain store, where a `std::mutex` pays an atomic operation and a
// library call each way (a sixth of an allocate+free pair on the GPU hosts). A waiter spins
// briefly, then yields its core, so that a holder that runs long (the pool reserving device
// memory) costs the waiter time slices, not a busy core.

#include <atomic>
#include <thread>

namespace tandem::detail {

class SpinLock {
public:
    void lock() {
        while (locked_.exchange(true, std::memory_order_acquire)) {
            wait_until_free();
        }
    }
    [[nodiscard]] bool try_lock() { return !locked_.exchange(true, std::memory_order_acquire); }
    void unlock() { locked_.store(false, std::memory_order_release); }

private:
    void wait_until_free() const {
        constexpr int spins_before_yield = 64;
        for (int spin = 0; locked_.load(std::memory_order_relaxed); ++spin) {
            if (spin >= spins_before_yield) {
                std::this_thread::yield();
            }
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        }
    }

    std::atomic<bool> locked_{false};
};

}  // namespace tandem::detail
