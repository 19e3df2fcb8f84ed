#include "fiber.hpp"

#include <boost/context/detail/fcontext.hpp>

#include <cassert>
#include <cstdint>

// GCC says __SANITIZE_ADDRESS__; clang says __has_feature(address_sanitizer).
#if defined(__SANITIZE_ADDRESS__)
#define TANDEM_ASAN_FIBERS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TANDEM_ASAN_FIBERS 1
#endif
#endif
#if TANDEM_ASAN_FIBERS
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

// fcontext is the layer under Boost.Context's public fiber and continuation types, and the one
// that leaves every switch to the caller: AddressSanitizer is told of each stack change here,
// around the jump, as the public types do only in their ucontext variant.
namespace context = boost::context::detail;

namespace tandem::sim {
namespace {

thread_local Fiber* running = nullptr;

/// Stacks kept for reuse; past this bound they are freed.
constexpr std::size_t max_pooled_stacks = 64;
/// Finished fibers kept for reuse, each with its stack; past this bound they are freed.
constexpr std::size_t max_pooled_fibers = 64;

/// What a thread keeps for reuse: stacks, and finished fibers with theirs. One object, so that
/// its end is ordered: the fibers go first, while the stacks they would give back are closed.
struct Pools {
    std::vector<std::unique_ptr<std::byte[]>> stacks;
    std::vector<std::unique_ptr<Fiber>> fibers;
    bool closing = false;
    Pools() = default;
    Pools(const Pools&) = delete;
    Pools& operator=(const Pools&) = delete;
    ~Pools() {
        closing = true;
        fibers.clear();
    }
};
Pools& pools() {
    thread_local Pools kept;
    return kept;
}

}  // namespace

struct Fiber::Entry {
    /// Runs on the fiber's own stack, entered by the first resume; never returns (there is no
    /// frame to return to): it jumps back to the scheduler for good once the body is done.
    static void start(context::transfer_t transfer) {
        auto* self = static_cast<Fiber*>(transfer.data);
        self->caller_ = transfer.fctx;
#if TANDEM_ASAN_FIBERS
        __sanitizer_finish_switch_fiber(nullptr, &self->caller_stack_bottom_,
                                        &self->caller_stack_size_);
#endif
        self->body_();
        self->finished_ = true;
        running = nullptr;
#if TANDEM_ASAN_FIBERS
        // A null save slot: this stack is left for good, its fake frames can go.
        __sanitizer_start_switch_fiber(nullptr, self->caller_stack_bottom_,
                                       self->caller_stack_size_);
#endif
        context::jump_fcontext(self->caller_, nullptr);
        assert(false && "a finished fiber is never resumed");
    }
};

Fiber::Fiber(std::function<void()> body) : body_(std::move(body)) {
    auto& pool = pools().stacks;
    if (!pool.empty()) {
        stack_ = std::move(pool.back());
        pool.pop_back();
    } else {
        stack_ = std::make_unique<std::byte[]>(stack_bytes);
    }
    // The stack grows down from its top; make_fcontext aligns it and reserves the first frame.
    context_ = context::make_fcontext(stack_.get() + stack_bytes, stack_bytes, &Entry::start);
}

std::unique_ptr<Fiber> Fiber::make(std::function<void()> body) {
    auto& pool = pools().fibers;
    if (pool.empty()) {
        return std::make_unique<Fiber>(std::move(body));
    }
    std::unique_ptr<Fiber> fiber = std::move(pool.back());
    pool.pop_back();
    fiber->restart(std::move(body));
    return fiber;
}

void Fiber::recycle(std::unique_ptr<Fiber> fiber) {
    Pools& kept = pools();
    if (fiber && fiber->finished_ && !kept.closing && kept.fibers.size() < max_pooled_fibers) {
        kept.fibers.push_back(std::move(fiber));
    }
}

void Fiber::restart(std::function<void()> body) {
    assert(finished_ && running != this && "only a finished fiber starts again");
#if TANDEM_ASAN_FIBERS
    ASAN_UNPOISON_MEMORY_REGION(stack_.get(), stack_bytes);
#endif
    body_ = std::move(body);
    finished_ = false;
    caller_ = nullptr;
    caller_stack_bottom_ = nullptr;
    caller_stack_size_ = 0;
    caller_fake_stack_ = nullptr;
    fiber_fake_stack_ = nullptr;
    context_ = context::make_fcontext(stack_.get() + stack_bytes, stack_bytes, &Entry::start);
}

Fiber::~Fiber() {
#if TANDEM_ASAN_FIBERS
    // A fiber destroyed before it finished leaves its frames' redzones poisoned; the next fiber
    // on this stack must not trip over them.
    ASAN_UNPOISON_MEMORY_REGION(stack_.get(), stack_bytes);
#endif
    Pools& kept = pools();
    if (!kept.closing && kept.stacks.size() < max_pooled_stacks) {
        kept.stacks.push_back(std::move(stack_));
    }
}

Fiber* Fiber::current() { return running; }

void Fiber::resume() {
    assert(!finished_ && running == nullptr && "resume from the scheduler, once per stop");
    running = this;
#if TANDEM_ASAN_FIBERS
    __sanitizer_start_switch_fiber(&caller_fake_stack_, stack_.get(), stack_bytes);
#endif
    // Returns when the fiber yields (with where it stopped) or finishes.
    const context::transfer_t back = context::jump_fcontext(context_, this);
#if TANDEM_ASAN_FIBERS
    __sanitizer_finish_switch_fiber(caller_fake_stack_, nullptr, nullptr);
#endif
    context_ = back.fctx;
    running = nullptr;
}

void Fiber::yield() {
    Fiber* self = running;
    assert(self != nullptr && "yield from inside a fiber");
    running = nullptr;
#if TANDEM_ASAN_FIBERS
    __sanitizer_start_switch_fiber(&self->fiber_fake_stack_, self->caller_stack_bottom_,
                                   self->caller_stack_size_);
#endif
    // Returns at the next resume, which may come from another frame of the scheduler.
    const context::transfer_t resumed = context::jump_fcontext(self->caller_, nullptr);
    self->caller_ = resumed.fctx;
#if TANDEM_ASAN_FIBERS
    __sanitizer_finish_switch_fiber(self->fiber_fake_stack_, &self->caller_stack_bottom_,
                                    &self->caller_stack_size_);
#endif
    running = self;
}

}  // namespace tandem::sim
