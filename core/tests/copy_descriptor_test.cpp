#include "tandem/core/copy_descriptor.hpp"
#include "runtime_key_for_tests.hpp"
#include "tandem/core/kernel_resource.hpp"

#include <gtest/gtest.h>

namespace tandem {
namespace {

BufferBinding fresh_binding(std::uint64_t size_bytes, std::uint64_t offset_start = 0) {
    Handle handle(detail::RuntimeKeyForTests::key(),
                  ManagedMemoryHandle::create(detail::RuntimeKeyForTests::key(),
                                              AllocationInfo{.id = MemoryId::next()}, nullptr),
                  ServiceId{1, 0}, StreamId{1}, size_bytes);
    return handle.add_offset_start(offset_start)->binding();
}

TEST(CopyDescriptor, a_column_of_a_matrix_reaches_one_element_per_row) {
    // A 4x4 matrix of 4-byte elements; the second column.
    Result<CopyDescriptor> column = CopyDescriptor::make(fresh_binding(64), {4}, {4}, 4);
    ASSERT_TRUE(column);
    EXPECT_EQ(column->element_count(), 4u);
    EXPECT_EQ(column->byte_ranges(),
              (std::vector<ByteRange>{{0, 4}, {16, 20}, {32, 36}, {48, 52}}));
}

TEST(CopyDescriptor, contiguous_rows_fuse_into_one_range_at_the_binding_offset) {
    Result<CopyDescriptor> rows = CopyDescriptor::make(fresh_binding(128, 32), {2, 4}, {4, 1}, 4);
    ASSERT_TRUE(rows);
    EXPECT_EQ(rows->byte_ranges(), (std::vector<ByteRange>{{32, 64}}));
}

TEST(CopyDescriptor, a_view_past_its_binding_is_refused) {
    Result<CopyDescriptor> view = CopyDescriptor::make(fresh_binding(64), {4, 4}, {5, 1}, 4);
    ASSERT_FALSE(view);
    EXPECT_EQ(view.error().kind(), ErrorKind::InvalidArgument);
}

TEST(CopyDescriptor, hostile_strides_that_would_wrap_are_refused) {
    Result<CopyDescriptor> view = CopyDescriptor::make(fresh_binding(64), {3}, {UINT64_MAX / 2}, 4);
    ASSERT_FALSE(view);
    EXPECT_EQ(view.error().kind(), ErrorKind::InvalidArgument);
}

TEST(CopyDescriptor, a_view_that_repeats_elements_past_its_bindings_bytes_is_refused) {
    // Found by the client-calls fuzzer: a zero stride reaches one element, so the reach check
    // passed, and reading the view reserved room for 2^64 elements.
    for (const std::uint64_t extent : {UINT64_MAX, std::uint64_t{17}}) {
        Result<CopyDescriptor> view = CopyDescriptor::make(fresh_binding(64), {extent}, {0}, 4);
        ASSERT_FALSE(view) << extent;
        EXPECT_EQ(view.error().kind(), ErrorKind::InvalidArgument);
        EXPECT_NE(view.error().message().find("at most the 64 bytes"), std::string::npos)
            << view.error().report();
    }
    Result<CopyDescriptor> sixteen = CopyDescriptor::make(fresh_binding(64), {16}, {0}, 4);
    ASSERT_TRUE(sixteen) << sixteen.error().report();  // 64 bytes: as many as the binding holds.
    EXPECT_EQ(sixteen->element_offsets(), std::vector<std::uint64_t>(16, 0));
}

TEST(CopyDescriptor, malformed_shapes_are_refused) {
    EXPECT_FALSE(CopyDescriptor::make(fresh_binding(64), {}, {}, 4));
    EXPECT_FALSE(CopyDescriptor::make(fresh_binding(64), {4}, {1, 1}, 4));
    EXPECT_FALSE(CopyDescriptor::make(fresh_binding(64), {4}, {1}, 0));
}

TEST(TensorMapBinding, a_well_formed_tiled_view_is_accepted) {
    TensorMapDescriptor descriptor{{16, 8}, {64}, {8, 4}, 4};
    EXPECT_TRUE(TensorMapBinding::make(fresh_binding(16 * 8 * 4), descriptor));
}

TEST(TensorMapBinding, a_view_past_the_binding_or_with_odd_strides_is_refused) {
    EXPECT_FALSE(TensorMapBinding::make(fresh_binding(100), {{16, 8}, {64}, {8, 4}, 4}));
    EXPECT_FALSE(TensorMapBinding::make(fresh_binding(1024), {{16, 8}, {60}, {8, 4}, 4}));
    EXPECT_FALSE(TensorMapBinding::make(fresh_binding(1024), {{16, 8}, {64}, {17, 4}, 4}));
    EXPECT_FALSE(TensorMapBinding::make(fresh_binding(1024), {{16, 8}, {64}, {8, 4}, 3}));
}

TEST(KernelResource, counts_as_read_write_without_a_declaration) {
    KernelResource resource(fresh_binding(64));
    EXPECT_EQ(resource.access(), AccessMode::ReadWrite);
    EXPECT_TRUE(reads(resource.access()));
    EXPECT_TRUE(writes(resource.access()));
    EXPECT_NE(resource.local_binding(), nullptr);
    EXPECT_EQ(resource.peer_binding(), nullptr);
}

}  // namespace
}  // namespace tandem
