// Work tandem did not write (Client::enqueue): a library call or a raw kernel on CUDA, a host
// implementation on the simulator and the reference backend, under the rules of a launch.

#include "support.hpp"
#include "foreign.hpp"
#include "user_kernels.hpp"

#include <algorithm>
#include <memory>

namespace tandem::conformance {
namespace {

/// Sets every byte of argument 0 to `value` on a host backend, counting its calls.
std::function<Status(HostKernelContext&)> host_fill(std::uint8_t value, int* calls) {
    return [value, calls](HostKernelContext& context) -> Status {
        ++*calls;
        auto out = context.buffer<std::uint8_t>(0);
        for (std::uint64_t i = 0; i < out.size(); ++i) {
            out.store(i, value);
        }
        return {};
    };
}

/// A fill of argument 0 on every backend; `calls` counts the calls of the callable the backend
/// runs (the host one, or on CUDA the device one).
ExternalWork fill_work(const Handle& target, std::uint8_t value, int* calls) {
    ExternalWork work{"external_fill", {out(target)}, {}};
    work.run.host = host_fill(value, calls);
#if TANDEM_HAS_CUDA_KERNELS
    work.run.cuda = [fill = device_fill(value), calls](const DeviceWorkContext& context) {
        ++*calls;
        return fill(context);
    };
#endif
    return work;
}

/// Adds one to every byte of argument 0, which it reads and writes, on every backend.
ExternalWork add_one_work(const Handle& target) {
    ExternalWork work{"external_add_one", {{target, AccessMode::ReadWrite, std::nullopt}}, {}};
    work.run.host = [](HostKernelContext& context) -> Status {
        auto bytes = context.buffer<std::uint8_t>(0);
        for (std::uint64_t i = 0; i < bytes.size(); ++i) {
            bytes.store(i, static_cast<std::uint8_t>(bytes.load(i) + 1));
        }
        return {};
    };
#if TANDEM_HAS_CUDA_KERNELS
    work.run.cuda = device_add_one();
#endif
    return work;
}

/// `add_one_work`'s name and bytes, failing with `message` instead.
ExternalWork failing_add_one(const Handle& target, const std::string& message) {
    ExternalWork work = add_one_work(target);
    work.run.host = [message](HostKernelContext&) { return Status(Error::invalid_argument(message)); };
    work.run.cuda = [message](const DeviceWorkContext&) {
        return Status(Error::invalid_argument(message));
    };
    return work;
}

template <typename Backend>
class ExternalWorks : public Conformance<Backend> {};
TYPED_TEST_SUITE(ExternalWorks, Backends, BackendNames);

TYPED_TEST(ExternalWorks, c3_external_work_that_succeeds_releases_its_writes) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle target = this->allocate(client, 128);
    this->fail(client, target, 4);
    int calls = 0;
    ASSERT_TRUE(client.enqueue(fill_work(target, 9, &calls)));
    EXPECT_EQ(this->read_bytes(client, target), filled(128, 9));
}

TYPED_TEST(ExternalWorks, external_work_reads_what_pending_work_before_it_wrote) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle input = this->allocate(client, 256);
    Handle output = this->allocate(client, 256);
    this->fill(client, input, 33);  // Not synchronised: its producer may still be running.
    ExternalWork copy{"external_copy", {in(input), out(output)}, external_copy()};
    ASSERT_TRUE(client.enqueue(std::move(copy)));
    EXPECT_EQ(this->read_bytes(client, output), filled(256, 33));
}

