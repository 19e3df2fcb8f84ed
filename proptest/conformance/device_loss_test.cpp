// Device loss (D1) and injected faults, on every backend.

#include "support.hpp"

#include <algorithm>

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

// D1: an event recorded before its device was lost still ends: a peer stream that waits on it
// goes on (other devices keep working), and a later wait on it from the host fails with
// DeviceLost instead of hanging.
TYPED_TEST(DeviceLoss, d1_an_event_of_a_device_lost_before_it_ran_still_ends) {
    TANDEM_RUNTIME(runtime, 2);
    Client lost = runtime->client(0);
    Client peer = runtime->client(1);
    Handle busy = this->allocate(lost, 64);
    this->fill(lost, busy, 1);
    Result<Event> event = lost.record_event(lost.default_stream());
    ASSERT_TRUE(event) << event.error().report();
    Result<StreamId> waiting = peer.create_stream();
    ASSERT_TRUE(waiting);
    ASSERT_TRUE(peer.wait_event(*waiting, *event));
    Handle after = this->allocate(peer, 64, *waiting);
    this->fill(peer, after, 6, *waiting);
    ASSERT_TRUE(lost.inject(DeviceLossFault{0}));
    EXPECT_EQ(this->read_bytes(peer, after), filled(64, 6));
    EXPECT_TRUE(peer.sync());
    const Status waited = peer.wait(*event);
    ASSERT_FALSE(waited) << "a wait on an event of a lost device succeeded";
    EXPECT_EQ(waited.error().kind(), ErrorKind::DeviceLost) << waited.error().report();
}

// A fault plan means the same on every backend: `DeviceLossFault{n}` lets n units of work be
// enqueued (launches that run something, copies, writes) and loses the device at the next, in
// program order; event records, waits and launches of nothing are not units of work.
TYPED_TEST(DeviceLoss, d1_a_loss_after_n_operations_counts_units_of_work_in_program_order) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle first = this->allocate(client, 64);
    Handle second = this->allocate(client, 64);
    Handle third = this->allocate(client, 64);
    ASSERT_TRUE(client.inject(DeviceLossFault{2}));
    Result<Event> event = client.record_event(client.default_stream());
    ASSERT_TRUE(event);
    ASSERT_TRUE(client.wait_event(client.default_stream(), *event));
    ASSERT_TRUE(client.launch("fill", LaunchConfig{Dim3{0, 1, 1}, Dim3{32, 1, 1}}, {out(first)},
                              KernelArgs().u64(1)));
    this->fill(client, first, 1);
    ASSERT_TRUE(client.write(second, filled(64, 2)));
    EXPECT_FALSE(client.lost()) << "lost before two units of work were enqueued";
    (void)client.launch("fill", LaunchConfig::linear(64), {out(third)}, KernelArgs().u64(3));
    ASSERT_TRUE(client.lost()) << "not lost at the third unit of work";
    EXPECT_EQ(client.lost()->kind(), ErrorKind::DeviceLost);
}

// The units of work `DeviceLossFault{n}` counts are every call that enqueues work: a copy, an
// asynchronous read, a launch refused (C10: it is enqueued to claim what it declares it writes)
// and a replay count as a write or a launch that runs something does, on every backend.
TYPED_TEST(DeviceLoss, d1_copies_reads_refused_launches_and_replays_are_units_of_work) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle source = this->allocate(client, 64);
    Handle target = this->allocate(client, 64);
    const StreamId stream = client.default_stream();
    ASSERT_TRUE(client.begin_capture(stream));
    this->fill(client, source, 1);
    Result<CaptureGraph> graph = client.end_capture(stream);
    ASSERT_TRUE(graph) << graph.error().report();
    ASSERT_TRUE(client.sync());
    ASSERT_TRUE(client.inject(DeviceLossFault{4}));
    ASSERT_TRUE(client.copy(source, target));
    std::vector<std::byte> into(64);
    ASSERT_TRUE(client.read_async(source, into));
    EXPECT_EQ(client.launch("no_such_kernel", LaunchConfig::linear(1), {out(target)})
                  .error()
                  .kind(),
              ErrorKind::LaunchRefused);
    ASSERT_TRUE(client.replay(*graph, stream));
    EXPECT_FALSE(client.lost()) << "lost before four units of work were enqueued";
    (void)client.write(target, filled(64, 2));
    ASSERT_TRUE(client.lost()) << "not lost at the fifth unit of work";
    EXPECT_EQ(client.lost()->kind(), ErrorKind::DeviceLost);
}

