#pragma once

// Cooperative tasks for the deterministic scheduler.
//
// A kernel launch runs on a fiber of its own so that it can stop at an atomic access or a wait
// and let the scheduler run other work, which is how a handoff between kernels on two devices
// completes under any seed. Fibers switch with Boost.Context's fcontext, a few instructions that
// save and restore the callee-saved registers: a stop costs two switches of a few nanoseconds
// each, where ucontext's swapcontext made a system call per switch to save the signal mask
// (the scheduler never changes it). Stacks come from a pool so that a launch does not map memory.

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

namespace tandem::sim {

class Fiber {
public:
    /// Stack per fiber. Catalog kernels need a few hundred bytes; scenarios' kernels as well.
    static constexpr std::size_t stack_bytes = 256 * 1024;

    explicit Fiber(std::function<void()> body);
    ~Fiber();
    /// A fiber that runs `body`: a finished one of this thread's, reused with its stack, or a
    /// new one. Once warm, a launch's fiber costs no allocation (C12).
    static std::unique_ptr<Fiber> make(std::function<void()> body);
    /// Keeps `fiber` for `make` when it finished, up to a bound; destroys it otherwise.
    static void recycle(std::unique_ptr<Fiber> fiber);
    Fiber(const Fiber&) = delete;
    Fiber& operator=(const Fiber&) = delete;

    /// Runs the fiber until it yields or finishes. Called from the scheduler.
    void resume();
    /// Stops the running fiber and returns to the scheduler. Called from inside the fiber.
    static void yield();
    /// The fiber running now, or null on the scheduler's own stack.
    static Fiber* current();

    [[nodiscard]] bool finished() const { return finished_; }

private:
    /// Makes the fiber run `body` from its start on its own stack; it must have finished.
    void restart(std::function<void()> body);
    /// The first frame on the fiber's stack (defined with the switch code, which names
    /// Boost.Context's types: this header does not, so its users need no Boost).
    struct Entry;
    std::function<void()> body_;
    /// Where the fiber resumes (an fcontext), and where it returns to: the scheduler's context
    /// at the latest resume.
    void* context_ = nullptr;
    void* caller_ = nullptr;
    std::unique_ptr<std::byte[]> stack_;
    bool finished_ = false;
    // AddressSanitizer's view of the two stacks (unused without it). The scheduler's and the
    // fiber's fake stacks (for stack-use-after-return) are saved in separate slots: a switch
    // saves the side it leaves and restores the side it enters.
    const void* caller_stack_bottom_ = nullptr;
    std::size_t caller_stack_size_ = 0;
    void* caller_fake_stack_ = nullptr;
    void* fiber_fake_stack_ = nullptr;
};

}  // namespace tandem::sim
