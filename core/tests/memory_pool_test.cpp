#include "tandem/core/memory_manager.hpp"

#include <gtest/gtest.h>

namespace tandem {
namespace {

constexpr StreamId stream_a{1};
constexpr StreamId stream_b{2};
constexpr std::uint64_t MiB = 1024 * 1024;

class MemoryManagerTest : public ::testing::Test {
protected:
    HostStorage storage{16 * MiB};
    ManualStreamOrder order;
    MemoryManager manager{storage, order, PoolOptions{MiB, MiB}};
    std::vector<MemoryId> freed;

    void SetUp() override {
        manager.set_freed_listener([this](const AllocationInfo& info) { freed.push_back(info.id); });
    }
    std::pair<ManagedMemoryHandle, AllocationInfo> allocate(std::uint64_t size, StreamId stream) {
        auto result = manager.allocate(size, stream);
        EXPECT_TRUE(result) << result.error().report();
        return std::move(*result);
    }
};

TEST_F(MemoryManagerTest, zero_and_absurd_sizes_are_invalid_and_change_nothing) {
    auto zero = manager.allocate(0, stream_a);
    ASSERT_FALSE(zero);
    EXPECT_EQ(zero.error().kind(), ErrorKind::InvalidArgument);
    auto absurd = manager.allocate((std::uint64_t{1} << 62) + 1, stream_a);
    ASSERT_FALSE(absurd);
    EXPECT_EQ(absurd.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_EQ(manager.live_count(), 0u);
    EXPECT_EQ(manager.usage().reserved_bytes, 0u);
}

TEST_F(MemoryManagerTest, small_allocations_share_a_page) {
    auto [first, first_info] = allocate(100, stream_a);
    auto [second, second_info] = allocate(100, stream_a);
    EXPECT_EQ(manager.usage().reserved_bytes, MiB);
    EXPECT_EQ(second_info.address, first_info.address + 256);
    EXPECT_NE(first_info.id, second_info.id);
}

TEST_F(MemoryManagerTest, reuse_is_immediate_on_the_releasing_stream) {
    std::uint64_t address = 0;
    {
        auto [handle, info] = allocate(4096, stream_a);
        address = info.address;
    }
    auto [again, info] = allocate(4096, stream_a);
    EXPECT_EQ(info.address, address);
    EXPECT_TRUE(order.waits().empty());
}

TEST_F(MemoryManagerTest, reuse_on_another_stream_waits_for_the_release_event) {
    {
        auto [handle, info] = allocate(4096, stream_a);
    }
    manager.sweep();
    // Take the rest of the page so that the only block left carries the release on stream a
    // (a released block fuses with its free neighbours, which then share its release event).
    auto [rest, rest_info] = allocate(MiB - 4096, stream_a);
    auto [reused, info] = allocate(4096, stream_b);
    EXPECT_EQ(manager.usage().reserved_bytes, MiB);
    ASSERT_EQ(order.waits().size(), 1u);
    EXPECT_EQ(order.waits()[0].waiter, stream_b);
}

TEST_F(MemoryManagerTest, a_completed_release_is_reused_on_any_stream_without_waiting) {
    {
        auto [handle, info] = allocate(2 * MiB, stream_a);
    }
    manager.sweep();
    order.complete_all();
    auto [reused, info] = allocate(2 * MiB, stream_b);
    EXPECT_TRUE(order.waits().empty());
    EXPECT_EQ(manager.usage().reserved_bytes, 2 * MiB);
}

TEST_F(MemoryManagerTest, large_allocations_get_regions_of_their_own) {
    auto [large, info] = allocate(3 * MiB, stream_a);
    MemoryUsage usage = manager.usage();
    EXPECT_EQ(usage.in_use_bytes, 3 * MiB);
    EXPECT_EQ(usage.reserved_bytes, 3 * MiB);
}

TEST_F(MemoryManagerTest, out_of_memory_carries_the_usage_figures) {
    auto [held, info] = allocate(10 * MiB, stream_a);
    auto result = manager.allocate(8 * MiB, stream_a);
    ASSERT_FALSE(result);
    ASSERT_EQ(result.error().kind(), ErrorKind::OutOfMemory);
    const auto* details = result.error().details_as<OutOfMemoryDetails>();
    ASSERT_NE(details, nullptr);
    EXPECT_EQ(details->requested_bytes, 8 * MiB);
    EXPECT_EQ(details->free_bytes, 6 * MiB);
    EXPECT_EQ(details->reserved_bytes, 10 * MiB);
    EXPECT_EQ(details->largest_free_block_bytes, 6 * MiB);
    EXPECT_EQ(manager.live_count(), 1u);
}

TEST_F(MemoryManagerTest, out_of_memory_is_raised_only_after_cached_regions_are_trimmed) {
    {
        auto [first, info] = allocate(10 * MiB, stream_a);
    }
    manager.sweep();
    order.complete_all();
    // The cached 10 MiB region cannot serve 4 MiB (too wasteful) but trimming it makes room.
    auto result = manager.allocate(12 * MiB, stream_a);
    EXPECT_TRUE(result) << result.error().report();
}

TEST_F(MemoryManagerTest, the_sweep_tells_the_listener_before_the_bytes_are_reused) {
    MemoryId id;
    {
        auto [handle, info] = allocate(512, stream_a);
        id = info.id;
    }
    EXPECT_TRUE(freed.empty());
    EXPECT_TRUE(manager.find(id).has_value());
    EXPECT_EQ(manager.sweep(), 1u);
    EXPECT_EQ(freed, std::vector<MemoryId>{id});
    EXPECT_FALSE(manager.find(id).has_value());
}

TEST_F(MemoryManagerTest, a_binding_keeps_an_allocation_reserved) {
    std::optional<ManagedMemoryBinding> binding;
    {
        auto [handle, info] = allocate(512, stream_a);
        binding = handle.binding();
    }
    EXPECT_EQ(manager.sweep(), 0u);
    binding.reset();
    EXPECT_EQ(manager.sweep(), 1u);
}

TEST_F(MemoryManagerTest, find_address_resolves_only_bytes_of_live_allocations) {
    auto [handle, info] = allocate(1000, stream_a);
    EXPECT_EQ(manager.find_address(info.address + 999)->id, info.id);
    EXPECT_FALSE(manager.find_address(info.address + 1000).has_value());
    EXPECT_FALSE(manager.find_address(info.address - 1).has_value());
}

TEST_F(MemoryManagerTest, freed_neighbours_fuse_so_a_page_serves_a_large_slice_again) {
    std::vector<ManagedMemoryHandle> handles;
    for (int index = 0; index < 4; ++index) {
        handles.push_back(allocate(64 * 1024, stream_a).first);
    }
    handles.clear();
    manager.sweep();
    auto [big, info] = allocate(MiB, stream_a);
    EXPECT_EQ(manager.usage().reserved_bytes, MiB);
}

}  // namespace
}  // namespace tandem
