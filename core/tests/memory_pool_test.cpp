#include "tandem/backend/memory_manager.hpp"

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
        const AllocationInfo info = result->allocation();
        return {std::move(*result), info};
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
    EXPECT_EQ(manager.live_count(), 1u);
    EXPECT_EQ(manager.sweep(), 1u);
    EXPECT_EQ(freed, std::vector<MemoryId>{id});
    EXPECT_EQ(manager.live_count(), 0u);
}

TEST_F(MemoryManagerTest, a_reference_carries_where_its_allocation_is) {
    auto [handle, info] = allocate(4096, stream_b);
    const AllocationInfo& carried = handle.binding().allocation();
    EXPECT_EQ(carried.id, info.id);
    EXPECT_EQ(carried.address, info.address);
    EXPECT_EQ(carried.size_bytes, 4096u);
    EXPECT_EQ(carried.stream, stream_b);
}

TEST_F(MemoryManagerTest, a_swept_block_waits_for_its_stream_and_counts_as_free) {
    std::uint64_t address = 0;
    {
        auto [handle, info] = allocate(8192, stream_a);
        address = info.address;
    }
    EXPECT_EQ(manager.sweep(), 1u);
    EXPECT_EQ(manager.usage().in_use_bytes, 0u);
    // Other sizes on the same stream leave it parked; the next request of its size takes it back.
    auto [other, other_info] = allocate(4096, stream_a);
    EXPECT_NE(other_info.address, address);
    auto [again, info] = allocate(8192, stream_a);
    EXPECT_EQ(info.address, address);
    EXPECT_TRUE(order.waits().empty());
    EXPECT_EQ(manager.usage().in_use_bytes, 8192u + 4096u);
}

TEST_F(MemoryManagerTest, parked_blocks_go_back_to_their_pool_before_memory_runs_out) {
    // A whole page in four parked slices, and the rest of storage held: a request of two slices
    // fits only once the parked slices are back in the page and fused.
    std::vector<std::pair<ManagedMemoryHandle, AllocationInfo>> slices;
    for (int slice = 0; slice < 4; ++slice) {
        slices.push_back(allocate(MiB / 4, stream_a));
    }
    auto [rest, rest_info] = allocate(15 * MiB, stream_a);
    slices.clear();
    EXPECT_EQ(manager.sweep(), 4u);
    auto [pair, info] = allocate(MiB / 2, stream_a);
    EXPECT_EQ(manager.usage().reserved_bytes, 16 * MiB);
    EXPECT_EQ(manager.usage().in_use_bytes, 15 * MiB + MiB / 2);
}

TEST_F(MemoryManagerTest, a_weak_binding_never_reaches_a_later_allocation_of_the_same_bytes) {
    std::optional<WeakMemoryBinding> weak;
    std::uint64_t address = 0;
    {
        auto [handle, info] = allocate(4096, stream_a);
        weak = handle.downgrade();
        address = info.address;
    }
    EXPECT_EQ(manager.sweep(), 1u);
    auto [again, info] = allocate(4096, stream_a);
    EXPECT_EQ(info.address, address);  // The same bytes, parked and taken back...
    EXPECT_FALSE(weak->upgrade().has_value());  // ...but not the allocation the weak one named.
    EXPECT_NE(weak->id(), info.id);
    weak.reset();
    // With no reference left, its control block may serve a later allocation; ids stay unique.
    const MemoryId before = info.id;
    { auto dropped = std::move(again); }
    EXPECT_EQ(manager.sweep(), 1u);
    auto [third, third_info] = allocate(4096, stream_a);
    EXPECT_NE(third_info.id, before);
    EXPECT_EQ(third.id(), third_info.id);
    EXPECT_TRUE(third.can_mut());
}

TEST(MemoryManagerLifetime, handles_and_weak_bindings_may_outlive_their_manager) {
    HostStorage storage{4 * MiB};
    ManualStreamOrder order;
    auto manager = std::make_unique<MemoryManager>(storage, order, PoolOptions{MiB, MiB});
    auto kept = manager->allocate(4096, stream_a);
    auto released = manager->allocate(4096, stream_a);
    ASSERT_TRUE(kept && released);
    WeakMemoryBinding weak = kept->downgrade();
    std::optional<ManagedMemoryBinding> binding = kept->binding();
    released = Error::invalid_argument("dropped");  // Released, never swept.
    manager.reset();
    // The references still work, and dropping them after the manager went frees what they held
    // (the address sanitizer build checks that nothing leaks).
    EXPECT_TRUE(weak.upgrade().has_value());
    kept = Error::invalid_argument("dropped");
    EXPECT_TRUE(weak.upgrade().has_value());  // The binding still holds it.
    binding.reset();
    EXPECT_FALSE(weak.upgrade().has_value());
}

TEST_F(MemoryManagerTest, the_parking_cache_is_bounded) {
    // More released blocks than the cache holds, each of its own size: all are swept, the oldest go
    // back to the pool, and every byte is free again.
    {
        std::vector<std::pair<ManagedMemoryHandle, AllocationInfo>> held;
        for (std::size_t block = 1; block <= MemoryManager::max_parked + 4; ++block) {
            held.push_back(allocate(block * 256, stream_a));
        }
    }
    EXPECT_EQ(manager.sweep(), MemoryManager::max_parked + 4);
    EXPECT_EQ(manager.usage().in_use_bytes, 0u);
    EXPECT_EQ(manager.live_count(), 0u);
    auto [whole, info] = allocate(MiB, stream_a);
    EXPECT_EQ(manager.usage().reserved_bytes, MiB);
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
