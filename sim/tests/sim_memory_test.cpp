// Memory, faults and checked access on the simulator.

#include "sim_test_support.hpp"

#include "tandem/sim/kernel_registry.hpp"

#include <sys/statvfs.h>

namespace tandem::sim {
namespace {

using namespace testing;

/// Writes one element past the end of buffer 0: the checked view must fault.
struct WritePastEnd {
    static constexpr const char* name = "test_write_past_end";
    template <typename Context>
    void operator()(Context& ctx) const {
        auto out = ctx.template buffer<std::uint32_t>(0);
        if (ctx.thread_index() == 0) {
            out.store(out.size(), 1u);
        }
    }
};

/// Stores one byte at its own thread index into buffer 0: a thread past the buffer faults.
struct StoreAtThread {
    static constexpr const char* name = "test_store_at_thread";
    template <typename Context>
    void operator()(Context& ctx) const {
        auto out = ctx.template buffer<std::uint8_t>(0);
        out.store(ctx.thread_index(), std::uint8_t{1});
    }
};

/// Stores into a resource declared read-only.
struct StoreIntoInput {
    static constexpr const char* name = "test_store_into_input";
    template <typename Context>
    void operator()(Context& ctx) const {
        auto in = ctx.template buffer<std::uint8_t>(0);
        in.store(0, 1);
    }
};

class SimMemory : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        (void)register_kernel<WritePastEnd>();
        (void)register_kernel<StoreIntoInput>();
        (void)register_kernel<StoreAtThread>();
    }
};

TEST_F(SimMemory, a_launch_holds_none_of_its_arguments_once_it_returns_even_when_refused) {
    // The client reuses one request per thread: what it bound must not outlive the call, or the
    // memory of a dropped handle would stay in use.
    auto runtime = make_runtime();
    Client client = runtime->client(0);
    Client other = runtime->client(1);
    {
        Handle bound = allocate(client, 4096);
        Handle foreign = allocate(other, 4096);  // Never shared: binding it is refused.
        ASSERT_TRUE(
            client.launch("fill", LaunchConfig::linear(64), {out(bound)}, KernelArgs().u64(1)));
        Status refused = client.launch("copy", LaunchConfig::linear(64), {in(bound), out(foreign)});
        ASSERT_FALSE(refused);
        EXPECT_EQ(refused.error().kind(), ErrorKind::WrongService) << refused.error().report();
        ASSERT_TRUE(client.sync());
        ASSERT_TRUE(other.sync());
    }
    ASSERT_TRUE(client.sync());
    ASSERT_TRUE(other.sync());
    EXPECT_EQ(client.memory_usage()->in_use_bytes, 0u);
    EXPECT_EQ(other.memory_usage()->in_use_bytes, 0u);
}

TEST_F(SimMemory, an_allocation_larger_than_the_segment_is_out_of_memory_with_its_figures) {
    auto runtime = make_runtime(SimOptions{.capacity_bytes = 8 << 20});
    Client client = runtime->client(0);
    Handle held = allocate(client, 3 << 20);
    auto too_big = client.allocate(16 << 20);
    ASSERT_FALSE(too_big);
    ASSERT_EQ(too_big.error().kind(), ErrorKind::OutOfMemory);
    const auto* details = too_big.error().details_as<OutOfMemoryDetails>();
    ASSERT_NE(details, nullptr);
    EXPECT_EQ(details->requested_bytes, 16u << 20);
    EXPECT_EQ(details->reserved_bytes, 3u << 20);
    EXPECT_EQ(details->free_bytes, 5u << 20);
    EXPECT_EQ(details->largest_free_block_bytes, 5u << 20);
    // Nothing changed: the held allocation still reads and a fitting one still succeeds.
    EXPECT_TRUE(client.allocate(1 << 20));
}

TEST_F(SimMemory, an_allocation_past_the_free_space_of_dev_shm_is_out_of_memory_not_sigbus) {
    struct statvfs filesystem{};
    ASSERT_EQ(::statvfs("/dev/shm", &filesystem), 0);
    const std::uint64_t free_bytes = std::uint64_t{filesystem.f_bavail} * filesystem.f_frsize;
    // The segment is sparse, so it may be larger than /dev/shm; its pages may not.
    auto runtime = make_runtime(SimOptions{.devices = 1, .capacity_bytes = free_bytes + (2ull << 30)});
    Client client = runtime->client(0);
    auto too_big = client.allocate(free_bytes + (1ull << 30));
    ASSERT_FALSE(too_big);
    ASSERT_EQ(too_big.error().kind(), ErrorKind::OutOfMemory);
    EXPECT_NE(too_big.error().report().find("/dev/shm"), std::string::npos) << too_big.error().report();
    EXPECT_TRUE(client.allocate(1 << 20));
}

TEST_F(SimMemory, zero_and_absurd_allocations_are_invalid) {
    auto runtime = make_runtime();
    Client client = runtime->client(0);
    EXPECT_EQ(client.allocate(0).error().kind(), ErrorKind::InvalidArgument);
    EXPECT_EQ(client.allocate((std::uint64_t{1} << 62) + 1).error().kind(), ErrorKind::InvalidArgument);
}