TYPED_TEST(ExternalWorks, c9_external_work_reading_claimed_bytes_is_never_called) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle input = this->allocate(client, 64);
    Handle output = this->allocate(client, 64);
    this->fill(client, output, 2);
    this->fail(client, input, 23);
    auto called = std::make_shared<bool>(false);
    ExternalWork work{"external_consumer", {in(input), out(output)}, {}};
    work.run.host = [called](HostKernelContext&) -> Status {
        *called = true;
        return {};
    };
    work.run.cuda = [called](const DeviceWorkContext&) -> Status {
        *called = true;
        return {};
    };
    ASSERT_TRUE(client.enqueue(std::move(work)));
    std::optional<Error> error = this->read_error(client, output);
    ASSERT_TRUE(error);
    EXPECT_EQ(root_code(*error), 23u) << error->report();
    EXPECT_FALSE(*called);
}

TYPED_TEST(ExternalWorks, c8_external_work_that_returns_failure_claims_its_writes) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle output = this->allocate(client, 64);
    this->fill(client, output, 2);
    const auto refuse = [] { return Status(Error::invalid_argument("gemm: bad leading dimension")); };
    ExternalWork work{"external_gemm", {out(output)}, {}};
    work.run.host = [refuse](HostKernelContext&) { return refuse(); };
    work.run.cuda = [refuse](const DeviceWorkContext&) { return refuse(); };
    ASSERT_TRUE(client.enqueue(std::move(work)));
    std::optional<Error> error = this->read_error(client, output);
    ASSERT_TRUE(error);
    const Error& root = *root_of(*error);
    EXPECT_EQ(root.kind(), ErrorKind::InvalidArgument) << error->report();
    EXPECT_NE(root.message().find("bad leading dimension"), std::string::npos);
}

// Whatever a callable throws, a std::exception or not, fails the work (C8) with `TornDown`
// naming it; nothing escapes into the program or ends it.
TYPED_TEST(ExternalWorks, c8_external_work_that_throws_anything_claims_its_writes) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle output = this->allocate(client, 64);
    this->fill(client, output, 2);
    ExternalWork work{"throws_an_int", {out(output)}, {}};
    work.run.host = [](HostKernelContext&) -> Status { throw 42; };
    work.run.cuda = [](const DeviceWorkContext&) -> Status { throw 42; };
    ASSERT_TRUE(client.enqueue(std::move(work)));
    std::optional<Error> error = this->read_error(client, output);
    ASSERT_TRUE(error);
    const Error& root = *root_of(*error);
    EXPECT_EQ(root.kind(), ErrorKind::TornDown) << error->report();
    EXPECT_NE(root.message().find("'throws_an_int'"), std::string::npos) << error->report();
    EXPECT_NE(root.message().find("not a std::exception"), std::string::npos);
    ASSERT_TRUE(client.write(output, filled(64, 6)));  // Rewritten: readable again.
    EXPECT_EQ(this->read_bytes(client, output), filled(64, 6));
}

TYPED_TEST(ExternalWorks, c10_external_work_with_no_callable_for_the_backend_is_refused) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle input = this->allocate(client, 64);
    Handle output = this->allocate(client, 64);
    this->fill(client, input, 6);
    ASSERT_TRUE(client.enqueue(ExternalWork{"external_nothing", {in(input), out(output)}, {}}));
    std::optional<Error> error = this->read_error(client, output);
    ASSERT_TRUE(error);
    const Error& root = *root_of(*error);
    EXPECT_EQ(root.kind(), ErrorKind::LaunchRefused) << root.report();
    EXPECT_NE(root.message().find(runtime->backend() == "cuda" ? "::cuda" : "::host"),
              std::string::npos)
        << root.message();
    EXPECT_EQ(this->read_bytes(client, input), filled(64, 6));
}

