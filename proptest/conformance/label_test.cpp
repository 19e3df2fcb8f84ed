// Labels of allocations and streams, on every backend. The oracle is the report's own text: a
// labelled thing is named by its id and its label ("memory #3 'weights'", "stream 2 'copy-in'"),
// an unlabelled one by its id alone, exactly as before labels existed.

#include "support.hpp"

#include <string>

namespace tandem::conformance {
namespace {

template <typename Backend>
class Labels : public Conformance<Backend> {};
TYPED_TEST_SUITE(Labels, Backends, BackendNames);

/// "memory #N" for `handle`'s allocation, as a report names it without a label.
std::string memory_number(const Handle& handle) {
    return "memory #" + std::to_string(handle.memory_id().count());
}

TYPED_TEST(Labels, a_skip_chain_names_the_labelled_memory_a_copy_on_another_device_needed) {
    TANDEM_RUNTIME(runtime, 2);
    Client owner = runtime->client(0);
    Client peer = runtime->client(1);
    Result<Handle> weights = owner.allocate(64, {.label = "weights"});
    ASSERT_TRUE(weights) << weights.error().report();
    Handle source = this->share(owner, *weights, peer);
    this->fail(owner, source, 31);
    ASSERT_TRUE(owner.sync());
    Result<Handle> staging = peer.allocate(64, {.label = "staging"});
    ASSERT_TRUE(staging) << staging.error().report();
    this->copy_kernel(peer, source, *staging);

    std::optional<Error> error = this->read_error(peer, *staging);
    ASSERT_TRUE(error);
    const UnwrittenDetails* details = unwritten(*error);
    ASSERT_NE(details, nullptr) << error->report();
    ASSERT_EQ(details->chain.size(), 1u) << error->report();
    const std::string needed = memory_number(source) + " 'weights' bytes [0, 64)";
    EXPECT_EQ(to_string(details->chain[0].needed), needed);
    const std::string line =
        "skipped 'copy' on " + to_string(peer.service()) + ": needed " + needed;
    EXPECT_NE(error->report().find(line), std::string::npos) << error->report();
}

TYPED_TEST(Labels, a_kernel_failing_on_a_labelled_stream_is_reported_with_the_streams_label) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Result<StreamId> copy_in = client.create_stream("copy-in");
    ASSERT_TRUE(copy_in) << copy_in.error().report();
    EXPECT_EQ(client.label(*copy_in), "copy-in");
    EXPECT_EQ(client.label(client.default_stream()), "");
    Handle buffer = this->allocate(client, 64, *copy_in);
    this->fail(client, buffer, 5, *copy_in);
    ASSERT_TRUE(client.sync());

    std::optional<Error> error = this->read_error(client, buffer);
    ASSERT_TRUE(error);
    const auto* failed = root_of(*error)->details_as<KernelFailedDetails>();
    ASSERT_NE(failed, nullptr) << error->report();
    EXPECT_EQ(failed->stream, *copy_in);
    const std::string stream = "stream " + std::to_string(copy_in->value) + " 'copy-in'";
    EXPECT_EQ(stream_name(client.service(), *copy_in), stream);
    EXPECT_EQ(root_of(*error)->message(),
              "kernel 'fail' failed with code 5 on " + to_string(client.service()) + ", " + stream);
}

TYPED_TEST(Labels, a_bad_label_is_refused_naming_the_problem_and_nothing_is_made) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Result<StreamId> before = client.create_stream();
    ASSERT_TRUE(before) << before.error().report();
    Result<MemoryUsage> usage = client.memory_usage();
    ASSERT_TRUE(usage) << usage.error().report();

    const std::string too_long(label_bytes_max + 1, 'a');
    Result<Handle> long_label = client.allocate(64, {.label = too_long});
    ASSERT_FALSE(long_label);
    EXPECT_EQ(long_label.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(long_label.error().message().find("a label of 65 bytes is longer than the 64"),
              std::string::npos)
        << long_label.error().message();
    Result<Handle> newline = client.allocate(64, {.label = "two\nlines"});
    ASSERT_FALSE(newline);
    EXPECT_EQ(newline.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(newline.error().message().find("byte 3 is 0x0a"), std::string::npos)
        << newline.error().message();
    Result<StreamId> quoted = client.create_stream("it's");
    ASSERT_FALSE(quoted);
    EXPECT_EQ(quoted.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(quoted.error().message().find("byte 2 is 0x27"), std::string::npos)
        << quoted.error().message();

    // Nothing was allocated, and no stream number was taken.
    Result<MemoryUsage> after = client.memory_usage();
    ASSERT_TRUE(after) << after.error().report();
    EXPECT_EQ(after->in_use_bytes, usage->in_use_bytes);
    Result<StreamId> next = client.create_stream();
    ASSERT_TRUE(next) << next.error().report();
    EXPECT_EQ(next->value, before->value + 1);
    // The longest label is a label.
    EXPECT_TRUE(client.allocate(64, {.label = std::string(label_bytes_max, 'b')}));
}

TYPED_TEST(Labels, a_label_goes_with_the_memory_or_stream_it_labels) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Result<StreamId> side = client.create_stream("side");
    ASSERT_TRUE(side) << side.error().report();
    std::optional<Handle> scratch;
    {
        Result<Handle> made = client.allocate(64, {.label = "scratch", .stream = *side});
        ASSERT_TRUE(made) << made.error().report();
        scratch = *made;
    }
    EXPECT_EQ(scratch->stream(), *side);
    EXPECT_EQ(scratch->label(), "scratch");
    const std::string number = memory_number(*scratch);
    const MemoryId id = scratch->memory_id();
    EXPECT_EQ(to_string(id), number + " 'scratch'");
    this->fill(client, *scratch, 3, *side);
    ASSERT_TRUE(client.sync());

    scratch.reset();
    ASSERT_TRUE(client.sync());  // The fill's hold on the memory is let go with its work.
    EXPECT_EQ(to_string(id), number);
    ASSERT_TRUE(client.destroy_stream(*side));
    EXPECT_EQ(client.label(*side), "");
    EXPECT_EQ(stream_name(client.service(), *side), "stream " + std::to_string(side->value));
}

}  // namespace
}  // namespace tandem::conformance
