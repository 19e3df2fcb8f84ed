// Peers and services, P1 to P7, on every backend. Tests of two devices skip where the backend
// has one (a machine with one GPU), and say so.

#include "support.hpp"

namespace tandem::conformance {
namespace {

template <typename Backend>
class Peers : public Conformance<Backend> {};
TYPED_TEST_SUITE(Peers, Backends, BackendNames);

TYPED_TEST(Peers, p1_a_handle_of_another_device_is_refused_with_wrong_service) {
    TANDEM_RUNTIME(runtime, 2);
    Client zero = runtime->client(0);
    Client one = runtime->client(1);
    Handle theirs = this->allocate(zero, 64);
    Handle mine = this->allocate(one, 64);
    Result<std::vector<std::byte>> read = one.read(theirs);
    ASSERT_FALSE(read);
    ASSERT_EQ(read.error().kind(), ErrorKind::WrongService);
    EXPECT_EQ(read.error().details_as<WrongServiceDetails>()->expected, one.service());
    EXPECT_EQ(read.error().details_as<WrongServiceDetails>()->actual, zero.service());
    EXPECT_EQ(one.write(theirs, filled(64, 1)).error().kind(), ErrorKind::WrongService);
    EXPECT_EQ(one.copy(mine, theirs).error().kind(), ErrorKind::WrongService);
    // A launch binding memory of another device that was never shared is refused the same way.
    EXPECT_EQ(one.launch("copy", LaunchConfig::linear(64), {in(theirs), out(mine)}).error().kind(),
              ErrorKind::WrongService);
}

// P2: shared memory stays pinned while a peer kernel that bound it may still run. The owner
// drops every handle of it while the peer's fill of it is held back, then allocates and writes
// memory of the same size again and again: none of it may be the bytes the fill still writes.
TYPED_TEST(Peers, p2_memory_a_pending_peer_kernel_bound_is_not_reused_before_it_ends) {
    TANDEM_RUNTIME(runtime, 2);
    Client owner = runtime->client(0);
    Client peer = runtime->client(1);
    std::optional<Handle> shared = this->share(owner, this->allocate(owner, 256), peer);
    ASSERT_TRUE(owner.sync());
    Result<StreamId> side = peer.create_stream();
    ASSERT_TRUE(side) << side.error().report();
    ASSERT_TRUE(peer.inject(StreamDelay{*side, 100'000}));
    this->fill(peer, *shared, 1, *side);
    Result<Event> filled_event = peer.record_event(*side);
    ASSERT_TRUE(filled_event) << filled_event.error().report();
    shared.reset();  // The last handle: only the pending fill holds the memory now.
    std::vector<Handle> later;
    for (int round = 0; round < 8; ++round) {
        later.push_back(this->allocate(owner, 256));
        ASSERT_TRUE(owner.write(later.back(), filled(256, 7)));
        ASSERT_TRUE(owner.sync());  // Sweeps what was freed: the pinned bytes must not be.
    }
    if (!TypeParam::runs_at_enqueue) {
        Result<bool> done = peer.event_complete(*filled_event);
        ASSERT_TRUE(done) << done.error().report();
        EXPECT_FALSE(*done) << "the owner's sync waited for the peer's unrelated fill";
    }
    ASSERT_TRUE(peer.sync());
    for (const Handle& each : later) {
        EXPECT_EQ(this->read_bytes(owner, each), filled(256, 7));
    }
}

TYPED_TEST(Peers, p3_a_peer_kernel_reading_failed_owner_bytes_is_skipped_naming_the_owner_root) {
    TANDEM_RUNTIME(runtime, 2);
    Client owner = runtime->client(0);
    Client peer = runtime->client(1);
    Handle source = this->share(owner, this->allocate(owner, 64), peer);
    this->fail(owner, source, 31);
    ASSERT_TRUE(owner.sync());
    Handle local = this->allocate(peer, 64);
    this->copy_kernel(peer, source, local);
    std::optional<Error> error = this->read_error(peer, local);
    ASSERT_TRUE(error);
    const UnwrittenDetails* details = unwritten(*error);
    ASSERT_NE(details, nullptr) << error->report();
    ASSERT_EQ(details->chain.size(), 1u);
    // Break c: the skip record names the device that ran (or would have run) the skipped work.
    EXPECT_EQ(details->chain[0].device, peer.service()) << error->report();
    const auto* root = root_of(*error)->details_as<KernelFailedDetails>();
    ASSERT_NE(root, nullptr) << error->report();
    EXPECT_EQ(root->code, 31u);
    EXPECT_EQ(root->device, owner.service());
}

// The byte-precise reading of P3 (break b's spec question): a peer kernel that reads only clean
// bytes of shared memory whose other bytes failed runs, as C6 says for any read.
TYPED_TEST(Peers, p3_a_peer_kernel_reading_only_clean_bytes_of_a_failed_allocation_runs) {
    TANDEM_RUNTIME(runtime, 2);
    Client owner = runtime->client(0);
    Client peer = runtime->client(1);
    Handle source = this->share(owner, this->allocate(owner, 64), peer);
    this->fill(owner, source, 6);
    this->fail(owner, *source.slice(32, 32), 2);
    ASSERT_TRUE(owner.sync());
    Handle local = this->allocate(peer, 32);
    this->copy_kernel(peer, *source.slice(0, 32), local);
    EXPECT_EQ(this->read_bytes(peer, local), filled(32, 6));
}

TYPED_TEST(Peers, p4_a_failed_peer_write_claims_the_owner_bytes) {
    TANDEM_RUNTIME(runtime, 2);
    Client owner = runtime->client(0);
    Client peer = runtime->client(1);
    Handle target = this->share(owner, this->allocate(owner, 64), peer);
    ASSERT_TRUE(owner.write(target, filled(64, 0)));
    ASSERT_TRUE(owner.sync());
    this->fail(peer, target, 12);
    ASSERT_TRUE(peer.sync());
    std::optional<Error> error = this->read_error(owner, target);
    ASSERT_TRUE(error);
    const auto* root = root_of(*error)->details_as<KernelFailedDetails>();
    ASSERT_NE(root, nullptr) << error->report();
    EXPECT_EQ(root->device, peer.service());
    EXPECT_EQ(root->code, 12u);
    ASSERT_TRUE(target.peer()->failure().has_value());
    // P5: a rewrite repairs the bytes, locally and for peers.
    ASSERT_TRUE(owner.write(target, filled(64, 1)));
    EXPECT_EQ(this->read_bytes(owner, target), filled(64, 1));
    EXPECT_FALSE(target.peer()->failure().has_value());
}

// P4, P5: shared memory's failure says exactly whether some byte of the allocation is claimed on
// its owner, whoever claimed it: the owner writing through a handle it never shared, and a
// capture window whose doom claims what it recorded, as much as a peer.
TYPED_TEST(Peers, p5_the_failure_of_shared_memory_follows_every_claim_of_its_bytes) {
    TANDEM_RUNTIME(runtime, 2);
    Client owner = runtime->client(0);
    Client peer = runtime->client(1);
    Handle plain = this->allocate(owner, 64);
    Handle shared = this->share(owner, plain, peer);
    ASSERT_TRUE(owner.write(plain, filled(64, 0)));
    ASSERT_TRUE(owner.sync());
    EXPECT_FALSE(shared.peer()->failure().has_value());
    this->fail(owner, *plain.slice(8, 8), 21);  // Through the handle it never shared.
    ASSERT_TRUE(owner.sync());
    std::optional<Error> failure = shared.peer()->failure();
    ASSERT_TRUE(failure.has_value());
    EXPECT_EQ(root_code(*failure), 21u) << failure->report();
    ASSERT_TRUE(owner.write(*plain.slice(8, 8), filled(8, 1)));  // The claimed bytes only.
    ASSERT_TRUE(owner.sync());
    EXPECT_FALSE(shared.peer()->failure().has_value());
    // A window that fails is doomed, and its end claims everything it recorded (C14).
    const StreamId stream = owner.default_stream();
    ASSERT_TRUE(owner.begin_capture(stream));
    this->fail(owner, *plain.slice(0, 4), 22);
    ASSERT_FALSE(owner.end_capture(stream));
    failure = shared.peer()->failure();
    ASSERT_TRUE(failure.has_value());
    ASSERT_TRUE(owner.write(plain, filled(64, 2)));
    ASSERT_TRUE(owner.sync());
    EXPECT_FALSE(shared.peer()->failure().has_value());
}

// Break b: on one stream of device 1, a failed write of shared `a`, a rewrite of `a`, then a
// copy of `a`: the copy reads the rewrite, whenever the failure is learned.
TYPED_TEST(Peers, p5_a_rewrite_enqueued_before_a_failure_is_known_repairs_the_bytes) {
    TANDEM_RUNTIME(runtime, 2);
    Client owner = runtime->client(0);
    Client peer = runtime->client(1);
    Handle a = this->share(owner, this->allocate(owner, 64), peer);
    ASSERT_TRUE(owner.write(a, filled(64, 0)));
    ASSERT_TRUE(owner.sync());
    Handle b = this->allocate(peer, 64);
    this->fail(peer, a, 13);
    this->fill(peer, a, 7);
    this->copy_kernel(peer, a, b);
    ASSERT_TRUE(peer.sync());
    EXPECT_EQ(this->read_bytes(owner, a), filled(64, 7));
    EXPECT_EQ(this->read_bytes(peer, b), filled(64, 7));
    EXPECT_FALSE(a.peer()->failure().has_value());
}

// Break a: a sync naming handles waits for their writers on other devices, as a read does.
TYPED_TEST(Peers, c6_a_sync_naming_handles_waits_for_their_writers_on_other_devices) {
    TANDEM_RUNTIME(runtime, 2);
    Client owner = runtime->client(0);
    Client peer = runtime->client(1);
    Handle a = this->share(owner, this->allocate(owner, 64), peer);
    this->fill(owner, a, 1);
    ASSERT_TRUE(owner.sync());
    this->fail(peer, a, 14);  // Not synced.
    const Handle names[] = {a};
    Status synced = owner.sync(names);
    ASSERT_FALSE(synced);
    EXPECT_EQ(root_code(synced.error()), 14u) << synced.error().report();
    // The mirror: a later write of the failed bytes, queued on the other device, supersedes it.
    this->fill(peer, a, 2);
    EXPECT_TRUE(owner.sync(names));
    EXPECT_EQ(this->read_bytes(owner, a), filled(64, 2));
}

// Break h: P7 as a refusal before the launch runs (C10), naming the missing grant.
TYPED_TEST(Peers, p7_a_launch_binding_shared_memory_of_an_owner_that_never_granted_is_refused) {
    TANDEM_RUNTIME(runtime, 2);
    Client owner = runtime->client(0);
    Client peer = runtime->client(1);
    Result<Handle> shared = owner.share_with_peers(this->allocate(owner, 64));
    ASSERT_TRUE(shared);
    ASSERT_TRUE(owner.write(*shared, filled(64, 4)));
    ASSERT_TRUE(owner.sync());
    Handle local = this->allocate(peer, 64);
    this->copy_kernel(peer, *shared, local);
    ASSERT_TRUE(peer.sync());  // Refused, not a fault: the device is not lost.
    std::optional<Error> error = this->read_error(peer, local);
    ASSERT_TRUE(error);
    const Error& root = *root_of(*error);
    ASSERT_EQ(root.kind(), ErrorKind::LaunchRefused) << error->report();
    EXPECT_NE(root.message().find("never granted"), std::string::npos) << root.report();
    EXPECT_EQ(this->read_bytes(owner, *shared), filled(64, 4));
    EXPECT_TRUE(peer.allocate(64));
}

}  // namespace
}  // namespace tandem::conformance
