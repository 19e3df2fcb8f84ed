// Waits of the host that wait only for what they need: a read for the writers of its bytes, a
// sync for its device, a stream sync for its stream, a wait for one event; and what each then
// knows (C6). A stream held back stands for unrelated work still running: the wait must return
// while it is, where a backend runs work after it is enqueued at all. Where waits leave the
// runtime to other threads (CUDA, the simulator's threads mode) the stream is held back by work
// that waits for a gate the test opens, never by a delay assumed to outlast the test's calls;
// on the deterministic simulator by a delay in scheduler steps, which no host time shortens.

#include "foreign.hpp"
#include "support.hpp"

namespace tandem::conformance {
namespace {

template <typename Backend>
class HostWaits : public Conformance<Backend> {
protected:
    /// Steps a held-back stream waits: long beside a read, short enough for a test to wait out.
    static constexpr std::uint64_t held_back_steps = 200'000;

    /// A new stream of `client`, held back until `gate` opens (or by `held_back_steps` where
    /// gates do not apply), with `handle` filled with `value` on it, and the event after that
    /// fill. The kernels the tests launch run once first: a GPU loads a kernel at its first
    /// launch, and that load may wait for the kernels already running, the gate among them.
    Event behind_a_gate(Client& client, const Handle& handle, std::uint8_t value, Gate& gate) {
        this->fill(client, handle, 0);
        this->fail(client, handle, 1);
        EXPECT_TRUE(client.sync());
        Result<StreamId> side = client.create_stream();
        EXPECT_TRUE(side);
        if constexpr (Backend::waits_apart) {
            EXPECT_TRUE(client.enqueue(ExternalWork{"gate", {}, gate.work()}, *side));
        } else {
            EXPECT_TRUE(client.inject(StreamDelay{*side, held_back_steps}));
        }
        this->fill(client, handle, value, *side);
        Result<Event> event = client.record_event(*side);
        EXPECT_TRUE(event);
        return *event;
    }
    /// Whether `event` is complete, failing the test on an error.
    static bool complete(Client& client, const Event& event) {
        Result<bool> done = client.event_complete(event);
        EXPECT_TRUE(done) << done.error().report();
        return done && *done;
    }
};
TYPED_TEST_SUITE(HostWaits, Backends, BackendNames);

TYPED_TEST(HostWaits, a_read_waits_for_the_writers_of_its_bytes_not_for_another_stream) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle slow = this->allocate(client, 64);
    Handle quick = this->allocate(client, 64);
    Gate gate;
    const Event behind = this->behind_a_gate(client, slow, 1, gate);
    this->fill(client, quick, 7);
    EXPECT_EQ(this->read_bytes(client, quick), filled(64, 7));
    if (!TypeParam::runs_at_enqueue) {
        EXPECT_FALSE(this->complete(client, behind)) << "the read waited for the held-back stream";
    }
    gate.open();
    EXPECT_EQ(this->read_bytes(client, slow), filled(64, 1));
    ASSERT_TRUE(client.wait(behind));  // The read waited for the fill, not the event after it.
    EXPECT_TRUE(this->complete(client, behind));
}

TYPED_TEST(HostWaits, a_stream_sync_waits_for_its_stream_and_settles_its_work) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle slow = this->allocate(client, 64);
    Handle failed = this->allocate(client, 64);
    Gate gate;
    const Event behind = this->behind_a_gate(client, slow, 1, gate);
    this->fail(client, failed, 21);
    ASSERT_TRUE(client.sync_stream(client.default_stream()));  // Failed work does not fail it.
    if (!TypeParam::runs_at_enqueue) {
        EXPECT_FALSE(this->complete(client, behind)) << "the sync waited for another stream";
    }
    std::optional<Error> read = this->read_error(client, failed);
    ASSERT_TRUE(read);
    EXPECT_EQ(root_code(*read), 21u) << read->report();
    gate.open();
    ASSERT_TRUE(client.sync_stream(behind.stream()));
    EXPECT_TRUE(this->complete(client, behind));
}

TYPED_TEST(HostWaits, waiting_for_an_event_settles_the_work_before_it) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle failed = this->allocate(client, 64);
    Result<StreamId> side = client.create_stream();
    ASSERT_TRUE(side);
    ASSERT_TRUE(client.inject(StreamDelay{*side, 1000}));
    this->fail(client, failed, 33, *side);
    Result<Event> event = client.record_event(*side);
    ASSERT_TRUE(event);
    ASSERT_TRUE(client.wait(*event));  // Failed work does not fail the wait.
    EXPECT_TRUE(this->complete(client, *event));
    const Handle handles[] = {failed};
    Status synced = client.sync(handles);
    ASSERT_FALSE(synced);
    EXPECT_EQ(root_code(synced.error()), 33u) << synced.error().report();
}

TYPED_TEST(HostWaits, a_sync_waits_for_its_device_not_for_another_devices_unrelated_work) {
    TANDEM_RUNTIME(runtime, 2);
    Client first = runtime->client(0);
    Client second = runtime->client(1);
    Handle mine = this->allocate(first, 64);
    Handle theirs = this->allocate(second, 64);
    Gate gate;
    const Event behind = this->behind_a_gate(second, theirs, 2, gate);
    this->fill(first, mine, 3);
    ASSERT_TRUE(first.sync());
    if (!TypeParam::runs_at_enqueue) {
        EXPECT_FALSE(this->complete(first, behind)) << "the sync waited for the other device";
    }
    gate.open();
    ASSERT_TRUE(first.wait(behind));  // Another device's event, waited for by this one.
    EXPECT_EQ(this->read_bytes(second, theirs), filled(64, 2));
}

