#include "tandem/core/handle.hpp"
#include "runtime_key_for_tests.hpp"

#include <gtest/gtest.h>

namespace tandem {
namespace {

constexpr ServiceId device0{7, 0};
constexpr StreamId stream0{1};

Handle fresh_handle(std::uint64_t size_bytes) {
    return Handle(detail::RuntimeKeyForTests::key(),
                  ManagedMemoryHandle::create(detail::RuntimeKeyForTests::key(),
                                              AllocationInfo{.id = MemoryId::next()}, nullptr),
                  device0, stream0, size_bytes);
}

TEST(MemoryId, is_never_reused) {
    MemoryId first = MemoryId::next();
    MemoryId second = MemoryId::next();
    EXPECT_LT(first.value, second.value);
    EXPECT_NE(first.value, 0u);
}

TEST(Handle, can_mut_iff_exactly_one_handle_references_the_memory) {
    Handle handle = fresh_handle(64);
    EXPECT_TRUE(handle.can_mut());
    {
        Handle copy = handle;
        EXPECT_FALSE(handle.can_mut());
        EXPECT_FALSE(copy.can_mut());
    }
    EXPECT_TRUE(handle.can_mut());
}

TEST(Handle, bindings_do_not_count_for_can_mut) {
    Handle handle = fresh_handle(64);
    BufferBinding binding = handle.binding();
    BufferBinding another = binding;
    EXPECT_TRUE(handle.can_mut());
}

TEST(Handle, offset_end_counts_bytes_trimmed_from_the_end) {
    Result<Handle> sliced = fresh_handle(100).add_offset_start(10);
    ASSERT_TRUE(sliced);
    sliced = sliced->add_offset_end(30);
    ASSERT_TRUE(sliced);
    EXPECT_EQ(sliced->range(), (ByteRange{10, 70}));
    EXPECT_EQ(sliced->size_in_use(), 60u);
    EXPECT_EQ(sliced->size(), 100u);
}

TEST(Handle, offsets_past_the_size_are_refused_and_change_nothing) {
    Handle handle = fresh_handle(100);
    Result<Handle> start = handle.add_offset_start(101);
    ASSERT_FALSE(start);
    EXPECT_EQ(start.error().kind(), ErrorKind::InvalidArgument);
    Result<Handle> both = *handle.add_offset_start(60);
    Result<Handle> end = both->add_offset_end(41);
    ASSERT_FALSE(end);
    EXPECT_EQ(end.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_EQ(both->range(), (ByteRange{60, 100}));
    EXPECT_EQ(handle.range(), (ByteRange{0, 100}));
}

TEST(Handle, offsets_that_would_wrap_are_refused) {
    Handle handle = *fresh_handle(100).add_offset_start(50);
    Result<Handle> wrapped = handle.add_offset_start(UINT64_MAX - 10);
    ASSERT_FALSE(wrapped);
    EXPECT_EQ(wrapped.error().kind(), ErrorKind::InvalidArgument);
    Result<Handle> sliced = handle.slice(10, UINT64_MAX);
    ASSERT_FALSE(sliced);
    EXPECT_EQ(sliced.error().kind(), ErrorKind::InvalidArgument);
}

TEST(Handle, slice_is_relative_to_the_current_range) {
    Handle handle = *fresh_handle(100).add_offset_start(20);
    Result<Handle> sliced = handle.slice(5, 10);
    ASSERT_TRUE(sliced);
    EXPECT_EQ(sliced->range(), (ByteRange{25, 35}));
}

// A handle that was moved from is a programming error the client refuses; its own members still
// answer, as naming no memory, rather than follow a null reference.
TEST(Handle, a_moved_from_handle_answers_as_naming_no_memory) {
    Handle handle = fresh_handle(64);
    Handle kept = std::move(handle);
    EXPECT_TRUE(handle.empty());  // NOLINT(bugprone-use-after-move): what the test is about.
    EXPECT_EQ(handle.memory_id(), MemoryId{});
    EXPECT_FALSE(handle.can_mut());
    EXPECT_TRUE(kept.can_mut());
    EXPECT_EQ(handle.overlap(kept), Overlap::Disjoint);
    EXPECT_EQ(kept.overlap(handle), Overlap::Disjoint);
    EXPECT_EQ(handle.overlap(handle), Overlap::Disjoint);
    EXPECT_EQ(handle.describe(), "Handle{moved from}");
    BufferBinding binding = handle.binding();
    EXPECT_EQ(binding.memory_id(), MemoryId{});
    EXPECT_FALSE(binding.downgrade().upgrade());
    EXPECT_TRUE(kept.can_mut());  // Nothing drawn from the empty handle counted on the memory.
}

TEST(Overlap, is_decided_by_byte_sets) {
    Handle whole = fresh_handle(100);
    Handle left = *whole.slice(0, 50);
    Handle right = *whole.slice(50, 50);
    Handle middle = *whole.slice(25, 50);
    Handle empty_inside = *whole.slice(30, 0);
    EXPECT_EQ(left.overlap(right), Overlap::Disjoint);
    EXPECT_EQ(left.overlap(middle), Overlap::Partial);
    EXPECT_EQ(whole.overlap(left), Overlap::Partial);
    EXPECT_EQ(left.overlap(*whole.slice(0, 50)), Overlap::Same);
    // An empty range strictly inside another holds no byte: disjoint, not partial.
    EXPECT_EQ(empty_inside.overlap(whole), Overlap::Disjoint);
    EXPECT_EQ(empty_inside.overlap(empty_inside), Overlap::Disjoint);
}

TEST(Overlap, handles_on_different_memory_are_disjoint) {
    Handle a = fresh_handle(100);
    Handle b = fresh_handle(100);
    EXPECT_EQ(a.overlap(b), Overlap::Disjoint);
}

TEST(BufferBinding, claim_key_distinguishes_siblings_of_one_allocation) {
    Handle whole = fresh_handle(128);
    BufferBinding first = whole.slice(0, 64)->binding();
    BufferBinding second = whole.slice(64, 64)->binding();
    EXPECT_EQ(first.memory_id(), second.memory_id());
    EXPECT_NE(first.claim_key(), second.claim_key());
    EXPECT_EQ(first.claim_key(), whole.slice(0, 64)->binding().claim_key());
    EXPECT_EQ(first.range(), (ByteRange{0, 64}));
}

TEST(WeakBufferBinding, upgrades_while_held_and_never_after) {
    Handle handle = fresh_handle(64);
    WeakBufferBinding weak = handle.binding().downgrade();
    {
        std::optional<BufferBinding> upgraded = weak.upgrade();
        ASSERT_TRUE(upgraded.has_value());
        EXPECT_EQ(upgraded->claim_key(), handle.binding().claim_key());
        EXPECT_FALSE(upgraded->peer().has_value());
    }
    MemoryId id = handle.memory_id();
    { Handle dropped = std::move(handle); }
    EXPECT_FALSE(weak.upgrade().has_value());
    EXPECT_EQ(weak.claim_key().memory, id);
}

TEST(WeakBufferBinding, a_binding_alone_keeps_the_upgrade_alive) {
    std::optional<BufferBinding> binding;
    WeakBufferBinding weak = [&] {
        Handle handle = fresh_handle(64);
        binding = handle.binding();
        return binding->downgrade();
    }();
    EXPECT_TRUE(weak.upgrade().has_value());
    binding.reset();
    EXPECT_FALSE(weak.upgrade().has_value());
}

TEST(ReleaseSink, hears_once_when_the_last_reference_goes) {
    struct Counter : ReleaseSink {
        int calls = 0;
        MemoryId last;
        void released(detail::MemoryControl& control) noexcept override {
            ++calls;
            last = control.allocation.id;
            control.drop_weak();
        }
    };
    auto sink = std::make_shared<Counter>();
    MemoryId id = MemoryId::next();
    {
        Handle handle(detail::RuntimeKeyForTests::key(),
                      ManagedMemoryHandle::create(detail::RuntimeKeyForTests::key(),
                                                  AllocationInfo{.id = id}, sink.get()),
                      device0, stream0, 8);
        BufferBinding binding = handle.binding();
        { Handle gone = std::move(handle); }
        EXPECT_EQ(sink->calls, 0);
    }
    EXPECT_EQ(sink->calls, 1);
    EXPECT_EQ(sink->last, id);
}

}  // namespace
}  // namespace tandem
