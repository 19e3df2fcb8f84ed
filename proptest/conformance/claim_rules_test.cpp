// Claims, reads and work that writes, on one device: rules C2 to C11 on every backend.

#include "support.hpp"

namespace tandem::conformance {
namespace {

template <typename Backend>
class ClaimRules : public Conformance<Backend> {};
TYPED_TEST_SUITE(ClaimRules, Backends, BackendNames);

TYPED_TEST(ClaimRules, c3_a_partial_write_releases_only_the_bytes_it_covers) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle whole = this->allocate(client, 256);
    this->fail(client, whole, 3);
    this->fill(client, *whole.slice(64, 64), 1);
    EXPECT_EQ(this->read_bytes(client, *whole.slice(64, 64)), filled(64, 1));
    std::optional<Error> rest = this->read_error(client, *whole.slice(128, 128));
    ASSERT_TRUE(rest);
    EXPECT_EQ(root_code(*rest), 3u) << rest->report();
    EXPECT_TRUE(this->read_error(client, *whole.slice(0, 64)));
}

TYPED_TEST(ClaimRules, c2_claiming_bytes_again_makes_the_new_failure_their_only_claimant) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle whole = this->allocate(client, 128);
    this->fail(client, whole, 1);
    this->fail(client, *whole.slice(0, 64), 2);
    std::optional<Error> front = this->read_error(client, *whole.slice(0, 64));
    ASSERT_TRUE(front);
    EXPECT_EQ(root_code(*front), 2u) << front->report();
    std::optional<Error> both = this->read_error(client, whole);
    ASSERT_TRUE(both);
    ASSERT_EQ(both->kind(), ErrorKind::Several) << both->report();
    EXPECT_EQ(both->details_as<SeveralDetails>()->errors.size(), 2u);
}

TYPED_TEST(ClaimRules, c6_siblings_of_one_allocation_keep_their_own_claims) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle batch = this->allocate(client, 256);
    this->fill(client, batch, 0);
    this->fail(client, *batch.slice(0, 128), 9);
    EXPECT_TRUE(this->read_error(client, *batch.slice(0, 128)));
    EXPECT_EQ(this->read_bytes(client, *batch.slice(128, 128)), filled(128, 0));
}

TYPED_TEST(ClaimRules, c6_a_sync_that_names_handles_fails_exactly_on_claimed_bytes) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle good = this->allocate(client, 64);
    Handle bad = this->allocate(client, 64);
    this->fill(client, good, 1);
    this->fail(client, bad, 2);
    const Handle both[] = {good, bad};
    Status synced = client.sync(both);
    ASSERT_FALSE(synced);
    EXPECT_EQ(synced.error().kind(), ErrorKind::Unwritten);
    const Handle only_good[] = {good};
    EXPECT_TRUE(client.sync(only_good));
}

TYPED_TEST(ClaimRules, c7_a_skip_chain_reports_back_to_the_root_newest_hop_first) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle a = this->allocate(client, 64);
    Handle b = this->allocate(client, 64);
    Handle c = this->allocate(client, 64);
    Handle d = this->allocate(client, 64);
    this->fail(client, a, 77);
    this->copy_kernel(client, a, b);
    ASSERT_TRUE(client.launch("checksum", LaunchConfig::linear(1), {in(b), out(c)}));
    this->copy_kernel(client, c, d);
    std::optional<Error> error = this->read_error(client, d);
    ASSERT_TRUE(error);
    const UnwrittenDetails* details = unwritten(*error);
    ASSERT_NE(details, nullptr) << error->report();
    ASSERT_EQ(details->chain.size(), 3u) << error->report();
    EXPECT_EQ(details->chain[0].kernel, "copy");
    EXPECT_EQ(details->chain[1].kernel, "checksum");
    EXPECT_EQ(details->chain[2].kernel, "copy");
    EXPECT_EQ(details->chain[0].device, client.service());
    EXPECT_EQ(root_code(*error), 77u);
}

TYPED_TEST(ClaimRules, c8_a_failed_kernel_claims_its_write_set_naming_kernel_device_and_code) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle output = this->allocate(client, 64);
    this->fail(client, output, 42);
    std::optional<Error> error = this->read_error(client, output);
    ASSERT_TRUE(error);
    const auto* failed = root_of(*error)->details_as<KernelFailedDetails>();
    ASSERT_NE(failed, nullptr) << error->report();
    EXPECT_EQ(failed->kernel, "fail");
    EXPECT_EQ(failed->device, client.service());
    EXPECT_EQ(failed->stream, client.default_stream());
    EXPECT_EQ(failed->code, 42u);
}

TYPED_TEST(ClaimRules,
           c9_a_launch_with_a_claimed_input_takes_that_failure_and_writing_again_repairs) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle input = this->allocate(client, 64);
    Handle output = this->allocate(client, 64);
    this->fail(client, input, 5);
    this->copy_kernel(client, input, output);
    std::optional<Error> error = this->read_error(client, output);
    ASSERT_TRUE(error);
    EXPECT_EQ(root_code(*error), 5u) << error->report();
    // Pure outputs are never checked: writing the stale buffer again repairs it.
    ASSERT_TRUE(client.write(output, filled(64, 6)));
    EXPECT_EQ(this->read_bytes(client, output), filled(64, 6));
}