// Injected kernel faults count in program order every launch the device takes, on every
// backend: a launch of nothing (C10) and a launch skipped for a claimed input (C9) use up their
// draw, so the third launch of `copy` is the one a fault armed for the third hits.
TYPED_TEST(DeviceLoss, a_fault_for_the_nth_launch_counts_launches_of_nothing_and_skipped_ones) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle clean = this->allocate(client, 64);
    Handle failed = this->allocate(client, 64);
    Handle skipped = this->allocate(client, 64);
    Handle hit = this->allocate(client, 64);
    Handle after = this->allocate(client, 64);
    this->fill(client, clean, 1);
    this->fail(client, failed, 4);
    ASSERT_TRUE(client.inject(KernelFault{"copy", 3, 1.0, 51}));
    ASSERT_TRUE(client.launch("copy", LaunchConfig{Dim3{0, 1, 1}, Dim3{32, 1, 1}},
                              {in(clean), out(hit)}));
    this->copy_kernel(client, failed, skipped);
    this->copy_kernel(client, clean, hit);
    this->copy_kernel(client, clean, after);
    std::optional<Error> skip = this->read_error(client, skipped);
    ASSERT_TRUE(skip);
    EXPECT_EQ(root_code(*skip), 4u) << skip->report();
    std::optional<Error> injected = this->read_error(client, hit);
    ASSERT_TRUE(injected) << "the fault did not hit the third launch";
    EXPECT_EQ(root_code(*injected), 51u) << injected->report();
    EXPECT_EQ(this->read_bytes(client, after), filled(64, 1));
}

// A launch the call refuses before it is enqueued (shared memory of a device no runtime of its
// own reaches: `PeerUnreachable`) is no launch of the device: it draws no injected fault, so
// the fault armed for the first launch hits the first launch the device takes.
TYPED_TEST(DeviceLoss, a_launch_the_call_refuses_draws_no_injected_fault) {
    TANDEM_RUNTIME(runtime, 1);
    std::shared_ptr<Runtime> other = this->make(1);
    ASSERT_TRUE(other) << this->why_not;
    Client client = runtime->client(0);
    Client stranger = other->client(0);
    Result<Handle> theirs = stranger.share_with_peers(this->allocate(stranger, 64));
    ASSERT_TRUE(theirs) << theirs.error().report();
    Handle output = this->allocate(client, 64);
    ASSERT_TRUE(client.inject(KernelFault{"copy", 1, 1.0, 52}));
    const Status refused =
        client.launch("copy", LaunchConfig::linear(64), {in(*theirs), out(output)});
    ASSERT_FALSE(refused) << "a launch binding another runtime's memory was taken";
    EXPECT_EQ(refused.error().kind(), ErrorKind::PeerUnreachable) << refused.error().report();
    Handle source = this->allocate(client, 64);
    this->fill(client, source, 1);
    this->copy_kernel(client, source, output);
    std::optional<Error> injected = this->read_error(client, output);
    ASSERT_TRUE(injected) << "the refused launch used up the fault's draw";
    EXPECT_EQ(root_code(*injected), 52u) << injected->report();
}

// An injected failure names the fault that made it: the faults injected into a device are
// numbered from 1 in the order `inject` took them, every kind counted, and a refused one takes no
// number. So the report of a kernel fault says which entry of the plan hit, and a kernel's own
// failure says nothing of the kind.
TYPED_TEST(DeviceLoss, an_injected_failure_names_the_fault_that_made_it) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle source = this->allocate(client, 64);
    Handle hit = this->allocate(client, 64);
    Handle own = this->allocate(client, 64);
    this->fill(client, source, 1);
    ASSERT_TRUE(client.inject(AllocationFault{1000}));
    ASSERT_FALSE(client.inject(KernelFault{"copy", 1, 2.0, 53})) << "a probability of 2 was armed";
    ASSERT_TRUE(client.inject(KernelFault{"fill", 7, 1.0, 54}));
    ASSERT_TRUE(client.inject(KernelFault{"copy", 1, 1.0, 55}));
    this->copy_kernel(client, source, hit);
    this->fail(client, own, 56);
    std::optional<Error> injected = this->read_error(client, hit);
    ASSERT_TRUE(injected) << "the fault did not hit the copy";
    const auto* details = root_of(*injected)->template details_as<KernelFailedDetails>();
    ASSERT_NE(details, nullptr) << injected->report();
    EXPECT_TRUE(details->injected);
    EXPECT_EQ(details->code, 55u);
    EXPECT_EQ(details->fault_entry, 3u) << injected->report();
    EXPECT_NE(injected->report().find("(an injected fault: fault #3 injected into the device)"),
              std::string::npos)
        << injected->report();
    std::optional<Error> failed = this->read_error(client, own);
    ASSERT_TRUE(failed);
    const auto* reported = root_of(*failed)->template details_as<KernelFailedDetails>();
    ASSERT_NE(reported, nullptr) << failed->report();
    EXPECT_FALSE(reported->injected);
    EXPECT_EQ(reported->fault_entry, 0u);
    EXPECT_EQ(failed->report().find("injected"), std::string::npos) << failed->report();
}

