// Streams: as many as a program needs (no small fixed limit), each destroyed when the program is
// done with it, after its work has run and settled; a destroyed stream's id names nothing again.

#include "support.hpp"

namespace tandem::conformance {
namespace {

template <typename Backend>
class Streams : public Conformance<Backend> {};
TYPED_TEST_SUITE(Streams, Backends, BackendNames);

TYPED_TEST(Streams, a_device_takes_more_than_a_hundred_streams_each_running_its_own_work) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    constexpr std::size_t count = 130;
    std::vector<StreamId> streams;
    std::vector<Handle> handles;
    for (std::size_t index = 0; index < count; ++index) {
        Result<StreamId> stream = client.create_stream();
        ASSERT_TRUE(stream) << "stream " << index << ": " << stream.error().report();
        streams.push_back(*stream);
        handles.push_back(this->allocate(client, 16, *stream));
        this->fill(client, handles.back(), static_cast<std::uint8_t>(index), *stream);
    }
    for (std::size_t index = 0; index < count; index += 43) {
        EXPECT_EQ(this->read_bytes(client, handles[index]),
                  filled(16, static_cast<std::uint8_t>(index)));
    }
}

TYPED_TEST(Streams, destroying_a_stream_waits_for_its_work_then_its_id_names_nothing) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Result<StreamId> side = client.create_stream();
    ASSERT_TRUE(side);
    Handle written = this->allocate(client, 64);
    Handle failed = this->allocate(client, 64);
    ASSERT_TRUE(client.inject(StreamDelay{*side, 1000}));
    this->fill(client, written, 4, *side);
    this->fail(client, failed, 8, *side);
    ASSERT_TRUE(client.destroy_stream(*side));
    EXPECT_EQ(this->read_bytes(client, written), filled(64, 4));
    std::optional<Error> read = this->read_error(client, failed);
    ASSERT_TRUE(read);
    EXPECT_EQ(root_code(*read), 8u) << read->report();
    // Every call naming it is refused, and nothing is enqueued.
    EXPECT_EQ(client.launch("fill", LaunchConfig::linear(64), {out(written)}, KernelArgs().u64(9),
                            *side).error().kind(),
              ErrorKind::InvalidArgument);
    EXPECT_EQ(client.record_event(*side).error().kind(), ErrorKind::InvalidArgument);
    EXPECT_EQ(client.allocate(16, *side).error().kind(), ErrorKind::InvalidArgument);
    EXPECT_EQ(client.destroy_stream(*side).error().kind(), ErrorKind::InvalidArgument);
    EXPECT_EQ(this->read_bytes(client, written), filled(64, 4));
    Result<StreamId> next = client.create_stream();
    ASSERT_TRUE(next);
    EXPECT_GT(next->value, side->value) << "a destroyed stream's id was reused";
}

TYPED_TEST(Streams, memory_allocated_on_a_destroyed_stream_is_written_and_copied_on_the_default) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Result<StreamId> side = client.create_stream();
    ASSERT_TRUE(side);
    Handle target = this->allocate(client, 64, *side);
    Handle source = this->allocate(client, 64, *side);
    this->fill(client, target, 3, *side);
    ASSERT_TRUE(client.destroy_stream(*side));
    // The calls that name no stream use the handle's, which is gone: the default stream then.
    ASSERT_TRUE(client.write(source, filled(64, 7)));
    EXPECT_EQ(this->read_bytes(client, source), filled(64, 7));
    ASSERT_TRUE(client.copy(source, target));
    EXPECT_EQ(this->read_bytes(client, target), filled(64, 7));
    // A call that names the stream is still refused.
    EXPECT_EQ(client.copy(source, target, *side).error().kind(), ErrorKind::InvalidArgument);
}

TYPED_TEST(Streams, what_a_destroyed_stream_left_is_still_waited_on_and_replayed) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Result<StreamId> side = client.create_stream();
    ASSERT_TRUE(side);
    Handle source = this->allocate(client, 64, *side);
    Handle target = this->allocate(client, 64);
    this->fill(client, source, 5, *side);
    // An event and an asynchronous read recorded on it, and a window captured on it.
    Result<Event> event = client.record_event(*side);
    ASSERT_TRUE(event) << event.error().report();
    std::vector<std::byte> into(64);
    Result<PendingRead> read = client.read_async(source, into, *side);
    ASSERT_TRUE(read) << read.error().report();
    ASSERT_TRUE(client.begin_capture(*side));
    ASSERT_TRUE(client.copy(source, target, *side));
    Result<CaptureGraph> graph = client.end_capture(*side);
    ASSERT_TRUE(graph) << graph.error().report();
    ASSERT_TRUE(client.destroy_stream(*side));
    // All of it ran before the stream went: the waits find it done.
    EXPECT_TRUE(client.wait_event(client.default_stream(), *event));
    EXPECT_TRUE(client.wait(*event));
    Result<bool> complete = client.event_complete(*event);
    ASSERT_TRUE(complete) << complete.error().report();
    EXPECT_TRUE(*complete);
    EXPECT_TRUE(client.wait(*read));
    EXPECT_EQ(into, filled(64, 5));
    // The window's graph replays on another stream.
    ASSERT_TRUE(client.replay(*graph, client.default_stream()));
    EXPECT_EQ(this->read_bytes(client, target), filled(64, 5));
}

TYPED_TEST(Streams, memory_allocated_on_a_destroyed_stream_goes_back_when_dropped) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Result<StreamId> side = client.create_stream();
    ASSERT_TRUE(side);
    const std::uint64_t before = client.memory_usage()->in_use_bytes;
    std::optional<Handle> handle = this->allocate(client, 4096, *side);
    this->fill(client, *handle, 1, *side);
    ASSERT_TRUE(client.destroy_stream(*side));
    EXPECT_EQ(client.memory_usage()->in_use_bytes, before + 4096);
    handle.reset();
    ASSERT_TRUE(client.sync());
    EXPECT_EQ(client.memory_usage()->in_use_bytes, before);
}

TYPED_TEST(Streams, the_default_stream_and_a_capturing_stream_are_not_destroyed) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    EXPECT_EQ(client.destroy_stream(client.default_stream()).error().kind(),
              ErrorKind::InvalidArgument);
    Result<StreamId> side = client.create_stream();
    ASSERT_TRUE(side);
    ASSERT_TRUE(client.begin_capture(*side));
    EXPECT_EQ(client.destroy_stream(*side).error().kind(), ErrorKind::InvalidArgument);
    Handle handle = this->allocate(client, 32);
    this->fill(client, handle, 6, *side);  // Still a stream, still capturing.
    ASSERT_TRUE(client.end_capture(*side));
    EXPECT_TRUE(client.destroy_stream(*side));
    EXPECT_EQ(client.destroy_stream(StreamId{999}).error().kind(), ErrorKind::InvalidArgument);
    EXPECT_EQ(this->read_bytes(client, handle), filled(32, 6));
}

TYPED_TEST(Streams, a_device_refuses_streams_past_its_named_bound) {
    if (!TypeParam::cheap_streams) {
        GTEST_SKIP() << "creates device_streams_max streams: a CUDA stream each";
    }
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    for (std::uint64_t created = 1; created < device_streams_max; ++created) {
        ASSERT_TRUE(client.create_stream()) << "stream " << created + 1;
    }
    Result<StreamId> past = client.create_stream();
    ASSERT_FALSE(past);
    EXPECT_EQ(past.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(past.error().message().find("65536"), std::string::npos) << past.error().report();
}

}  // namespace
}  // namespace tandem::conformance
