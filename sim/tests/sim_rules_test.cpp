// The claim rules end to end on one simulated device.

#include "sim_test_support.hpp"

#include <cmath>

namespace tandem::sim {
namespace {

using namespace testing;

class SimRules : public ::testing::Test {
protected:
    std::shared_ptr<SimRuntime> runtime = make_runtime();
    Client client = runtime->client(0);

    void fill(const Handle& handle, std::uint8_t value) {
        ASSERT_TRUE(client.launch("fill", LaunchConfig::linear(handle.size_in_use()), {out(handle)},
                                  KernelArgs().u64(value)));
    }
    void fail(const Handle& handle, std::uint32_t code) {
        ASSERT_TRUE(
            client.launch("fail", LaunchConfig::linear(1), {out(handle)}, KernelArgs().u64(code)));
    }
    std::optional<Error> read_error(const Handle& handle) {
        auto read = client.read(handle);
        if (read) {
            return std::nullopt;
        }
        return read.error();
    }
};

TEST_F(SimRules, a_partial_write_releases_only_the_bytes_it_covers) {
    Handle whole = allocate(client, 256);
    fail(whole, 3);
    fill(*whole.slice(64, 64), 1);
    EXPECT_FALSE(read_error(*whole.slice(64, 64)));
    ASSERT_TRUE(read_error(*whole.slice(0, 64)));
    ASSERT_TRUE(read_error(whole));
    EXPECT_EQ(unwritten(*read_error(*whole.slice(128, 128)))
                  ->root->details_as<KernelFailedDetails>()
                  ->code,
              3u);
}

TEST_F(SimRules, siblings_of_one_allocation_keep_their_own_claims) {
    Handle batch = allocate(client, 256);
    Handle first = *batch.slice(0, 128);
    Handle second = *batch.slice(128, 128);
    fill(batch, 0);
    fail(first, 9);
    EXPECT_TRUE(read_error(first));
    EXPECT_FALSE(read_error(second));
}

TEST_F(SimRules, a_refused_launch_claims_only_its_declared_outputs) {
    Handle input = allocate(client, 64);
    Handle output = allocate(client, 64);
    fill(input, 5);
    fill(output, 5);
    ASSERT_TRUE(client.launch("copy", LaunchConfig{Dim3{1, 1, 1}, Dim3{2048, 1, 1}},
                              {in(input), out(output)}));
    EXPECT_FALSE(read_error(input));
    std::optional<Error> error = read_error(output);
    ASSERT_TRUE(error);
    EXPECT_EQ(unwritten(*error)->root->kind(), ErrorKind::LaunchRefused);
}

TEST_F(SimRules, an_unknown_kernel_is_refused_like_a_compile_error) {
    Handle output = allocate(client, 64);
    fill(output, 1);
    ASSERT_TRUE(client.launch("no_such_kernel", LaunchConfig::linear(1), {out(output)}));
    std::optional<Error> error = read_error(output);
    ASSERT_TRUE(error);
    EXPECT_EQ(unwritten(*error)->root->kind(), ErrorKind::LaunchRefused);
}

TEST_F(SimRules, a_launch_with_zero_threads_changes_no_claim) {
    Handle stale = allocate(client, 64);
    Handle clean = allocate(client, 64);
    fail(stale, 4);
    fill(clean, 1);
    ASSERT_TRUE(client.launch("fill", LaunchConfig{Dim3{0, 1, 1}, Dim3{32, 1, 1}}, {out(stale)}));
    ASSERT_TRUE(client.launch("copy", LaunchConfig{Dim3{0, 1, 1}, Dim3{32, 1, 1}},
                              {in(stale), out(clean)}));
    EXPECT_TRUE(read_error(stale));
    EXPECT_FALSE(read_error(clean));
}

// Found by the client-calls fuzzer: linear(n, 0) divided by zero.
TEST_F(SimRules, a_launch_of_blocks_without_threads_is_refused_and_claims_its_outputs) {
    Handle output = allocate(client, 64);
    fill(output, 1);
    ASSERT_TRUE(
        client.launch("fill", LaunchConfig::linear(64, 0), {out(output)}, KernelArgs().u64(2)));
    auto error = read_error(output);
    ASSERT_TRUE(error);
    EXPECT_EQ(unwritten(*error)->root->kind(), ErrorKind::LaunchRefused) << error->report();
}

// A grid or block past a GPU's limits ran on the simulator, and a GPU refuses it: the simulator
// refuses it too, as the GPU backend does, before the driver sees it.
TEST_F(SimRules, a_launch_past_a_gpus_grid_or_block_dimensions_is_refused_and_claims_its_outputs) {
    Handle input = allocate(client, 64);
    fill(input, 5);
    const std::pair<LaunchConfig, const char*> refused[] = {
        {LaunchConfig{Dim3{1, max_grid_dims.y + 1, 1}, Dim3{32, 1, 1}}, "over the limit"},
        {LaunchConfig{Dim3{1, 1, 1}, Dim3{1, 1, max_block_dims.z * 2}}, "over the limit"},
        {LaunchConfig::linear(UINT64_MAX, 256),
         "over the limit"},  // More blocks than a grid holds.
        {LaunchConfig{Dim3{max_grid_x, 65535, 65535}, Dim3{1024, 1, 1}}, "2^64 - 1 threads"},
    };
    for (const auto& [config, reason] : refused) {
        Handle output = allocate(client, 64);
        fill(output, 1);
        ASSERT_TRUE(client.launch("copy", config, {in(input), out(output)}));
        EXPECT_FALSE(read_error(input));
        std::optional<Error> error = read_error(output);
        ASSERT_TRUE(error) << reason;
        const Error& root = *unwritten(*error)->root;
        ASSERT_EQ(root.kind(), ErrorKind::LaunchRefused);
        EXPECT_NE(root.message().find(reason), std::string::npos) << root.message();
    }
}

// Found by the client-calls fuzzer: a NaN probability was accepted.
TEST_F(SimRules, a_fault_probability_outside_zero_to_one_or_nan_is_invalid) {
    for (double probability : {-0.5, 1.5, std::nan("")}) {
        EXPECT_EQ(client.inject(KernelFault{"fill", 0, probability, 1}).error().kind(),
                  ErrorKind::InvalidArgument);
    }
    EXPECT_TRUE(client.inject(KernelFault{"fill", 0, 0.0, 1}));
}

// Found by the client-calls fuzzer: a delay of 2^64 - 1 steps hung the next sync.
TEST_F(SimRules, a_stream_delay_past_its_bound_is_invalid) {
    const StreamId side = *client.create_stream();
    EXPECT_EQ(client.inject(StreamDelay{side, UINT64_MAX}).error().kind(),
              ErrorKind::InvalidArgument);
    ASSERT_TRUE(client.inject(StreamDelay{side, StreamDelay::max_steps}));
    EXPECT_EQ(client.inject(StreamDelay{side, 1}).error().kind(), ErrorKind::InvalidArgument);
}

TEST_F(SimRules, writing_a_stale_buffer_again_repairs_it) {
    Handle buffer = allocate(client, 64);
    fail(buffer, 1);
    EXPECT_TRUE(read_error(buffer));
    std::vector<std::byte> fresh(64, std::byte{7});
    ASSERT_TRUE(client.write(buffer, fresh));
    auto read = client.read(buffer);
    ASSERT_TRUE(read) << read.error().report();
    EXPECT_EQ(*read, fresh);
}

TEST_F(SimRules, a_skip_chain_of_three_hops_reports_back_to_the_root) {
    Handle a = allocate(client, 64);
    Handle b = allocate(client, 64);
    Handle c = allocate(client, 64);
    Handle d = allocate(client, 64);
    fail(a, 77);
    ASSERT_TRUE(client.launch("copy", LaunchConfig::linear(64), {in(a), out(b)}));
    ASSERT_TRUE(client.launch("checksum", LaunchConfig::linear(1), {in(b), out(c)}));
    ASSERT_TRUE(client.launch("copy", LaunchConfig::linear(64), {in(c), out(d)}));
    std::optional<Error> error = read_error(d);
    ASSERT_TRUE(error);
    const UnwrittenDetails* details = unwritten(*error);
    ASSERT_EQ(details->chain.size(), 3u);
    EXPECT_EQ(details->chain[0].kernel, "copy");
    EXPECT_EQ(details->chain[1].kernel, "checksum");
    EXPECT_EQ(details->chain[2].kernel, "copy");
    EXPECT_EQ(details->root->details_as<KernelFailedDetails>()->code, 77u);
    EXPECT_NE(error->report().find("skipped 'checksum'"), std::string::npos) << error->report();
}

TEST_F(SimRules, chains_that_share_no_allocation_never_affect_each_other) {
    auto second = client.create_stream();
    ASSERT_TRUE(second);
    Handle a = allocate(client, 64);
    Handle b = allocate(client, 64);
    Handle x = allocate(client, 64);
    Handle y = allocate(client, 64);
    fail(a, 1);
    ASSERT_TRUE(client.launch("copy", LaunchConfig::linear(64), {in(a), out(b)}));
    ASSERT_TRUE(
        client.launch("fill", LaunchConfig::linear(64), {out(x)}, KernelArgs().u64(2), *second));
    ASSERT_TRUE(
        client.launch("copy", LaunchConfig::linear(64), {in(x), out(y)}, KernelArgs(), *second));
    EXPECT_TRUE(read_error(b));
    auto read = client.read(y);
    ASSERT_TRUE(read) << read.error().report();
    EXPECT_EQ(read->front(), std::byte{2});
}

TEST_F(SimRules, a_sync_that_names_handles_fails_on_claimed_bytes) {
    Handle good = allocate(client, 64);
    Handle bad = allocate(client, 64);
    fill(good, 1);
    fail(bad, 2);
    const Handle both[] = {good, bad};
    Status synced = client.sync(both);
    ASSERT_FALSE(synced);
    EXPECT_EQ(synced.error().kind(), ErrorKind::Unwritten);
    const Handle only_good[] = {good};
    EXPECT_TRUE(client.sync(only_good));
}

TEST_F(SimRules, a_read_of_several_failures_names_each_once) {
    Handle whole = allocate(client, 128);
    fail(*whole.slice(0, 64), 1);
    fail(*whole.slice(64, 64), 2);
    std::optional<Error> error = read_error(whole);
    ASSERT_TRUE(error);
    ASSERT_EQ(error->kind(), ErrorKind::Several);
    EXPECT_EQ(error->details_as<SeveralDetails>()->errors.size(), 2u);
}

TEST_F(SimRules, a_clean_capture_replays_and_releases_its_write_set) {
    Handle input = allocate(client, 64);
    Handle output = allocate(client, 64);
    fill(input, 3);
    StreamId stream = client.default_stream();
    ASSERT_TRUE(client.begin_capture(stream));
    ASSERT_TRUE(client.launch("copy", LaunchConfig::linear(64), {in(input), out(output)}));
    auto graph = client.end_capture(stream);
    ASSERT_TRUE(graph) << graph.error().report();
    EXPECT_EQ(graph->write_set().size(), 1u);
    fail(output, 5);
    fill(input, 4);
    ASSERT_TRUE(client.replay(*graph, stream));
    auto read = client.read(output);
    ASSERT_TRUE(read) << read.error().report();
    EXPECT_EQ(read->front(), std::byte{4});
}

TEST_F(SimRules, a_doomed_capture_is_refused_and_claims_what_it_recorded) {
    Handle input = allocate(client, 64);
    Handle recorded = allocate(client, 64);
    Handle failed = allocate(client, 64);
    fill(input, 3);
    StreamId stream = client.default_stream();
    ASSERT_TRUE(client.begin_capture(stream));
    ASSERT_TRUE(client.launch("copy", LaunchConfig::linear(64), {in(input), out(recorded)}));
    fail(failed, 6);
    auto graph = client.end_capture(stream);
    ASSERT_FALSE(graph);
    EXPECT_EQ(graph.error().kind(), ErrorKind::LaunchRefused);
    std::optional<Error> error = read_error(recorded);
    ASSERT_TRUE(error);
    EXPECT_EQ(unwritten(*error)->root->kind(), ErrorKind::LaunchRefused);
}

TEST_F(SimRules, a_failed_replay_claims_its_write_set) {
    Handle output = allocate(client, 64);
    StreamId stream = client.default_stream();
    ASSERT_TRUE(client.inject(KernelFault{"fill", 2, 1.0, 8}));
    ASSERT_TRUE(client.begin_capture(stream));
    fill(output, 1);
    auto graph = client.end_capture(stream);
    ASSERT_TRUE(graph) << graph.error().report();
    ASSERT_FALSE(read_error(output));
    ASSERT_TRUE(client.replay(*graph, stream));
    std::optional<Error> error = read_error(output);
    ASSERT_TRUE(error);
    EXPECT_EQ(unwritten(*error)->root->kind(), ErrorKind::KernelFailed);
}

TEST_F(SimRules, dropping_every_handle_leaves_the_graph_empty) {
    {
        Handle a = allocate(client, 64);
        Handle b = allocate(client, 64);
        fail(a, 1);
        ASSERT_TRUE(client.launch("copy", LaunchConfig::linear(64), {in(a), out(b)}));
        ASSERT_TRUE(client.sync());
        EXPECT_FALSE(runtime->drained());
    }
    ASSERT_TRUE(runtime->sync_all());
    EXPECT_TRUE(runtime->drained());
}

}  // namespace
}  // namespace tandem::sim
