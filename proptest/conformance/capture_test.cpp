// Capture and replay (C14) on every backend: what a replay releases is exactly what it writes.

#include "support.hpp"
#include "user_kernels.hpp"

namespace tandem::conformance {
namespace {

template <typename Backend>
class Capture : public Conformance<Backend> {};
TYPED_TEST_SUITE(Capture, Backends, BackendNames);

TYPED_TEST(Capture, c14_a_clean_capture_replays_and_releases_its_write_set) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle input = this->allocate(client, 64);
    Handle output = this->allocate(client, 64);
    this->fill(client, input, 3);
    const StreamId stream = client.default_stream();
    ASSERT_TRUE(client.begin_capture(stream));
    this->copy_kernel(client, input, output);
    Result<CaptureGraph> graph = client.end_capture(stream);
    ASSERT_TRUE(graph) << graph.error().report();
    EXPECT_EQ(graph->write_set().size(), 1u);
    this->fail(client, output, 5);
    this->fill(client, input, 4);
    ASSERT_TRUE(client.replay(*graph, stream));
    EXPECT_EQ(this->read_bytes(client, output), filled(64, 4));
}

// C14: a graph replayed inside a window is recorded with it, so replaying the window replays the
// graph's launches too and releases what they write; a replay that fails inside a window dooms it.
TYPED_TEST(Capture, c14_a_replay_inside_a_window_is_recorded_with_it) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle inner_target = this->allocate(client, 64);
    Handle outer_target = this->allocate(client, 64);
    const StreamId stream = client.default_stream();
    ASSERT_TRUE(client.begin_capture(stream));
    this->fill(client, inner_target, 3);
    Result<CaptureGraph> inner = client.end_capture(stream);
    ASSERT_TRUE(inner) << inner.error().report();
    ASSERT_TRUE(client.begin_capture(stream));
    ASSERT_TRUE(client.replay(*inner, stream));
    this->fill(client, outer_target, 4);
    Result<CaptureGraph> outer = client.end_capture(stream);
    ASSERT_TRUE(outer) << outer.error().report();
    EXPECT_EQ(outer->write_set().size(), 2u);
    this->fail(client, inner_target, 5);
    this->fail(client, outer_target, 6);
    ASSERT_TRUE(client.replay(*outer, stream));
    EXPECT_EQ(this->read_bytes(client, inner_target), filled(64, 3));
    EXPECT_EQ(this->read_bytes(client, outer_target), filled(64, 4));
    // The inner graph's fill fails inside a window: the window is refused.
    ASSERT_TRUE(client.inject(KernelFault{"fill", 1, 1.0, 71}));
    ASSERT_TRUE(client.begin_capture(stream));
    ASSERT_TRUE(client.replay(*inner, stream));
    Result<CaptureGraph> doomed = client.end_capture(stream);
    ASSERT_FALSE(doomed);
    EXPECT_EQ(doomed.error().kind(), ErrorKind::LaunchRefused) << doomed.error().report();
}

TYPED_TEST(Capture, c14_a_doomed_capture_is_refused_and_claims_what_it_recorded) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle input = this->allocate(client, 64);
    Handle recorded = this->allocate(client, 64);
    Handle failed = this->allocate(client, 64);
    this->fill(client, input, 3);
    const StreamId stream = client.default_stream();
    ASSERT_TRUE(client.begin_capture(stream));
    this->copy_kernel(client, input, recorded);
    this->fail(client, failed, 6);
    Result<CaptureGraph> graph = client.end_capture(stream);
    ASSERT_FALSE(graph);
    EXPECT_EQ(graph.error().kind(), ErrorKind::LaunchRefused);
    std::optional<Error> error = this->read_error(client, recorded);
    ASSERT_TRUE(error);
    EXPECT_EQ(root_of(*error)->kind(), ErrorKind::LaunchRefused) << error->report();
}