TYPED_TEST(ClaimRules, c10_a_refused_launch_claims_only_its_declared_outputs) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle input = this->allocate(client, 64);
    Handle output = this->allocate(client, 64);
    this->fill(client, input, 5);
    this->fill(client, output, 5);
    ASSERT_TRUE(client.launch("copy", LaunchConfig{Dim3{1, 1, 1}, Dim3{2048, 1, 1}},
                              {in(input), out(output)}));
    EXPECT_EQ(this->read_bytes(client, input), filled(64, 5));
    std::optional<Error> error = this->read_error(client, output);
    ASSERT_TRUE(error);
    EXPECT_EQ(root_of(*error)->kind(), ErrorKind::LaunchRefused) << error->report();
}

TYPED_TEST(ClaimRules, c10_an_unregistered_kernel_is_refused_like_a_compile_error) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle input = this->allocate(client, 64);
    Handle output = this->allocate(client, 64);
    this->fill(client, input, 1);
    // The call itself says so, and the launch still claims what it declared it writes.
    const Status launched =
        client.launch("no_such_kernel", LaunchConfig::linear(1), {in(input), out(output)});
    ASSERT_FALSE(launched) << "a launch of a kernel no one registered was taken";
    EXPECT_EQ(launched.error().kind(), ErrorKind::LaunchRefused) << launched.error().report();
    std::optional<Error> error = this->read_error(client, output);
    ASSERT_TRUE(error);
    EXPECT_EQ(root_of(*error)->kind(), ErrorKind::LaunchRefused) << error->report();
    EXPECT_EQ(this->read_bytes(client, input), filled(64, 1));
}

TYPED_TEST(ClaimRules, c10_an_unregistered_kernel_that_declares_no_output_is_refused_by_the_call) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle input = this->allocate(client, 64);
    this->fill(client, input, 3);
    // Nothing to claim, so the call's result is the only place the refusal can show.
    const Status launched = client.launch("emtpy", LaunchConfig::linear(1), {in(input)});
    ASSERT_FALSE(launched) << "a misspelt kernel with no outputs was silently taken";
    EXPECT_EQ(launched.error().kind(), ErrorKind::LaunchRefused);
    EXPECT_NE(launched.error().message().find("did you mean 'empty'"), std::string::npos)
        << launched.error().report();
    EXPECT_TRUE(client.sync());
    EXPECT_EQ(this->read_bytes(client, input), filled(64, 3));
}

TYPED_TEST(ClaimRules, c10_a_grid_whose_block_count_passes_64_bits_is_refused_not_empty) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle input = this->allocate(client, 64);
    Handle output = this->allocate(client, 64);
    this->fill(client, input, 2);
    this->fill(client, output, 2);
    // 2^31 * 2^31 * 4 blocks is 2^64: a product that wraps to 0 would read as a launch of
    // nothing, which changes no claim. It is a grid past every GPU's limits, refused (C10).
    const Dim3 grid{std::uint32_t{1} << 31, std::uint32_t{1} << 31, 4};
    EXPECT_NE(grid.count(), 0u);
    ASSERT_TRUE(client.launch("copy", LaunchConfig{grid, Dim3{1, 1, 1}}, {in(input), out(output)}));
    std::optional<Error> error = this->read_error(client, output);
    ASSERT_TRUE(error) << "the launch was taken for one of nothing";
    EXPECT_EQ(root_of(*error)->kind(), ErrorKind::LaunchRefused) << error->report();
    EXPECT_EQ(this->read_bytes(client, input), filled(64, 2));
}

TYPED_TEST(ClaimRules, c10_a_launch_of_zero_threads_changes_no_claim) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle stale = this->allocate(client, 64);
    Handle clean = this->allocate(client, 64);
    this->fail(client, stale, 4);
    this->fill(client, clean, 1);
    ASSERT_TRUE(client.launch("fill", LaunchConfig{Dim3{0, 1, 1}, Dim3{32, 1, 1}}, {out(stale)}));
    ASSERT_TRUE(client.launch("copy", LaunchConfig{Dim3{0, 1, 1}, Dim3{32, 1, 1}},
                              {in(stale), out(clean)}));
    EXPECT_TRUE(this->read_error(client, stale));
    EXPECT_EQ(this->read_bytes(client, clean), filled(64, 1));
}

TYPED_TEST(ClaimRules, c11_chains_that_share_no_allocation_never_affect_each_other) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    const StreamId side = *client.create_stream();
    Handle a = this->allocate(client, 64);
    Handle b = this->allocate(client, 64);
    Handle x = this->allocate(client, 64);
    Handle y = this->allocate(client, 64);
    this->fail(client, a, 1);
    this->copy_kernel(client, a, b);
    this->fill(client, x, 2, side);
    this->copy_kernel(client, x, y, side);
    EXPECT_TRUE(this->read_error(client, b));
    EXPECT_EQ(this->read_bytes(client, y), filled(64, 2));
}

TYPED_TEST(ClaimRules, c4_c5_freed_memory_sheds_its_claims_and_the_graph_drains) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    {
        Handle a = this->allocate(client, 64);
        Handle b = this->allocate(client, 64);
        this->fail(client, a, 1);
        this->copy_kernel(client, a, b);
        ASSERT_TRUE(client.sync());
        EXPECT_FALSE(runtime->drained());
    }
    ASSERT_TRUE(runtime->sync_all());
    EXPECT_TRUE(runtime->drained());
    // A new occupant of the same bytes starts clean.
    Handle fresh = this->allocate(client, 64);
    ASSERT_TRUE(client.write(fresh, filled(64, 3)));
    EXPECT_EQ(this->read_bytes(client, fresh), filled(64, 3));
}

}  // namespace
}  // namespace tandem::conformance