// Found by the client-calls fuzzer: an armed fault turned a zero-byte request into
// OutOfMemory and was used up by it.
TEST_F(SimMemory, a_wrong_allocation_is_invalid_even_with_a_fault_armed_and_leaves_the_fault_armed) {
    auto runtime = make_runtime();
    Client client = runtime->client(0);
    ASSERT_TRUE(client.inject(AllocationFault{1}));
    EXPECT_EQ(client.allocate(0).error().kind(), ErrorKind::InvalidArgument);
    EXPECT_EQ(client.allocate(UINT64_MAX).error().kind(), ErrorKind::InvalidArgument);
    EXPECT_EQ(client.allocate(64).error().kind(), ErrorKind::OutOfMemory);
    EXPECT_TRUE(client.allocate(64));
}

TEST_F(SimMemory, an_injected_allocation_failure_hits_the_nth_allocation_only) {
    auto runtime = make_runtime();
    Client client = runtime->client(0);
    ASSERT_TRUE(client.inject(AllocationFault{2}));
    EXPECT_TRUE(client.allocate(64));
    auto second = client.allocate(64);
    ASSERT_FALSE(second);
    EXPECT_EQ(second.error().kind(), ErrorKind::OutOfMemory);
    EXPECT_TRUE(client.allocate(64));
}

TEST_F(SimMemory, a_kernel_fault_by_nth_launch_fails_only_that_launch) {
    auto runtime = make_runtime();
    Client client = runtime->client(0);
    ASSERT_TRUE(client.inject(KernelFault{"fill", 2, 1.0, 13}));
    Handle a = allocate(client, 64);
    Handle b = allocate(client, 64);
    Handle c = allocate(client, 64);
    for (const Handle& handle : {a, b, c}) {
        ASSERT_TRUE(client.launch("fill", LaunchConfig::linear(64), {out(handle)}, KernelArgs().u64(1)));
    }
    EXPECT_TRUE(client.read(a));
    auto failed = client.read(b);
    ASSERT_FALSE(failed);
    EXPECT_EQ(unwritten(failed.error())->root->details_as<KernelFailedDetails>()->code, 13u);
    EXPECT_TRUE(client.read(c));
}

TEST_F(SimMemory, a_kernel_fault_by_probability_replays_with_the_seed) {
    auto outcomes = [](std::uint64_t seed) {
        auto runtime = make_runtime(SimOptions{.seed = seed});
        Client client = runtime->client(0);
        EXPECT_TRUE(client.inject(KernelFault{"fill", 0, 0.5, 1}));
        std::vector<bool> failed;
        for (int launch = 0; launch < 32; ++launch) {
            Handle handle = allocate(client, 16);
            EXPECT_TRUE(client.launch("fill", LaunchConfig::linear(16), {out(handle)}, KernelArgs()));
            failed.push_back(!client.read(handle).ok());
        }
        return failed;
    };
    const std::vector<bool> first = outcomes(11);
    EXPECT_EQ(first, outcomes(11));
    const auto count = std::count(first.begin(), first.end(), true);
    EXPECT_GT(count, 4);
    EXPECT_LT(count, 28);
}

TEST_F(SimMemory, bytes_never_written_read_as_garbage_derived_from_the_seed) {
    auto garbage = [](std::uint64_t seed) {
        auto runtime = make_runtime(SimOptions{.seed = seed});
        Client client = runtime->client(0);
        return *client.read(allocate(client, 256));
    };
    const std::vector<std::byte> first = garbage(5);
    EXPECT_EQ(first, garbage(5));
    EXPECT_NE(first, garbage(6));
    EXPECT_NE(first, std::vector<std::byte>(256));
}

TEST_F(SimMemory, an_access_past_the_binding_is_a_sticky_fault_naming_the_allocation) {
    auto runtime = make_runtime();
    Client client = runtime->client(0);
    Handle buffer = allocate(client, 64);
    Handle slice = *buffer.slice(0, 32);
    ASSERT_TRUE(client.launch("test_write_past_end", LaunchConfig::linear(1), {out(slice)}));
    Status synced = client.sync();
    ASSERT_FALSE(synced);
    ASSERT_EQ(synced.error().kind(), ErrorKind::DeviceLost);
    const std::string& message = synced.error().message();
    EXPECT_NE(message.find("illegal store by 'test_write_past_end'"), std::string::npos) << message;
    EXPECT_NE(message.find("past the 32 bytes bound"), std::string::npos) << message;
    EXPECT_NE(message.find(to_string(buffer.memory_id())), std::string::npos) << message;
    EXPECT_NE(message.find("(thread 0: block 0, thread 0 of the block)"), std::string::npos)
        << message;
    EXPECT_EQ(client.allocate(64).error().kind(), ErrorKind::DeviceLost);
    // Other devices keep working.
    Client other = runtime->client(1);
    EXPECT_TRUE(other.read(allocate(other, 8)));
}