TYPED_TEST(Capture, c14_a_failed_replay_claims_its_write_set) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle output = this->allocate(client, 64);
    const StreamId stream = client.default_stream();
    ASSERT_TRUE(client.inject(KernelFault{"fill", 2, 1.0, 8}));
    ASSERT_TRUE(client.begin_capture(stream));
    this->fill(client, output, 1);
    Result<CaptureGraph> graph = client.end_capture(stream);
    ASSERT_TRUE(graph) << graph.error().report();
    ASSERT_FALSE(this->read_error(client, output));
    ASSERT_TRUE(client.replay(*graph, stream));
    std::optional<Error> error = this->read_error(client, output);
    ASSERT_TRUE(error);
    EXPECT_EQ(root_code(*error), 8u) << error->report();
}

// C14: a replay whose kernel fails on the data it meets (nothing injected) claims its write set
// with that failure; a replay on clean data after it releases it again.
TYPED_TEST(Capture, c14_a_replay_whose_kernel_fails_on_its_data_claims_its_write_set) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle input = this->allocate(client, 64);
    Handle output = this->allocate(client, 64);
    const StreamId stream = client.default_stream();
    ASSERT_TRUE(client.write(input, filled(64, 0)));
    ASSERT_TRUE(client.begin_capture(stream));
    ASSERT_TRUE(client.launch<FailOnNonzero>(LaunchConfig::linear(64), {in(input), out(output)},
                                             KernelArgs().u64(61)));
    Result<CaptureGraph> graph = client.end_capture(stream);
    ASSERT_TRUE(graph) << graph.error().report();
    ASSERT_TRUE(client.write(input, filled(64, 5)));
    ASSERT_TRUE(client.replay(*graph, stream));
    std::optional<Error> error = this->read_error(client, output);
    ASSERT_TRUE(error);
    EXPECT_EQ(root_code(*error), 61u) << error->report();
    // The failure names the kernel that failed, as a launch's does, on every backend.
    const auto* failed = root_of(*error)->details_as<KernelFailedDetails>();
    ASSERT_NE(failed, nullptr) << error->report();
    EXPECT_EQ(failed->kernel, FailOnNonzero::name) << error->report();
    ASSERT_TRUE(client.write(input, filled(64, 0)));
    ASSERT_TRUE(client.replay(*graph, stream));
    EXPECT_EQ(this->read_bytes(client, output), filled(64, 0));
}

// The kernel a failed replay names is the one that failed, whatever else the window recorded:
// a window of different kernels (on CUDA, one graph whose launches share a status word) names
// the failing launch's kernel, not the replay. Injected faults armed or not (on CUDA, the ticket
// graph or the plain one).
TYPED_TEST(Capture, c14_a_replay_of_several_kernels_names_the_one_that_failed) {
    for (const bool armed : {false, true}) {
        SCOPED_TRACE(armed ? "a fault due for a later launch" : "nothing armed");
        TANDEM_RUNTIME(runtime, 1);
        Client client = runtime->client(0);
        Handle input = this->allocate(client, 64);
        Handle copied = this->allocate(client, 64);
        Handle output = this->allocate(client, 64);
        Handle last = this->allocate(client, 64);
        const StreamId stream = client.default_stream();
        ASSERT_TRUE(client.write(input, filled(64, 0)));
        ASSERT_TRUE(client.begin_capture(stream));
        ASSERT_TRUE(client.launch("copy", LaunchConfig::linear(64), {in(input), out(copied)}, {}));
        ASSERT_TRUE(client.launch<FailOnNonzero>(LaunchConfig::linear(64),
                                                 {in(copied), out(output)}, KernelArgs().u64(62)));
        ASSERT_TRUE(client.launch("copy", LaunchConfig::linear(64), {in(input), out(last)}, {}));
        Result<CaptureGraph> graph = client.end_capture(stream);
        ASSERT_TRUE(graph) << graph.error().report();
        if (armed) {  // Due for the last copy, after the kernel that fails first (on CUDA, the
                      // ticket graph replays).
            ASSERT_TRUE(client.inject(KernelFault{"copy", 2, 1.0, 77}));
        }
        ASSERT_TRUE(client.write(input, filled(64, 3)));
        ASSERT_TRUE(client.replay(*graph, stream));
        std::optional<Error> error = this->read_error(client, output);
        ASSERT_TRUE(error);
        EXPECT_EQ(root_code(*error), 62u) << error->report();
        const auto* failed = root_of(*error)->details_as<KernelFailedDetails>();
        ASSERT_NE(failed, nullptr) << error->report();
        EXPECT_EQ(failed->kernel, FailOnNonzero::name) << error->report();
    }
}

