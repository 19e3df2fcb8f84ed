// The process's label table leaves nothing behind: every way a label is made, refused or let go
// is followed by a count of the slots taken, through the table's internal test hook. The oracle:
// the count after is the count before, less what is still labelled.

#include "label_table.hpp"

#include "tandem/core/client.hpp"
#include "tandem/core/reference_runtime.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <type_traits>

namespace tandem {
namespace {

using detail::LabelTable;

// A stream id is no allocation's options: `allocate(bytes, stream)` keeps calling the overload
// it always called.
static_assert(!std::is_convertible_v<StreamId, AllocateOptions>);

std::shared_ptr<Runtime> runtime_of(std::uint32_t devices) {
    auto runtime = reference::ReferenceRuntime::create({.devices = devices});
    EXPECT_TRUE(runtime) << runtime.error().report();
    return *runtime;
}

TEST(LabelTable, a_labelled_allocation_takes_a_slot_until_its_last_holder_goes) {
    std::shared_ptr<Runtime> runtime = runtime_of(1);
    Client client = runtime->client(0);
    const std::size_t before = LabelTable::live();
    std::optional<Handle> weights = *client.allocate(64, {.label = "weights"});
    EXPECT_EQ(LabelTable::live(), before + 1);
    std::optional<BufferBinding> held = weights->binding();
    const MemoryId id = weights->memory_id();
    weights.reset();
    EXPECT_EQ(LabelTable::of(id), "weights") << "a binding still holds the allocation";
    held.reset();
    EXPECT_EQ(LabelTable::live(), before);
    EXPECT_EQ(LabelTable::of(id), std::nullopt);
}

TEST(LabelTable, a_reused_block_carries_no_label_of_the_allocation_before) {
    std::shared_ptr<Runtime> runtime = runtime_of(1);
    Client client = runtime->client(0);
    const std::size_t before = LabelTable::live();
    for (int round = 0; round < 4; ++round) {
        Result<Handle> labelled = client.allocate(64, {.label = "round"});
        ASSERT_TRUE(labelled) << labelled.error().report();
        EXPECT_EQ(labelled->label(), "round");
    }
    Result<Handle> plain = client.allocate(64);
    ASSERT_TRUE(plain) << plain.error().report();
    EXPECT_EQ(plain->label(), "");
    EXPECT_EQ(LabelTable::live(), before);
}

TEST(LabelTable, a_refused_label_or_a_failed_allocation_takes_no_slot) {
    std::shared_ptr<Runtime> runtime = runtime_of(1);
    Client client = runtime->client(0);
    const std::size_t before = LabelTable::live();
    EXPECT_EQ(client.allocate(64, {.label = "bad\x01"}).error().kind(), ErrorKind::InvalidArgument);
    EXPECT_EQ(client.create_stream(std::string(label_bytes_max + 1, 's')).error().kind(),
              ErrorKind::InvalidArgument);
    // The slot is taken before the allocation, and given back when it fails.
    EXPECT_EQ(client.allocate(std::uint64_t{1} << 61, {.label = "huge"}).error().kind(),
              ErrorKind::OutOfMemory);
    EXPECT_EQ(client.allocate(64, {.label = "nowhere", .stream = StreamId{9}}).error().kind(),
              ErrorKind::InvalidArgument);
    EXPECT_EQ(LabelTable::live(), before);
}

TEST(LabelTable, a_streams_label_goes_when_it_is_destroyed_or_its_device_goes) {
    const std::size_t before = LabelTable::live();
    {
        std::shared_ptr<Runtime> runtime = runtime_of(2);
        Client zero = runtime->client(0);
        Client one = runtime->client(1);
        Result<StreamId> copy_in = zero.create_stream("copy-in");
        ASSERT_TRUE(copy_in) << copy_in.error().report();
        ASSERT_TRUE(zero.create_stream("kept"));
        ASSERT_TRUE(one.create_stream("kept"));
        EXPECT_EQ(LabelTable::live(), before + 3);
        // Keyed by device: the same stream number of another device has its own label, or none.
        EXPECT_EQ(one.label(*copy_in), "kept");
        ASSERT_TRUE(zero.destroy_stream(*copy_in));
        EXPECT_EQ(LabelTable::live(), before + 2);
        EXPECT_EQ(zero.label(*copy_in), "");
    }
    EXPECT_EQ(LabelTable::live(), before);
}

TEST(LabelTable, a_handle_describes_itself_with_its_labels) {
    std::shared_ptr<Runtime> runtime = runtime_of(1);
    Client client = runtime->client(0);
    Result<StreamId> side = client.create_stream("side");
    ASSERT_TRUE(side) << side.error().report();
    Result<Handle> weights = client.allocate(16, {.label = "weights", .stream = *side});
    ASSERT_TRUE(weights) << weights.error().report();
    EXPECT_EQ(weights->describe(),
              "Handle{memory #" + std::to_string(weights->memory_id().count()) + " 'weights', " +
                  to_string(client.service()) + ", stream 2 'side', size 16, bytes [0, 16)}");
}

}  // namespace
}  // namespace tandem
