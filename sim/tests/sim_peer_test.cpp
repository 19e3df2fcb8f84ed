// Peers, services and device loss on the simulator (rules P1 to P7, D1), and the
// cross-device handoff through a system-scope atomic flag.

#include "sim_test_support.hpp"

#include "tandem/sim/kernel_registry.hpp"

namespace tandem::sim {
namespace {

using namespace testing;

class SimPeers : public ::testing::Test {
protected:
    std::shared_ptr<SimRuntime> runtime = make_runtime(SimOptions{.record_trace = true});
    Client owner = runtime->client(0);
    Client peer = runtime->client(1);

    void SetUp() override { ASSERT_TRUE(owner.grant_peer_access(peer.service())); }
    Handle shared(std::uint64_t size) {
        auto handle = owner.share_with_peers(allocate(owner, size));
        EXPECT_TRUE(handle) << handle.error().report();
        return *handle;
    }
};

TEST_F(SimPeers, a_handle_of_another_device_is_refused_before_anything_runs) {
    Handle theirs = allocate(peer, 64);
    Status write = owner.write(theirs, std::vector<std::byte>(64));
    ASSERT_FALSE(write);
    ASSERT_EQ(write.error().kind(), ErrorKind::WrongService);
    EXPECT_EQ(write.error().details_as<WrongServiceDetails>()->expected, owner.service());
    EXPECT_EQ(write.error().details_as<WrongServiceDetails>()->actual, peer.service());
    auto read = owner.read(theirs);
    ASSERT_FALSE(read);
    EXPECT_EQ(read.error().kind(), ErrorKind::WrongService);
}

TEST_F(SimPeers, a_handle_of_another_runtime_is_refused) {
    auto other = make_runtime();
    Client stranger = other->client(0);
    Handle theirs = allocate(stranger, 64);
    auto read = owner.read(theirs);
    ASSERT_FALSE(read);
    EXPECT_EQ(read.error().kind(), ErrorKind::WrongService);
}

TEST_F(SimPeers, binding_memory_that_was_never_shared_is_refused) {
    Handle unshared = allocate(owner, 64);
    Handle local = allocate(peer, 64);
    Status launched = peer.launch("copy", LaunchConfig::linear(64), {in(unshared), out(local)});
    ASSERT_FALSE(launched);
    EXPECT_EQ(launched.error().kind(), ErrorKind::WrongService);
    EXPECT_NE(launched.error().report().find("never shared"), std::string::npos);
}

TEST_F(SimPeers, a_peer_kernel_reads_shared_memory_at_its_peer_address) {
    Handle source = shared(64);
    ASSERT_TRUE(owner.write(source, std::vector<std::byte>(64, std::byte{9})));
    ASSERT_TRUE(owner.sync());
    Handle local = allocate(peer, 64);
    ASSERT_TRUE(peer.launch("copy", LaunchConfig::linear(64), {in(source), out(local)}));
    auto read = peer.read(local);
    ASSERT_TRUE(read) << read.error().report();
    EXPECT_EQ(*read, std::vector<std::byte>(64, std::byte{9}));
}

TEST_F(SimPeers, a_peer_read_of_failed_owner_bytes_is_skipped_and_names_the_owner_root) {
    Handle source = shared(64);
    ASSERT_TRUE(owner.launch("fail", LaunchConfig::linear(1), {out(source)}, KernelArgs().u64(31)));
    ASSERT_TRUE(owner.sync());
    Handle local = allocate(peer, 64);
    ASSERT_TRUE(peer.launch("copy", LaunchConfig::linear(64), {in(source), out(local)}));
    auto read = peer.read(local);
    ASSERT_FALSE(read);
    const UnwrittenDetails* details = unwritten(read.error());
    ASSERT_NE(details, nullptr) << read.error().report();
    ASSERT_EQ(details->chain.size(), 1u);
    // The cross-device hop names the device whose work was skipped.
    EXPECT_EQ(details->chain[0].device, peer.service());
    // The root is the owner's failure itself, carried across the hop (not the owner's report).
    const auto* root = details->root->details_as<KernelFailedDetails>();
    ASSERT_NE(root, nullptr) << read.error().report();
    EXPECT_EQ(root->code, 31u);
    EXPECT_EQ(root->device, owner.service());
}

TEST_F(SimPeers, a_peer_write_failure_claims_the_owner_bytes) {
    Handle target = shared(64);
    ASSERT_TRUE(owner.write(target, std::vector<std::byte>(64)));
    ASSERT_TRUE(owner.sync());
    ASSERT_TRUE(peer.launch("fail", LaunchConfig::linear(1), {out(target)}, KernelArgs().u64(12)));
    ASSERT_TRUE(peer.sync());
    auto read = owner.read(target);
    ASSERT_FALSE(read);
    const auto* root = unwritten(read.error())->root->details_as<KernelFailedDetails>();
    ASSERT_NE(root, nullptr) << read.error().report();
    EXPECT_EQ(root->device, peer.service());
    EXPECT_EQ(root->code, 12u);
    ASSERT_TRUE(target.peer()->failure().has_value());
    // P5: rewriting the bytes repairs them, locally and for peers, once the rewrite landed.
    ASSERT_TRUE(owner.write(target, std::vector<std::byte>(64, std::byte{1})));
    EXPECT_TRUE(owner.read(target));
    EXPECT_FALSE(target.peer()->failure().has_value());
}

// Found by a `tandem explore --minutes 10` soak (program seed 2901): an empty grid repaired the
// shared allocation's failure at enqueue although it writes nothing (C10 against P5).
TEST_F(SimPeers, a_launch_with_zero_threads_does_not_repair_a_failed_shared_allocation) {
    Handle target = shared(64);
    ASSERT_TRUE(owner.write(target, std::vector<std::byte>(64)));
    ASSERT_TRUE(owner.sync());
    ASSERT_TRUE(peer.launch("fail", LaunchConfig::linear(1), {out(target)}, KernelArgs().u64(12)));
    ASSERT_TRUE(peer.sync());
    ASSERT_TRUE(target.peer()->failure().has_value());
    ASSERT_TRUE(owner.launch("fill", LaunchConfig{Dim3{0, 1, 1}, Dim3{32, 1, 1}}, {out(target)},
                             KernelArgs().u64(3)));
    ASSERT_TRUE(owner.sync());
    EXPECT_TRUE(target.peer()->failure().has_value());
    EXPECT_FALSE(owner.read(target));
}

TEST_F(SimPeers, shared_memory_is_never_reused_while_pinned) {
    std::uint64_t pinned_address = 0;
    std::optional<PeerMemory> clone;
    {
        Handle handle = shared(4096);
        pinned_address = handle.peer()->address();
        clone = handle.peer();
    }
    ASSERT_TRUE(owner.sync());
    for (int attempt = 0; attempt < 8; ++attempt) {
        Handle fresh = allocate(owner, 4096);
        auto again = owner.share_with_peers(fresh);
        ASSERT_TRUE(again);
        EXPECT_NE(again->peer()->address(), pinned_address);
    }
    clone.reset();
    ASSERT_TRUE(owner.sync());
    bool reused = false;
    for (int attempt = 0; attempt < 8 && !reused; ++attempt) {
        Handle fresh = allocate(owner, 4096);
        reused = owner.share_with_peers(fresh)->peer()->address() == pinned_address;
    }
    EXPECT_TRUE(reused) << "the bytes should become reusable once the last clone is gone";
}

TEST_F(SimPeers, an_unsynchronised_peer_access_is_reported_as_a_race) {
    Handle buffer = shared(64);
    ASSERT_TRUE(owner.launch("fill", LaunchConfig::linear(64), {out(buffer)}, KernelArgs().u64(1)));
    Handle local = allocate(peer, 64);
    ASSERT_TRUE(peer.launch("copy", LaunchConfig::linear(64), {in(buffer), out(local)}));
    ASSERT_TRUE(runtime->sync_all());
    ASSERT_FALSE(runtime->races().empty());
    EXPECT_EQ(runtime->races().front().bytes.memory, buffer.memory_id());
}

TEST_F(SimPeers, an_event_across_devices_orders_the_peer_access) {
    Handle buffer = shared(64);
    ASSERT_TRUE(owner.launch("fill", LaunchConfig::linear(64), {out(buffer)}, KernelArgs().u64(6)));
    auto event = owner.record_event(owner.default_stream());
    ASSERT_TRUE(event);
    ASSERT_TRUE(peer.wait_event(peer.default_stream(), *event));
    Handle local = allocate(peer, 64);
    ASSERT_TRUE(peer.launch("copy", LaunchConfig::linear(64), {in(buffer), out(local)}));
    auto read = peer.read(local);
    ASSERT_TRUE(read) << read.error().report();
    EXPECT_EQ(read->front(), std::byte{6});
    EXPECT_TRUE(runtime->races().empty());
}

TEST_F(SimPeers, a_launch_binding_ungranted_shared_memory_is_refused_naming_the_grant) {
    auto fresh = make_runtime();
    Client a = fresh->client(0);
    Client b = fresh->client(1);
    Handle buffer = *a.share_with_peers(allocate(a, 64));
    ASSERT_TRUE(a.write(buffer, std::vector<std::byte>(64)));
    ASSERT_TRUE(a.sync());
    Handle local = allocate(b, 64);
    ASSERT_TRUE(b.launch("copy", LaunchConfig::linear(64), {in(buffer), out(local)}));
    ASSERT_TRUE(b.sync());  // P7 is a refusal (C10): the device is not lost.
    auto read = b.read(local);
    ASSERT_FALSE(read);
    const Error& root = *unwritten(read.error())->root;
    ASSERT_EQ(root.kind(), ErrorKind::LaunchRefused);
    EXPECT_NE(root.message().find("never granted"), std::string::npos) << root.report();
    // The owner keeps working, and its bytes stay readable.
    EXPECT_TRUE(a.read(buffer));
}

TEST_F(SimPeers, a_lost_device_fails_everything_after_and_its_peers_skip_its_memory) {
    Handle buffer = shared(64);
    ASSERT_TRUE(owner.write(buffer, std::vector<std::byte>(64)));
    ASSERT_TRUE(owner.sync());
    ASSERT_TRUE(owner.inject(DeviceLossFault{0}));
    EXPECT_EQ(owner.allocate(64).error().kind(), ErrorKind::DeviceLost);
    EXPECT_EQ(owner.read(buffer).error().kind(), ErrorKind::DeviceLost);
    auto event = owner.record_event(owner.default_stream());
    ASSERT_FALSE(event);
    Handle local = allocate(peer, 64);
    ASSERT_TRUE(peer.launch("copy", LaunchConfig::linear(64), {in(buffer), out(local)}));
    auto read = peer.read(local);
    ASSERT_FALSE(read);
    EXPECT_EQ(unwritten(read.error())->root->kind(), ErrorKind::DeviceLost);
    // The peer itself keeps working.
    Handle other = allocate(peer, 64);
    ASSERT_TRUE(peer.launch("fill", LaunchConfig::linear(64), {out(other)}, KernelArgs().u64(1)));
    EXPECT_TRUE(peer.read(other));
}

TEST_F(SimPeers, a_wait_on_an_event_of_a_lost_device_is_refused) {
    auto event = owner.record_event(owner.default_stream());
    ASSERT_TRUE(event);
    ASSERT_TRUE(owner.inject(DeviceLossFault{0}));
    Status waited = peer.wait_event(peer.default_stream(), *event);
    ASSERT_FALSE(waited);
    EXPECT_EQ(waited.error().kind(), ErrorKind::DeviceLost);
}

TEST(SimHandoff, completes_under_every_seed_without_a_race) {
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        auto runtime = make_runtime(SimOptions{.seed = seed, .grant_all_peers = true});
        Client producer = runtime->client(0);
        Client consumer = runtime->client(1);
        Handle data = *consumer.share_with_peers(allocate(consumer, 256));
        Handle flag = *consumer.share_with_peers(allocate(consumer, 4));
        Handle source = allocate(producer, 256);
        Handle result = allocate(consumer, 256);
        ASSERT_TRUE(consumer.write(flag, std::vector<std::byte>(4)));
        ASSERT_TRUE(producer.write(source, std::vector<std::byte>(256, std::byte{0x5a})));
        ASSERT_TRUE(consumer.sync());
        ASSERT_TRUE(producer.sync());
        ASSERT_TRUE(consumer.launch("handoff_consume", LaunchConfig::linear(64, 16),
                                    {in(flag), in(data), out(result)}));
        ASSERT_TRUE(producer.launch("handoff_produce", LaunchConfig::linear(1),
                                    {in(source), out(data), inout(flag)}));
        auto read = consumer.read(result);
        ASSERT_TRUE(read) << "seed " << seed << ": " << read.error().report();
        EXPECT_EQ(*read, std::vector<std::byte>(256, std::byte{0x5a})) << "seed " << seed;
        EXPECT_TRUE(runtime->races().empty())
            << "seed " << seed << ": " << runtime->races().front().first << " / "
            << runtime->races().front().second;
    }
}

TEST(SimHandoff, a_wait_that_can_never_be_satisfied_is_a_deadlock_not_a_hang) {
    auto runtime = make_runtime(SimOptions{.grant_all_peers = true});
    Client consumer = runtime->client(1);
    Handle flag = allocate(consumer, 4);
    Handle data = allocate(consumer, 64);
    Handle result = allocate(consumer, 64);
    ASSERT_TRUE(consumer.write(flag, std::vector<std::byte>(4)));
    ASSERT_TRUE(consumer.launch("handoff_consume", LaunchConfig::linear(1),
                                {in(flag), in(data), out(result)}));
    Status synced = consumer.sync();
    ASSERT_FALSE(synced);
    EXPECT_EQ(synced.error().kind(), ErrorKind::TornDown);
    EXPECT_NE(synced.error().message().find("deadlock"), std::string::npos);
    EXPECT_NE(synced.error().message().find("handoff_consume"), std::string::npos);
    auto read = consumer.read(result);
    ASSERT_FALSE(read);
    EXPECT_EQ(unwritten(read.error())->root->kind(), ErrorKind::TornDown);
}

}  // namespace
}  // namespace tandem::sim
