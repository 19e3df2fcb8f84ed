// Device loss (D1) and injected faults, on every backend.

#include "support.hpp"

namespace tandem::conformance {
namespace {

template <typename Backend>
class DeviceLoss : public Conformance<Backend> {};
TYPED_TEST_SUITE(DeviceLoss, Backends, BackendNames);

TYPED_TEST(DeviceLoss, d1_an_injected_loss_fails_every_later_operation_with_device_lost) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle buffer = this->allocate(client, 64);
    this->fill(client, buffer, 1);
    ASSERT_TRUE(client.sync());
    ASSERT_TRUE(client.inject(DeviceLossFault{0}));
    EXPECT_EQ(client.allocate(64).error().kind(), ErrorKind::DeviceLost);
    EXPECT_EQ(client.read(buffer).error().kind(), ErrorKind::DeviceLost);
    EXPECT_EQ(client.sync().error().kind(), ErrorKind::DeviceLost);
    EXPECT_EQ(client.launch("fill", LaunchConfig::linear(64), {out(buffer)}).error().kind(),
              ErrorKind::DeviceLost);
}

// Every call, not only those that enqueue: arming a fault, granting a peer, asking for the
// memory figures and ending a capture window on a lost device fail with its loss (D1); ending a
// window never gives a graph of work the device cannot run.
TYPED_TEST(DeviceLoss, d1_calls_that_enqueue_nothing_fail_with_device_lost_too) {
    TANDEM_RUNTIME(runtime, 2);
    Client client = runtime->client(0);
    Client peer = runtime->client(1);
    Handle buffer = this->allocate(client, 64);
    Result<StreamId> stream = client.create_stream();
    ASSERT_TRUE(stream.ok()) << stream.error().report();
    ASSERT_TRUE(client.begin_capture(*stream));
    ASSERT_TRUE(client.launch("fill", LaunchConfig::linear(64), {out(buffer)}, KernelArgs().u64(1),
                              *stream));
    ASSERT_TRUE(client.inject(DeviceLossFault{0}));
    Result<CaptureGraph> graph = client.end_capture(*stream);
    ASSERT_FALSE(graph.ok()) << "a lost device gave a graph of its window";
    EXPECT_EQ(graph.error().kind(), ErrorKind::DeviceLost) << graph.error().report();
    const Status injected = client.inject(KernelFault{"fill", 1, 1.0, 5});
    ASSERT_FALSE(injected) << "a lost device armed a fault";
    EXPECT_EQ(injected.error().kind(), ErrorKind::DeviceLost);
    const Status granted = client.grant_peer_access(peer.service());
    ASSERT_FALSE(granted) << "a lost device granted a peer";
    EXPECT_EQ(granted.error().kind(), ErrorKind::DeviceLost);
    EXPECT_FALSE(client.peer_access_granted(peer.service()));
    Result<MemoryUsage> usage = client.memory_usage();
    ASSERT_FALSE(usage.ok()) << "a lost device answered with its memory figures";
    EXPECT_EQ(usage.error().kind(), ErrorKind::DeviceLost);
    // The peer is another device: it goes on (D1).
    EXPECT_TRUE(peer.memory_usage().ok());
    EXPECT_TRUE(peer.grant_peer_access(client.service()));
}

// Break j: a kernel that traps loses its device, with the fault in the report; later calls
// fail with DeviceLost, and nothing hangs. (On a GPU the trap poisons every GPU of the process:
// containment needs one process per device.)
TYPED_TEST(DeviceLoss, d1_a_kernel_that_traps_loses_its_device) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle buffer = this->allocate(client, 64);
    ASSERT_TRUE(client.launch("trap", LaunchConfig::linear(1), {out(buffer)}));
    Status synced = client.sync();
    ASSERT_FALSE(synced);
    ASSERT_EQ(synced.error().kind(), ErrorKind::DeviceLost) << synced.error().report();
    const std::string report = synced.error().report();
    EXPECT_TRUE(report.find("trap") != std::string::npos ||
                report.find("cudaError") != std::string::npos)
        << report;
    EXPECT_EQ(client.read(buffer).error().kind(), ErrorKind::DeviceLost);
    EXPECT_EQ(client.allocate(64).error().kind(), ErrorKind::DeviceLost);
    EXPECT_EQ(client.launch("fill", LaunchConfig::linear(64), {out(buffer)}).error().kind(),
              ErrorKind::DeviceLost);
}

