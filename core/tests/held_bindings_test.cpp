#include "tandem/backend/held_bindings.hpp"
#include "runtime_key_for_tests.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace tandem {
namespace {

constexpr ServiceId device0{7, 0};
constexpr StreamId stream0{1};

/// Counts the allocations whose last holder went.
struct Releases : ReleaseSink {
    std::vector<MemoryId> released_ids;
    void released(detail::MemoryControl& control) noexcept override {
        released_ids.push_back(control.allocation.id);
        control.drop_weak();
    }
};

Handle handle_on(Releases& sink, std::uint64_t size_bytes = 64) {
    return Handle(detail::RuntimeKeyForTests::key(),
                  ManagedMemoryHandle::create(detail::RuntimeKeyForTests::key(),
                                              AllocationInfo{.id = MemoryId::next()}, &sink),
                  device0, stream0, size_bytes);
}

TEST(HeldBindings, taken_buffers_stay_reserved_until_cleared_and_are_released_once) {
    Releases sink;
    HeldBindings held;
    MemoryId first;
    MemoryId second;
    {
        Handle a = handle_on(sink);
        Handle b = handle_on(sink);
        first = a.memory_id();
        second = b.memory_id();
        std::vector<KernelResource> resources;
        resources.emplace_back(a, AccessMode::Read);
        resources.emplace_back(b, AccessMode::Write);
        held.take(resources);
        EXPECT_EQ(held.size(), 2u);
    }  // The handles and the emptied resources are gone; the work still holds both.
    EXPECT_TRUE(sink.released_ids.empty());
    held.clear();
    EXPECT_TRUE(held.empty());
    EXPECT_EQ(sink.released_ids, (std::vector<MemoryId>{first, second}));
}

TEST(HeldBindings, a_taken_resource_holds_nothing_more_once_emptied) {
    Releases sink;
    HeldBindings held;
    Handle handle = handle_on(sink);
    std::vector<KernelResource> resources;
    resources.emplace_back(handle, AccessMode::ReadWrite);
    held.take(resources);
    resources.clear();
    { Handle gone = std::move(handle); }
    // Only the held reference is left: the resource moved it out rather than sharing it.
    EXPECT_TRUE(sink.released_ids.empty());
    held.clear();
    EXPECT_EQ(sink.released_ids.size(), 1u);
}

TEST(HeldBindings, added_bindings_are_copies_that_outlive_the_originals) {
    Releases sink;
    HeldBindings held;
    {
        Handle handle = handle_on(sink);
        const KernelResource resource(handle, AccessMode::Read);
        held.add(resource);
        held.add(handle.binding());
        EXPECT_EQ(held.size(), 2u);
    }
    EXPECT_TRUE(sink.released_ids.empty());
    held.clear();
    EXPECT_EQ(sink.released_ids.size(), 1u);
}

TEST(HeldBindings, resources_added_together_stay_bound_in_the_caller) {
    Releases sink;
    HeldBindings held;
    Handle first = handle_on(sink);
    Handle second = handle_on(sink);
    std::vector<KernelResource> resources;
    resources.emplace_back(first, AccessMode::Read);
    resources.emplace_back(second, AccessMode::Write);
    held.add(std::span<const KernelResource>(resources));
    EXPECT_EQ(held.size(), 2u);
    EXPECT_EQ(resources[1].buffer_binding().memory_id(), second.memory_id());
    held.clear();
    { Handle gone = std::move(first); }
    EXPECT_TRUE(sink.released_ids.empty());  // The caller's resources still hold both.
    resources.clear();
    { Handle gone = std::move(second); }
    EXPECT_EQ(sink.released_ids.size(), 2u);
}

}  // namespace
}  // namespace tandem
