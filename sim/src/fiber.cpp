#include "fiber.hpp"

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

namespace tandem::sim {
namespace {

thread_local Fiber* running = nullptr;

std::vector<std::unique_ptr<std::byte[]>>& stack_pool() {
    thread_local std::vector<std::unique_ptr<std::byte[]>> pool;
    return pool;
}

/// Stacks kept for reuse; past this bound they are freed.
constexpr std::size_t max_pooled_stacks = 64;

}  // namespace

Fiber::Fiber(std::function<void()> body) : body_(std::move(body)) {
    auto& pool = stack_pool();
    if (!pool.empty()) {
        stack_ = std::move(pool.back());
        pool.pop_back();
    } else {
        stack_ = std::make_unique<std::byte[]>(stack_bytes);
    }
    getcontext(&context_);
    context_.uc_stack.ss_sp = stack_.get();
    context_.uc_stack.ss_size = stack_bytes;
    context_.uc_link = nullptr;
    const auto self = reinterpret_cast<std::uintptr_t>(this);
    makecontext(&context_, reinterpret_cast<void (*)()>(&Fiber::entry), 2,
                static_cast<unsigned int>(self >> 32), static_cast<unsigned int>(self));
}

Fiber::~Fiber() {
#if TANDEM_ASAN_FIBERS
    // A fiber destroyed before it finished leaves its frames' redzones poisoned; the next fiber
    // on this stack must not trip over them.
    ASAN_UNPOISON_MEMORY_REGION(stack_.get(), stack_bytes);
#endif
    auto& pool = stack_pool();
    if (pool.size() < max_pooled_stacks) {
        pool.push_back(std::move(stack_));
    }
}

Fiber* Fiber::current() { return running; }

void Fiber::entry(unsigned int high, unsigned int low) {
    auto* self = reinterpret_cast<Fiber*>((std::uintptr_t{high} << 32) | std::uintptr_t{low});
#if TANDEM_ASAN_FIBERS
    __sanitizer_finish_switch_fiber(nullptr, &self->caller_stack_bottom_, &self->caller_stack_size_);
#endif
    self->body_();
    self->finished_ = true;
    running = nullptr;
#if TANDEM_ASAN_FIBERS
    __sanitizer_start_switch_fiber(nullptr, self->caller_stack_bottom_, self->caller_stack_size_);
#endif
    setcontext(&self->caller_);
}

void Fiber::resume() {
    assert(!finished_ && running == nullptr && "resume from the scheduler, once per stop");
    running = this;
#if TANDEM_ASAN_FIBERS
    __sanitizer_start_switch_fiber(&caller_fake_stack_, stack_.get(), stack_bytes);
#endif
    swapcontext(&caller_, &context_);
#if TANDEM_ASAN_FIBERS
    __sanitizer_finish_switch_fiber(caller_fake_stack_, nullptr, nullptr);
#endif
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
    swapcontext(&self->context_, &self->caller_);
#if TANDEM_ASAN_FIBERS
    __sanitizer_finish_switch_fiber(self->fiber_fake_stack_, &self->caller_stack_bottom_,
                                    &self->caller_stack_size_);
#endif
    running = self;
}

}  // namespace tandem::sim
