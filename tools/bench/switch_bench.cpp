// The simulator's task switch: a kernel that stops (at an atomic access, a wait, or between
// blocks when other work waits) costs one resume and one yield of its fiber, two switches.
// `fiber_round_trip` times that pair on the simulator's own Fiber; `ucontext_round_trip` times
// the same pair with swapcontext, which the fibers used before (it saves and restores the signal
// mask with a system call on every switch), so one run shows both side by side.

#include "fiber.hpp"

#include <benchmark/benchmark.h>

#include <ucontext.h>
#include <cstddef>
#include <memory>

namespace tandem::bench {
namespace {

void fiber_round_trip(benchmark::State& state) {
    std::uint64_t stops = 0;
    sim::Fiber fiber([&stops] {
        for (;;) {
            ++stops;
            sim::Fiber::yield();
        }
    });
    for (auto _ : state) {
        fiber.resume();
    }
    benchmark::DoNotOptimize(stops);
    state.counters["seconds_per_switch"] =
        benchmark::Counter(static_cast<double>(state.iterations()) * 2,
                           benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(fiber_round_trip);

struct UcontextPair {
    ucontext_t scheduler{};
    ucontext_t task{};
    std::uint64_t stops = 0;
};
UcontextPair* pair_running = nullptr;

void ucontext_task() {
    for (;;) {
        ++pair_running->stops;
        swapcontext(&pair_running->task, &pair_running->scheduler);
    }
}

void ucontext_round_trip(benchmark::State& state) {
    constexpr std::size_t stack_bytes = 64 * 1024;
    auto stack = std::make_unique<std::byte[]>(stack_bytes);
    UcontextPair pair;
    pair_running = &pair;
    getcontext(&pair.task);
    pair.task.uc_stack.ss_sp = stack.get();
    pair.task.uc_stack.ss_size = stack_bytes;
    pair.task.uc_link = nullptr;
    makecontext(&pair.task, &ucontext_task, 0);
    for (auto _ : state) {
        swapcontext(&pair.scheduler, &pair.task);
    }
    benchmark::DoNotOptimize(pair.stops);
    state.counters["seconds_per_switch"] =
        benchmark::Counter(static_cast<double>(state.iterations()) * 2,
                           benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(ucontext_round_trip);

}  // namespace
}  // namespace tandem::bench
