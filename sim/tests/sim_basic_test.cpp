#include "sim_test_support.hpp"

#include <unistd.h>

namespace tandem::sim {
namespace {

using namespace testing;

TEST(SimRuntime, a_fill_kernel_writes_bytes_the_host_reads_back) {
    auto runtime = make_runtime();
    Client client = runtime->client(0);
    Handle buffer = allocate(client, 1000);
    ASSERT_TRUE(client.launch("fill", LaunchConfig::linear(1000), {out(buffer)}, KernelArgs().u64(0xab)));
    auto bytes = client.read(buffer);
    ASSERT_TRUE(bytes) << bytes.error().report();
    EXPECT_EQ(bytes->size(), 1000u);
    EXPECT_TRUE(std::all_of(bytes->begin(), bytes->end(), [](std::byte b) { return b == std::byte{0xab}; }));
}

TEST(SimRuntime, a_write_of_no_bytes_into_an_empty_view_changes_nothing) {
    // Found by the client-calls fuzzer: the write copied from the null data of an empty span.
    auto runtime = make_runtime();
    Client client = runtime->client(0);
    Handle buffer = allocate(client, 8);
    ASSERT_TRUE(client.write(buffer, bytes_of(std::vector<std::uint8_t>(8, 5))));
    Result<Handle> empty = buffer.add_offset_start(8);
    ASSERT_TRUE(empty) << empty.error().report();
    ASSERT_EQ(empty->size_in_use(), 0u);
    ASSERT_TRUE(client.write(*empty, std::span<const std::byte>{}));
    auto bytes = client.read(buffer);
    ASSERT_TRUE(bytes) << bytes.error().report();
    EXPECT_EQ(values_of<std::uint8_t>(*bytes), std::vector<std::uint8_t>(8, 5));
}

TEST(SimRuntime, axpy_computes_on_the_simulator) {
    auto runtime = make_runtime();
    Client client = runtime->client(0);
    Handle x = allocate(client, 4 * 64);
    Handle y = allocate(client, 4 * 64);
    ASSERT_TRUE(client.write(x, bytes_of(std::vector<float>(64, 2.0f))));
    ASSERT_TRUE(client.write(y, bytes_of(std::vector<float>(64, 1.0f))));
    ASSERT_TRUE(client.launch("axpy", LaunchConfig::linear(64, 16), {in(x), inout(y)}, KernelArgs().f64(3.0)));
    auto bytes = client.read(y);
    ASSERT_TRUE(bytes) << bytes.error().report();
    EXPECT_EQ(values_of<float>(*bytes), std::vector<float>(64, 7.0f));
}

TEST(SimRuntime, a_launch_over_the_launch_limits_is_refused_as_on_a_gpu_and_changes_nothing) {
    auto runtime = make_runtime();
    Client client = runtime->client(0);
    Handle input = allocate(client, 64);
    Handle output = allocate(client, 64);
    ASSERT_TRUE(client.write(input, bytes_of(std::vector<std::uint8_t>(64, 3))));
    ASSERT_TRUE(client.write(output, bytes_of(std::vector<std::uint8_t>(64, 5))));
    std::vector<LaunchArgument> arguments{in(input), out(output)};
    arguments.resize(max_launch_resources + 1, in(input));
    Status refused = client.launch("copy", LaunchConfig::linear(64), arguments);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(refused.error().message().find("at most 8 resources; this one binds 9"),
              std::string::npos)
        << refused.error().report();
    const TensorMapDescriptor map{{16}, {}, {16}, 4};
    refused = client.launch("tiled_copy", LaunchConfig::linear(1),
                            {LaunchArgument{input, AccessMode::Read, map},
                             LaunchArgument{output, AccessMode::Write, map},
                             LaunchArgument{input, AccessMode::Read, map}});
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(refused.error().message().find("at most 2 tensor maps; this one binds 3"),
              std::string::npos)
        << refused.error().report();
    auto bytes = client.read(output);  // Neither ran, nor claimed its output.
    ASSERT_TRUE(bytes) << bytes.error().report();
    EXPECT_EQ(values_of<std::uint8_t>(*bytes), std::vector<std::uint8_t>(64, 5));

    arguments.pop_back();  // At the limit: runs.
    ASSERT_TRUE(client.launch("copy", LaunchConfig::linear(64), arguments));
    bytes = client.read(output);
    ASSERT_TRUE(bytes) << bytes.error().report();
    EXPECT_EQ(values_of<std::uint8_t>(*bytes), std::vector<std::uint8_t>(64, 3));
}

TEST(SimRuntime, a_failed_kernel_claims_its_outputs_and_a_consumer_is_skipped) {
    auto runtime = make_runtime();
    Client client = runtime->client(0);
    Handle a = allocate(client, 64);
    Handle b = allocate(client, 64);
    ASSERT_TRUE(client.launch("fail", LaunchConfig::linear(1), {out(a)}, KernelArgs().u64(42)));
    ASSERT_TRUE(client.launch("copy", LaunchConfig::linear(64), {in(a), out(b)}));
    auto read = client.read(b);
    ASSERT_FALSE(read);
    const UnwrittenDetails* details = unwritten(read.error());
    ASSERT_NE(details, nullptr) << read.error().report();
    ASSERT_EQ(details->chain.size(), 1u);
    EXPECT_EQ(details->chain[0].kernel, "copy");
    const auto* root = details->root->details_as<KernelFailedDetails>();
    ASSERT_NE(root, nullptr);
    EXPECT_EQ(root->code, 42u);
    EXPECT_EQ(root->kernel, "fail");
}

TEST(SimRuntime, segments_are_named_for_the_run_and_gone_from_dev_shm_once_mapped) {
    auto runtime = make_runtime();
    const std::vector<std::string> names = runtime->segment_names();
    ASSERT_EQ(names.size(), 2u);
    for (const std::string& name : names) {
        EXPECT_TRUE(name.starts_with("tandem-" + std::to_string(::getpid()) + "-")) << name;
        struct stat status{};
        EXPECT_NE(::stat(("/dev/shm/" + name).c_str(), &status), 0)
            << name << " is still in /dev/shm while its runtime lives";
    }
    // The memory is there all the same.
    Client client = runtime->client(0);
    Handle handle = allocate(client, 4096);
    ASSERT_TRUE(client.write(handle, std::vector<std::byte>(4096, std::byte{5})));
    auto bytes = client.read(handle);
    ASSERT_TRUE(bytes) << bytes.error().report();
    EXPECT_EQ(bytes->at(4095), std::byte{5});
}

}  // namespace
}  // namespace tandem::sim