// C14 across streams: replays of one graph alternate between two streams, each after the one
// before (an event), failing and clean in turn; each reports its own outcome, never the one
// before it (a replay's status starts clean whatever the last replay left).
TYPED_TEST(Capture, c14_replays_alternating_between_streams_each_report_their_own_outcome) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle input = this->allocate(client, 64);
    Handle output = this->allocate(client, 64);
    Result<StreamId> side = client.create_stream();
    ASSERT_TRUE(side) << side.error().report();
    const StreamId streams[] = {client.default_stream(), *side};
    this->fill(client, input, 0);
    ASSERT_TRUE(client.begin_capture(streams[0]));
    ASSERT_TRUE(client.launch<FailOnNonzero>(LaunchConfig::linear(64), {in(input), out(output)},
                                             KernelArgs().u64(62), streams[0]));
    Result<CaptureGraph> graph = client.end_capture(streams[0]);
    ASSERT_TRUE(graph) << graph.error().report();
    std::optional<Event> before;
    for (int round = 0; round < 6; ++round) {
        const StreamId on = streams[round % 2];
        const bool fails = round % 3 != 1;  // Failing, clean, failing, failing, clean, failing.
        if (before) {
            ASSERT_TRUE(client.wait_event(on, *before));
        }
        this->fill(client, input, fails ? 9 : 0, on);
        ASSERT_TRUE(client.replay(*graph, on));
        Result<Event> replayed = client.record_event(on);
        ASSERT_TRUE(replayed) << replayed.error().report();
        before = *replayed;
        std::optional<Error> error = this->read_error(client, output);
        if (fails) {
            ASSERT_TRUE(error) << "round " << round << " read bytes of a failed replay";
            EXPECT_EQ(root_code(*error), 62u) << "round " << round << ": " << error->report();
        } else {
            EXPECT_FALSE(error) << "round " << round << ": " << error->report();
        }
    }
}

// C14 with C10: a launch refused inside a window is a failed scope; the window is refused when it
// ends, and what it recorded is claimed with the refusal.
TYPED_TEST(Capture, c14_a_launch_refused_inside_a_window_dooms_it) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle recorded = this->allocate(client, 64);
    Handle refused = this->allocate(client, 64);
    const StreamId stream = client.default_stream();
    ASSERT_TRUE(client.begin_capture(stream));
    this->fill(client, recorded, 1);
    const Status launched = client.launch("no_such_kernel", LaunchConfig::linear(1), {out(refused)});
    ASSERT_FALSE(launched);
    EXPECT_EQ(launched.error().kind(), ErrorKind::LaunchRefused);
    Result<CaptureGraph> graph = client.end_capture(stream);
    ASSERT_FALSE(graph);
    EXPECT_EQ(graph.error().kind(), ErrorKind::LaunchRefused);
    std::optional<Error> error = this->read_error(client, recorded);
    ASSERT_TRUE(error);
    EXPECT_EQ(root_of(*error)->kind(), ErrorKind::LaunchRefused) << error->report();
}