/// Which of `launches` fills of one byte each fail under a fault armed with probability 0.5 on
/// device 1 of a two-device runtime of `made`.
std::vector<bool> faulted_launches(const Made& made, std::size_t launches) {
    std::vector<bool> failed;
    Client client = made.runtime->client(1);
    EXPECT_TRUE(client.inject(KernelFault{"fill", 0, 0.5, 9}));
    std::vector<Handle> outputs;
    for (std::size_t index = 0; index < launches; ++index) {
        Result<Handle> output = client.allocate(1);
        EXPECT_TRUE(output);
        EXPECT_TRUE(client.launch("fill", LaunchConfig::linear(1), {out(*output)},
                                  KernelArgs().u64(1)));
        outputs.push_back(*output);
    }
    for (const Handle& output : outputs) {
        failed.push_back(!client.read(output));
    }
    return failed;
}

// One seed faults the same launches on every backend: a fault plan draws from a generator of
// its device, seeded from the runtime's seed, not from a backend's scheduler.
TYPED_TEST(DeviceLoss, faults_drawn_by_probability_hit_the_same_launches_on_every_backend) {
    TANDEM_RUNTIME(runtime, 2);
    runtime.reset();
    const Made here = TypeParam::make(2, 77);
    const Made model = ReferenceBackend::make(2, 77);
    ASSERT_TRUE(here.runtime && model.runtime);
    const std::vector<bool> expected = faulted_launches(model, 32);
    ASSERT_NE(std::count(expected.begin(), expected.end(), true), 0);
    ASSERT_NE(std::count(expected.begin(), expected.end(), false), 0);
    EXPECT_EQ(faulted_launches(here, 32), expected);
}

// A device keeps a bounded list of kernel faults: past `max` armed at once, arming is refused
// with InvalidArgument; a fault for the nth launch leaves the list once that launch has passed.
TYPED_TEST(DeviceLoss, kernel_faults_are_bounded_and_a_spent_one_is_retired) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    constexpr std::uint64_t max = 256;
    for (std::uint64_t armed = 0; armed < max; ++armed) {
        ASSERT_TRUE(client.inject(KernelFault{"fill", 1, 1.0, 5})) << armed;
    }
    const Status past = client.inject(KernelFault{"fill", 1, 1.0, 5});
    ASSERT_FALSE(past) << "a kernel fault past the bound was armed";
    EXPECT_EQ(past.error().kind(), ErrorKind::InvalidArgument);
    Handle output = this->allocate(client, 64);
    this->fill(client, output, 1);  // The first launch: every fault hits it, and is spent.
    std::optional<Error> error = this->read_error(client, output);
    ASSERT_TRUE(error);
    EXPECT_EQ(root_code(*error), 5u);
    ASSERT_TRUE(client.inject(KernelFault{"fill", 1, 1.0, 6})) << "spent faults were kept";
    this->fill(client, output, 2);
    error = this->read_error(client, output);
    ASSERT_TRUE(error);
    EXPECT_EQ(root_code(*error), 6u);
    this->fill(client, output, 3);
    EXPECT_EQ(this->read_bytes(client, output), filled(64, 3));
}

// A report says whether a kernel's failure was injected (the kernel did not run) or the
// kernel's own, on every backend, so that a fault-injection run's reports are told apart from
// real failures.
TYPED_TEST(DeviceLoss, an_injected_kernel_fault_is_reported_as_injected) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle injected = this->allocate(client, 64);
    Handle real = this->allocate(client, 64);
    ASSERT_TRUE(client.inject(KernelFault{"fill", 1, 1.0, 77}));
    this->fill(client, injected, 1);
    this->fail(client, real, 77);
    std::optional<Error> first = this->read_error(client, injected);
    std::optional<Error> second = this->read_error(client, real);
    ASSERT_TRUE(first && second);
    const auto* injected_details = root_of(*first)->details_as<KernelFailedDetails>();
    const auto* real_details = root_of(*second)->details_as<KernelFailedDetails>();
    ASSERT_TRUE(injected_details && real_details) << first->report() << second->report();
    EXPECT_TRUE(injected_details->injected) << first->report();
    EXPECT_NE(first->report().find("injected"), std::string::npos) << first->report();
    EXPECT_FALSE(real_details->injected) << second->report();
    EXPECT_EQ(real_details->code, 77u);
}

}  // namespace
}  // namespace tandem::conformance