// C14: external work is recorded in a window like a launch and replayed with it: on a host
// backend by calling it again, on CUDA through the graph its capturable work was captured into.
TYPED_TEST(ExternalWorks, c14_external_work_in_a_window_replays) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle target = this->allocate(client, 64);
    Handle copied = this->allocate(client, 64);
    const StreamId stream = client.default_stream();
    int calls = 0;
    ASSERT_TRUE(client.begin_capture(stream));
    ASSERT_TRUE(client.enqueue(fill_work(target, 5, &calls)));
    ASSERT_TRUE(client.launch("copy", LaunchConfig::linear(64), {in(target), out(copied)}, {}));
    Result<CaptureGraph> graph = client.end_capture(stream);
    ASSERT_TRUE(graph) << graph.error().report();
    // As docs/BRING_YOUR_OWN_CUDA.md says: once when enqueued; on CUDA twice more when the
    // window ends (once into each of the two graphs a replay chooses from), never on replay.
    const bool cuda = runtime->backend() == "cuda";
    EXPECT_EQ(calls, cuda ? 3 : 1);
    EXPECT_EQ(this->read_bytes(client, copied), filled(64, 5));
    this->fail(client, target, 8);
    this->fail(client, copied, 9);
    ASSERT_TRUE(client.replay(*graph, stream));
    EXPECT_EQ(this->read_bytes(client, target), filled(64, 5));  // Released by the replay.
    EXPECT_EQ(this->read_bytes(client, copied), filled(64, 5));
    EXPECT_EQ(calls, cuda ? 3 : 2);  // A host backend calls it again to replay it.
}

// C14 with faults: while kernel faults are armed, a CUDA graph holding external work replays
// launch by launch, so a fault due for the external work is delivered as when it is called.
TYPED_TEST(ExternalWorks, c14_a_fault_due_for_replayed_external_work_fails_the_replay) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle target = this->allocate(client, 64);
    const StreamId stream = client.default_stream();
    int calls = 0;
    ASSERT_TRUE(client.begin_capture(stream));
    ASSERT_TRUE(client.enqueue(fill_work(target, 5, &calls)));
    Result<CaptureGraph> graph = client.end_capture(stream);
    ASSERT_TRUE(graph) << graph.error().report();
    ASSERT_TRUE(client.inject(KernelFault{"external_fill", 1, 1.0, 44}));
    ASSERT_TRUE(client.replay(*graph, stream));
    std::optional<Error> error = this->read_error(client, target);
    ASSERT_TRUE(error);
    EXPECT_EQ(root_code(*error), 44u) << error->report();
}

// A callable may enqueue more work through its client, as a library call may enqueue more of its
// own: the work runs, and the callable's work lands too (C3). Its order against the callable's own
// work is not the rule's to say, so it writes bytes of its own. (A call that waits is refused on
// the simulator: sim_scheduler_test.cpp.)
TYPED_TEST(ExternalWorks, a_callable_may_enqueue_more_work_through_its_client) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle written = this->allocate(client, 64);
    Handle declared = this->allocate(client, 64);
    Status nested;
    int calls = 0;
    ExternalWork work = fill_work(declared, 3, &calls);
    work.name = "enqueues_more";
    const auto host_fill_3 = work.run.host;
    work.run.host = [&, host_fill_3](HostKernelContext& context) -> Status {
        nested = client.write(written, filled(64, 7));
        return host_fill_3(context);
    };
#if TANDEM_HAS_CUDA_KERNELS
    const auto device_fill_3 = work.run.cuda;
    work.run.cuda = [&, device_fill_3](const DeviceWorkContext& context) -> Status {
        nested = client.write(written, filled(64, 7));
        return device_fill_3(context);
    };
#endif
    ASSERT_TRUE(client.enqueue(work));
    ASSERT_TRUE(client.enqueue(work));  // Its repeat calls the client too.
    EXPECT_EQ(this->read_bytes(client, written), filled(64, 7));
    EXPECT_TRUE(nested) << nested.error().report();
    EXPECT_EQ(this->read_bytes(client, declared), filled(64, 3));
}