// A host write, a copy and external work that returned clean are known to land when they are
// enqueued, but their bytes are not on the device until their stream gets to them. A wait for other
// work in between (which settles what is known) must not let a read of their bytes go ahead of
// them.
TYPED_TEST(HostWaits, a_read_waits_for_writes_copies_and_external_work_still_on_their_stream) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Result<StreamId> side = client.create_stream();
    ASSERT_TRUE(side);
    Handle written = this->allocate(client, 64, *side);
    Handle source = this->allocate(client, 64);
    Handle copied = this->allocate(client, 64, *side);
    Handle external = this->allocate(client, 64, *side);
    Handle quick = this->allocate(client, 64);
    this->fill(client, written, 0, *side);
    this->fill(client, copied, 0, *side);
    this->fill(client, external, 0, *side);
    this->fill(client, source, 9);
    ASSERT_TRUE(client.sync());
    ASSERT_TRUE(client.inject(StreamDelay{*side, this->held_back_steps}));
    ASSERT_TRUE(client.write(written, filled(64, 5)));
    ASSERT_TRUE(client.copy(source, copied, *side));
    ASSERT_TRUE(client.enqueue(
        ExternalWork{"external_copy", {in(source), out(external)}, external_copy()}, *side));
    this->fill(client, quick, 7);
    Result<Event> other = client.record_event(client.default_stream());
    ASSERT_TRUE(other);
    ASSERT_TRUE(client.wait(*other));  // Settles what is known, the write and the copy among it.
    EXPECT_EQ(this->read_bytes(client, written), filled(64, 5));
    EXPECT_EQ(this->read_bytes(client, copied), filled(64, 9));
    EXPECT_EQ(this->read_bytes(client, external), filled(64, 9));
    ASSERT_TRUE(client.sync());
}

// The bytes a write still on its stream lands in stay its own: dropped while the write waits
// behind other work, they are not handed to a later allocation the write would then overwrite.
TYPED_TEST(HostWaits, memory_a_pending_write_lands_in_is_not_reused_before_it_lands) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Result<StreamId> side = client.create_stream();
    ASSERT_TRUE(side);
    Handle quick = this->allocate(client, 64);
    this->fill(client, quick, 7);  // Loads the fill kernel before the stream is held back.
    ASSERT_TRUE(client.sync());
    {
        Handle dropped = this->allocate(client, 64, *side);
        ASSERT_TRUE(client.inject(StreamDelay{*side, this->held_back_steps}));
        ASSERT_TRUE(client.write(dropped, filled(64, 5)));
        Result<Event> other = client.record_event(client.default_stream());
        ASSERT_TRUE(other);
        ASSERT_TRUE(client.wait(*other));  // Settles what is known, the write among it.
    }
    std::vector<Handle> later;
    for (int round = 0; round < 8; ++round) {
        later.push_back(this->allocate(client, 64));
        this->fill(client, later.back(), 3);
    }
    ASSERT_TRUE(client.sync());  // The held-back write has landed by now, wherever it did.
    for (const Handle& handle : later) {
        EXPECT_EQ(this->read_bytes(client, handle), filled(64, 3));
    }
}

TYPED_TEST(HostWaits, waits_on_what_does_not_exist_are_refused) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    // An event no device issued: a program cannot build one from fields (contract_checks_test),
    // and the one it can build names no work. It is refused, never taken as complete.
    const Event none;
    EXPECT_TRUE(none.empty());
    EXPECT_EQ(client.wait(none).error().kind(), ErrorKind::InvalidArgument);
    EXPECT_EQ(client.event_complete(none).error().kind(), ErrorKind::InvalidArgument);
    EXPECT_EQ(client.wait_event(client.default_stream(), none).error().kind(),
              ErrorKind::InvalidArgument);
    // An event another runtime issued is no event of this one.
    TANDEM_RUNTIME(other, 1);
    Result<Event> foreign = other->client(0).record_event(other->client(0).default_stream());
    ASSERT_TRUE(foreign) << foreign.error().report();
    EXPECT_EQ(client.wait(*foreign).error().kind(), ErrorKind::InvalidArgument);
    EXPECT_EQ(client.event_complete(*foreign).error().kind(), ErrorKind::InvalidArgument);
    EXPECT_EQ(client.wait_event(client.default_stream(), *foreign).error().kind(),
              ErrorKind::InvalidArgument);
    EXPECT_EQ(client.sync_stream(StreamId{99}).error().kind(), ErrorKind::InvalidArgument);
    EXPECT_EQ(client.sync_stream(StreamId{0}).error().kind(), ErrorKind::InvalidArgument);
}

TYPED_TEST(HostWaits, waiting_for_an_event_of_a_lost_device_says_it_is_lost) {
    TANDEM_RUNTIME(runtime, 2);
    Client first = runtime->client(0);
    Client second = runtime->client(1);
    Result<Event> event = second.record_event(second.default_stream());
    ASSERT_TRUE(event);
    ASSERT_TRUE(second.inject(DeviceLossFault{0}));
    EXPECT_EQ(first.wait(*event).error().kind(), ErrorKind::DeviceLost);
    EXPECT_EQ(first.event_complete(*event).error().kind(), ErrorKind::DeviceLost);
}

}  // namespace
}  // namespace tandem::conformance