// Break f: a launch of no threads, a host write and a copy inside a window write nothing a
// replay writes, so they are not in its write set, and a replay leaves their bytes' claims.
TYPED_TEST(Capture, c14_a_replay_releases_exactly_the_bytes_its_launches_write) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle idle = this->allocate(client, 64);
    Handle written = this->allocate(client, 64);
    Handle copied = this->allocate(client, 64);
    Handle filled_once = this->allocate(client, 64);
    const StreamId stream = client.default_stream();
    ASSERT_TRUE(client.begin_capture(stream));
    ASSERT_TRUE(client.launch("fill", LaunchConfig{Dim3{0, 1, 1}, Dim3{32, 1, 1}}, {out(idle)},
                              KernelArgs().u64(1)));
    ASSERT_TRUE(client.write(written, filled(64, 2)));
    ASSERT_TRUE(client.copy(written, copied));
    this->fill(client, filled_once, 3);
    Result<CaptureGraph> graph = client.end_capture(stream);
    ASSERT_TRUE(graph) << graph.error().report();
    ASSERT_EQ(graph->write_set().size(), 1u);
    EXPECT_EQ(graph->write_set()[0], filled_once.claim_key());
    for (const Handle* each : {&idle, &written, &copied, &filled_once}) {
        this->fail(client, *each, 9);
    }
    ASSERT_TRUE(client.replay(*graph, stream));
    EXPECT_EQ(this->read_bytes(client, filled_once), filled(64, 3));
    for (const Handle* each : {&idle, &written, &copied}) {
        std::optional<Error> error = this->read_error(client, *each);
        ASSERT_TRUE(error) << "a replay released bytes it never writes";
        EXPECT_EQ(root_code(*error), 9u);
    }
}

// C14 with C8: a copy is a scope, so a copy skipped inside a window (its source is claimed, C9)
// dooms the window as a failed launch does; its target takes the source's failure, and what the
// window recorded is claimed with the refusal.
TYPED_TEST(Capture, c14_a_copy_skipped_inside_a_window_dooms_it) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle source = this->allocate(client, 64);
    Handle target = this->allocate(client, 64);
    Handle recorded = this->allocate(client, 64);
    this->fail(client, source, 9);
    const StreamId stream = client.default_stream();
    ASSERT_TRUE(client.begin_capture(stream));
    this->fill(client, recorded, 1);
    ASSERT_TRUE(client.copy(source, target, stream));
    Result<CaptureGraph> graph = client.end_capture(stream);
    ASSERT_FALSE(graph) << "a window holding a skipped copy was taken";
    EXPECT_EQ(graph.error().kind(), ErrorKind::LaunchRefused) << graph.error().report();
    std::optional<Error> copied = this->read_error(client, target);
    ASSERT_TRUE(copied);
    EXPECT_EQ(root_code(*copied), 9u) << copied->report();
    std::optional<Error> error = this->read_error(client, recorded);
    ASSERT_TRUE(error);
    EXPECT_EQ(root_of(*error)->kind(), ErrorKind::LaunchRefused) << error->report();
}

// C14's bound: a window given more than `capture_launches_max` launches is refused when it ends,
// naming the bound, instead of growing without one.
TYPED_TEST(Capture, c14_a_window_past_its_bound_is_refused) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle output = this->allocate(client, 1);
    const StreamId stream = client.default_stream();
    ASSERT_TRUE(client.begin_capture(stream));
    for (std::size_t launch = 0; launch <= capture_launches_max; ++launch) {
        ASSERT_TRUE(client.launch("fill", LaunchConfig::linear(1), {out(output)},
                                  KernelArgs().u64(1), stream));
    }
    Result<CaptureGraph> graph = client.end_capture(stream);
    ASSERT_FALSE(graph) << "a window past its bound was taken";
    EXPECT_NE(graph.error().report().find(std::to_string(capture_launches_max)), std::string::npos)
        << graph.error().report();
}

}  // namespace
}  // namespace tandem::conformance
