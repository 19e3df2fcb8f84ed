// Rule C12: the success path of a write scope, one claim of one range per written buffer,
// allocates nothing on the heap. This executable replaces the global operator new to count.

#include "tandem/core/claim_store.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<long> heap_allocations{0};
}

void* operator new(std::size_t size) {
    heap_allocations.fetch_add(1, std::memory_order_relaxed);
    if (void* memory = std::malloc(size == 0 ? 1 : size)) {
        return memory;
    }
    throw std::bad_alloc();
}
void operator delete(void* memory) noexcept { std::free(memory); }
void operator delete(void* memory, std::size_t) noexcept { std::free(memory); }

namespace tandem {
namespace {

TEST(HeapAllocations, the_success_path_of_a_write_scope_allocates_nothing) {
    ClaimStore store(ServiceId{1, 0});
    MemoryId input = MemoryId::next();
    MemoryId output = MemoryId::next();
    ClaimKey inputs[] = {{input, {0, 4096}}};
    ClaimKey outputs[] = {{output, {0, 4096}}, {output, {4096, 8192}}};
    // Warm up once so lazily built state (none expected) cannot hide in the count.
    store.enter_launch("warm", inputs, outputs).succeed();

    const long before = heap_allocations.load();
    for (int launch = 0; launch < 1000; ++launch) {
        WriteScope scope = store.enter_launch("axpy", inputs, outputs);
        scope.succeed();
    }
    const long after = heap_allocations.load();
    EXPECT_EQ(after - before, 0) << "heap allocations on 1000 successful launches";
    std::printf("heap allocations on 1000 successful scopes: %ld\n", after - before);
}

TEST(HeapAllocations, a_write_over_an_exactly_claimed_range_releases_without_allocating) {
    ClaimStore store(ServiceId{1, 0});
    MemoryId output = MemoryId::next();
    ClaimKey outputs[] = {{output, {0, 4096}}};
    (void)store.fail(outputs, Error::torn_down("earlier failure"));
    const long before = heap_allocations.load();
    store.begin_write("rewrite", outputs).succeed();
    const long after = heap_allocations.load();
    EXPECT_EQ(after - before, 0);
    EXPECT_TRUE(store.drained());
}

TEST(HeapAllocations, the_counter_sees_allocations) {
    // Guards the two tests above against a counter that never counts.
    const long before = heap_allocations.load();
    void* memory = ::operator new(16);
    ::operator delete(memory);
    EXPECT_EQ(heap_allocations.load() - before, 1);
}

}  // namespace
}  // namespace tandem
