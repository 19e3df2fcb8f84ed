#pragma once

// The lock of a backend's engine: recursive, as `std::recursive_mutex`, and counting how deeply
// its holder holds it, so that a wait at the top of a call (a read, a sync, a wait for an event)
// can let go of it entirely while it blocks on the GPU, and other threads enqueue meanwhile. A
// call nested inside another (a launch that must first learn what its producers did) holds it
// more than once and waits holding it, as the call around it expects.

#include <mutex>

namespace tandem::detail {

class EngineMutex {
public:
    void lock() {
        mutex_.lock();
        ++depth_;  // Only the holder reads or writes the count.
    }
    [[nodiscard]] bool try_lock() {
        if (!mutex_.try_lock()) {
            return false;
        }
        ++depth_;
        return true;
    }
    void unlock() {
        --depth_;
        mutex_.unlock();
    }
    /// How many times the calling thread holds the lock; only for a thread that holds it.
    [[nodiscard]] int depth() const { return depth_; }

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
    std::recursive_mutex mutex_;
    int depth_ = 0;
};

}  // namespace tandem::detail
