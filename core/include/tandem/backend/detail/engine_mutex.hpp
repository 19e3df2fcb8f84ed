#pragma once

// The lock of a backend's engine: recursive, as `std::recursive_mutex`, and counting how deeply
// its holder holds it, so that a wait at the top of a call (a read, a sync, a wait for an event)
// can let go of it entirely while it blocks on the GPU, and other threads enqueue meanwhile. A
// call nested inside another (a launch that must first learn what its producers did) holds it
// more than once and waits holding it, as the call around it expects.
//
// It also lets a launch hand its driver call out of the lock. The lock guards the bookkeeping
// (the pipeline, claims, streams, events); the call that puts a kernel on a stream is most of a
// launch's time and needs none of it. A launch records itself under the lock, opens an *issue*
// (`begin_issue`), lets go of the lock, makes the call, and closes the issue (`end_issue`).
// Taking the lock (`lock`) waits until every open issue is closed, so whoever holds it sees every
// recorded work on its stream, with what its call returned; only the launch's own entry takes it
// without waiting (`lock_to_issue`). Issues on one stream keep their order by a lock of the
// stream's own, which the launch takes before it lets go of this one.

#include <atomic>
#include <cstdint>
#include <mutex>

namespace tandem::detail {

class EngineMutex {
public:
    /// Takes the lock and waits until no issue is open.
    void lock() {
        lock_to_issue();
        if (depth_ == 1) {
            wait_for_issues();
        }
    }
    /// Takes the lock without waiting for open issues: for a launch, which records itself and
    /// opens an issue of its own, and waits for the others only where it must (`wait_for_issues`).
    void lock_to_issue() {
        if (!mutex_.try_lock()) {
            lock_contended();
        }
        ++depth_;  // Only the holder reads or writes the count.
    }
    void unlock() {
        --depth_;
        mutex_.unlock();
    }
    /// How many times the calling thread holds the lock; only for a thread that holds it.
    [[nodiscard]] int depth() const { return depth_; }

    /// Opens an issue; the caller holds the lock, and closes the issue (`end_issue`) without it.
    void begin_issue() { issues_.fetch_add(1, std::memory_order_relaxed); }
    /// Closes an issue: what its thread wrote meanwhile is seen by whoever waits for issues next.
    void end_issue() {
        if (issues_.fetch_sub(1, std::memory_order_release) == 1) {
            issues_.notify_all();
        }
    }
    /// Waits, holding the lock, until no issue is open; none opens while the lock is held.
    void wait_for_issues() {
        for (int open = issues_.load(std::memory_order_acquire); open != 0;
             open = issues_.load(std::memory_order_acquire)) {
            issues_.wait(open, std::memory_order_acquire);
        }
    }

    /// Lets go of the lock for its life, taking it again when it ends; for a holder that holds it
    /// once (`depth() == 1`). What the holder read under the lock may change meanwhile.
    class Released {
    public:
        explicit Released(EngineMutex& mutex) : mutex_(mutex) { mutex_.unlock(); }
        ~Released() { mutex_.lock(); }
        Released(const Released&) = delete;
        Released& operator=(const Released&) = delete;

    private:
        EngineMutex& mutex_;
    };

private:
    /// Spins a few microseconds before it sleeps: the lock is mostly held for a launch's
    /// bookkeeping (under a microsecond), and a thread put to sleep behind it takes several
    /// microseconds to wake, longer than the wait; threads launching at once would otherwise
    /// queue behind each other's wake-ups. A holder that holds it long (a wait nested in a call)
    /// costs a waiter the spin, then nothing.
    void lock_contended() {
        constexpr int tries = 32;
        constexpr int pauses_per_try = 8;
        for (int attempt = 0; attempt < tries; ++attempt) {
            for (int pause = 0; pause < pauses_per_try; ++pause) {
#if defined(__x86_64__) || defined(__i386__)
                __builtin_ia32_pause();
#endif
            }
            if (mutex_.try_lock()) {
                return;
            }
        }
        mutex_.lock();
    }

    std::recursive_mutex mutex_;
    int depth_ = 0;
    /// Issues opened and not yet closed. On a cache line of its own: launches close their issues
    /// without the lock, and must not take from the holder the line of what it guards.
    alignas(64) std::atomic<int> issues_{0};
};

}  // namespace tandem::detail