// Launches enqueued behind a kernel that traps: each is taken, or refused as the device's loss
// (on CUDA the driver reports the trap to a later launch's call, which is made without the
// runtime's lock); the sync and every read after them fail with DeviceLost, and nothing hangs.
TYPED_TEST(DeviceLoss, d1_launches_behind_a_trap_are_taken_or_refused_as_the_loss) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle trapped = this->allocate(client, 64);
    Handle behind = this->allocate(client, 64);
    ASSERT_TRUE(client.launch("trap", LaunchConfig::linear(1), {out(trapped)}));
    constexpr int launches = 2000;
    for (int launch = 0; launch < launches; ++launch) {
        Status taken = client.launch("fill", LaunchConfig::linear(64), {out(behind)},
                                     KernelArgs().u64(7));
        if (!taken) {
            ASSERT_EQ(taken.error().kind(), ErrorKind::DeviceLost) << taken.error().report();
            break;
        }
    }
    Status synced = client.sync();
    ASSERT_FALSE(synced);
    EXPECT_EQ(synced.error().kind(), ErrorKind::DeviceLost) << synced.error().report();
    EXPECT_EQ(client.read(behind).error().kind(), ErrorKind::DeviceLost);
    EXPECT_EQ(client.launch("fill", LaunchConfig::linear(64), {out(behind)}).error().kind(),
              ErrorKind::DeviceLost);
}

// Break d: every armed fault counts every launch of its kernel.
TYPED_TEST(DeviceLoss, faults_armed_for_the_first_and_second_launch_hit_exactly_those) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    ASSERT_TRUE(client.inject(KernelFault{"fill", 1, 1.0, 41}));
    ASSERT_TRUE(client.inject(KernelFault{"fill", 2, 1.0, 42}));
    Handle first = this->allocate(client, 64);
    Handle second = this->allocate(client, 64);
    Handle third = this->allocate(client, 64);
    this->fill(client, first, 1);
    this->fill(client, second, 2);
    this->fill(client, third, 3);
    std::optional<Error> one = this->read_error(client, first);
    std::optional<Error> two = this->read_error(client, second);
    ASSERT_TRUE(one);
    ASSERT_TRUE(two);
    EXPECT_EQ(root_code(*one), 41u);
    EXPECT_EQ(root_code(*two), 42u);
    EXPECT_EQ(this->read_bytes(client, third), filled(64, 3));
}

TYPED_TEST(DeviceLoss, d1_peers_reading_a_lost_devices_memory_are_skipped_with_its_loss) {
    TANDEM_RUNTIME(runtime, 2);
    Client owner = runtime->client(0);
    Client peer = runtime->client(1);
    Handle source = this->share(owner, this->allocate(owner, 64), peer);
    this->fill(owner, source, 1);
    ASSERT_TRUE(owner.sync());
    ASSERT_TRUE(owner.inject(DeviceLossFault{0}));
    Handle local = this->allocate(peer, 64);
    this->copy_kernel(peer, source, local);
    std::optional<Error> error = this->read_error(peer, local);
    ASSERT_TRUE(error);
    EXPECT_EQ(root_of(*error)->kind(), ErrorKind::DeviceLost) << error->report();
    // The peer keeps working.
    Handle fresh = this->allocate(peer, 64);
    this->fill(peer, fresh, 5);
    EXPECT_EQ(this->read_bytes(peer, fresh), filled(64, 5));
}

}  // namespace
}  // namespace tandem::conformance
