#pragma once

// Counts heap allocations by replacing the global operator new. Include it in exactly one source
// of an executable that runs on its own (a replaced operator new serves the whole program).

#include <atomic>
#include <cstdlib>
#include <new>

namespace tandem::testing {
inline std::atomic<long> heap_allocations{0};
}  // namespace tandem::testing

void* operator new(std::size_t size) {
    tandem::testing::heap_allocations.fetch_add(1, std::memory_order_relaxed);
    if (void* memory = std::malloc(size == 0 ? 1 : size)) {
        return memory;
    }
    throw std::bad_alloc();
}
void operator delete(void* memory) noexcept { std::free(memory); }
void operator delete(void* memory, std::size_t) noexcept { std::free(memory); }