// A bad access is reported as a memory checker would: the address and allocation, and the thread
// that made it, with its block and its place in the block.
TEST_F(SimMemory, a_bad_access_names_the_thread_and_block_that_made_it) {
    auto runtime = make_runtime();
    Client client = runtime->client(0);
    Handle buffer = allocate(client, 32);
    // Four blocks of 16 threads: thread 32, the first past the 32 bytes, is block 2's first.
    ASSERT_TRUE(client.launch("test_store_at_thread", LaunchConfig{Dim3{4, 1, 1}, Dim3{16, 1, 1}},
                              {out(buffer)}));
    Status synced = client.sync();
    ASSERT_FALSE(synced);
    ASSERT_EQ(synced.error().kind(), ErrorKind::DeviceLost);
    EXPECT_NE(synced.error().message().find("(thread 32: block 2, thread 0 of the block)"),
              std::string::npos)
        << synced.error().message();
}

TEST_F(SimMemory, a_store_into_a_read_only_resource_faults) {
    auto runtime = make_runtime();
    Client client = runtime->client(0);
    Handle buffer = allocate(client, 64);
    ASSERT_TRUE(client.write(buffer, std::vector<std::byte>(64)));
    ASSERT_TRUE(client.launch("test_store_into_input", LaunchConfig::linear(1), {in(buffer)}));
    Status synced = client.sync();
    ASSERT_FALSE(synced);
    EXPECT_NE(synced.error().message().find("declared read-only"), std::string::npos);
}

TEST_F(SimMemory, a_strided_read_returns_the_view_in_order) {
    auto runtime = make_runtime();
    Client client = runtime->client(0);
    Handle matrix = allocate(client, 16 * 4);
    std::vector<std::uint32_t> values(16);
    for (std::uint32_t i = 0; i < 16; ++i) {
        values[i] = i;
    }
    ASSERT_TRUE(client.write(matrix, bytes_of(values)));
    auto column = client.read_strided(matrix, {4}, {4}, 4);
    ASSERT_TRUE(column) << column.error().report();
    EXPECT_EQ(values_of<std::uint32_t>(*column), (std::vector<std::uint32_t>{0, 4, 8, 12}));
    auto outside = client.read_strided(matrix, {4}, {6}, 4);
    ASSERT_FALSE(outside);
    EXPECT_EQ(outside.error().kind(), ErrorKind::InvalidArgument);
}

TEST_F(SimMemory, a_strided_read_fails_only_on_the_claimed_bytes_it_covers) {
    auto runtime = make_runtime();
    Client client = runtime->client(0);
    Handle matrix = allocate(client, 64);
    ASSERT_TRUE(client.write(matrix, std::vector<std::byte>(64)));
    ASSERT_TRUE(client.launch("fail", LaunchConfig::linear(1), {out(*matrix.slice(4, 4))}, KernelArgs().u64(1)));
    EXPECT_TRUE(client.read_strided(matrix, {4}, {4}, 4));  // Elements 0, 4, 8, 12.
    EXPECT_FALSE(client.read_strided(matrix, {4}, {1}, 4));  // Elements 0 to 3.
}

TEST_F(SimMemory, a_tiled_copy_moves_a_tensor_through_tensor_maps) {
    auto runtime = make_runtime();
    Client client = runtime->client(0);
    // A 20 x 6 tensor of 4-byte elements with rows padded to 96 bytes; boxes of 8 x 4.
    const TensorMapDescriptor descriptor{{20, 6}, {96}, {8, 4}, 4};
    Handle source = allocate(client, 96 * 6);
    Handle target = allocate(client, 96 * 6);
    std::vector<std::uint32_t> values(24 * 6);
    for (std::uint32_t i = 0; i < values.size(); ++i) {
        values[i] = i;
    }
    ASSERT_TRUE(client.write(source, bytes_of(values)));
    ASSERT_TRUE(client.write(target, std::vector<std::byte>(96 * 6)));
    ASSERT_TRUE(client.launch("tiled_copy", LaunchConfig::linear(4, 2),
                              {LaunchArgument{source, AccessMode::Read, descriptor},
                               LaunchArgument{target, AccessMode::Write, descriptor}}));
    auto read = client.read(target);
    ASSERT_TRUE(read) << read.error().report();
    const std::vector<std::uint32_t> copied = values_of<std::uint32_t>(*read);
    for (std::uint32_t row = 0; row < 6; ++row) {
        for (std::uint32_t column = 0; column < 24; ++column) {
            const std::uint32_t expected = column < 20 ? values[row * 24 + column] : 0;
            EXPECT_EQ(copied[row * 24 + column], expected) << row << "," << column;
        }
    }
}

TEST_F(SimMemory, a_tensor_map_past_its_binding_is_refused_at_launch) {
    auto runtime = make_runtime();
    Client client = runtime->client(0);
    Handle small = allocate(client, 64);
    Status launched = client.launch("tiled_copy", LaunchConfig::linear(1),
                                    {LaunchArgument{small, AccessMode::Read, TensorMapDescriptor{{20, 6}, {96}, {8, 4}, 4}},
                                     LaunchArgument{small, AccessMode::Write, std::nullopt}});
    ASSERT_FALSE(launched);
    EXPECT_EQ(launched.error().kind(), ErrorKind::InvalidArgument);
}

}  // namespace
}  // namespace tandem::sim