// The same external work enqueued again and again, as a loop of library calls does (on CUDA
// consecutive units may share one record): every unit runs, in program order, and a read waits
// for the last.
TYPED_TEST(ExternalWorks, c3_external_work_enqueued_again_and_again_runs_every_time) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle counter = this->allocate(client, 300);
    this->fill(client, counter, 0);
    const ExternalWork add_one = add_one_work(counter);
    for (int unit = 0; unit < 40; ++unit) {
        ASSERT_TRUE(client.enqueue(add_one));
    }
    EXPECT_EQ(this->read_bytes(client, counter), filled(300, 40));
    for (int unit = 0; unit < 3; ++unit) {
        ASSERT_TRUE(client.enqueue(add_one));
    }
    ASSERT_TRUE(client.sync());
    EXPECT_EQ(this->read_bytes(client, counter), filled(300, 43));
}

// C8, C9 and C3 in program order among repeats: a unit that fails after clean units of the same
// work claims the bytes with its own error, the units after it find them claimed and are skipped,
// and once the bytes are written again the units run again.
TYPED_TEST(ExternalWorks, c8_a_failing_repeat_claims_its_writes_and_the_next_ones_are_skipped) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle counter = this->allocate(client, 64);
    this->fill(client, counter, 0);
    const ExternalWork add_one = add_one_work(counter);
    const ExternalWork fails = failing_add_one(counter, "this unit fails");
    ASSERT_TRUE(client.enqueue(add_one));
    ASSERT_TRUE(client.enqueue(add_one));
    ASSERT_TRUE(client.enqueue(fails));
    ASSERT_TRUE(client.enqueue(add_one));  // Reads what the failure claimed: skipped (C9).
    std::optional<Error> error = this->read_error(client, counter);
    ASSERT_TRUE(error);
    EXPECT_NE(root_of(*error)->message().find("this unit fails"), std::string::npos)
        << error->report();
    this->fill(client, counter, 10);
    ASSERT_TRUE(client.enqueue(add_one));
    ASSERT_TRUE(client.enqueue(add_one));
    EXPECT_EQ(this->read_bytes(client, counter), filled(64, 12));
}

// A unit whose input a failure claimed is skipped (C9), however many clean units of the same work
// came before it; its repeats after the input is written again run.
TYPED_TEST(ExternalWorks, c9_a_repeat_reading_bytes_claimed_since_is_never_called) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle input = this->allocate(client, 64);
    Handle output = this->allocate(client, 64);
    this->fill(client, input, 4);
    ExternalWork copy{"external_copy", {in(input), out(output)}, external_copy()};
    ASSERT_TRUE(client.enqueue(copy));
    ASSERT_TRUE(client.enqueue(copy));
    this->fail(client, input, 61);
    ASSERT_TRUE(client.enqueue(copy));
    ASSERT_TRUE(client.enqueue(copy));
    std::optional<Error> error = this->read_error(client, output);
    ASSERT_TRUE(error);
    EXPECT_EQ(root_code(*error), 61u) << error->report();
    this->fill(client, input, 8);
    ASSERT_TRUE(client.enqueue(copy));
    ASSERT_TRUE(client.enqueue(copy));
    EXPECT_EQ(this->read_bytes(client, output), filled(64, 8));
}

// A device lost among repeated units (D1): every unit counts as an operation, and reads of what
// they wrote fail with the loss.
TYPED_TEST(ExternalWorks, d1_a_loss_due_among_repeats_fails_their_bytes_with_device_lost) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle counter = this->allocate(client, 64);
    this->fill(client, counter, 0);
    ASSERT_TRUE(client.sync());
    ASSERT_TRUE(client.inject(DeviceLossFault{3}));
    const ExternalWork add_one = add_one_work(counter);
    for (int unit = 0; unit < 6; ++unit) {
        (void)client.enqueue(add_one);  // Refused with the loss once it is due.
    }
    Result<std::vector<std::byte>> read = client.read(counter);
    ASSERT_FALSE(read);
    EXPECT_EQ(read.error().kind(), ErrorKind::DeviceLost) << read.error().report();
}

}  // namespace
}  // namespace tandem::conformance
