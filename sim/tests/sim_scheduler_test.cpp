// Scheduling: determinism from one seed, asynchronous failures (C13), delays, threads mode.

#include "sim_test_support.hpp"

namespace tandem::sim {
namespace {

using namespace testing;

/// A mixed program over two devices and two streams each; returns the trace hash.
std::uint64_t mixed_program(SimOptions options) {
    options.grant_all_peers = true;
    auto runtime = make_runtime(options);
    Client zero = runtime->client(0);
    Client one = runtime->client(1);
    const StreamId zero_side = *zero.create_stream();
    const StreamId one_side = *one.create_stream();
    Handle shared = *zero.share_with_peers(allocate(zero, 4096));
    Handle a = allocate(zero, 4096);
    Handle b = allocate(one, 4096);
    Handle c = allocate(one, 4096);
    EXPECT_TRUE(
        zero.launch("fill", LaunchConfig::linear(4096, 256), {out(shared)}, KernelArgs().u64(3)));
    EXPECT_TRUE(
        zero.launch("fail", LaunchConfig::linear(64, 8), {out(a)}, KernelArgs().u64(5), zero_side));
    auto event = zero.record_event(zero.default_stream());
    EXPECT_TRUE(one.wait_event(one.default_stream(), *event));
    EXPECT_TRUE(one.launch("copy", LaunchConfig::linear(4096, 256), {in(shared), out(b)}));
    EXPECT_TRUE(one.launch("fill", LaunchConfig::linear(4096, 512), {out(c)}, KernelArgs().u64(1),
                           one_side));
    EXPECT_TRUE(runtime->sync_all());
    EXPECT_TRUE(one.read(b));
    EXPECT_FALSE(zero.read(a));
    return runtime->trace_hash();
}

TEST(SimDeterminism, the_same_seed_gives_the_same_trace_bit_for_bit) {
    for (std::uint64_t seed : {1u, 2u, 77u}) {
        EXPECT_EQ(mixed_program(SimOptions{.seed = seed}), mixed_program(SimOptions{.seed = seed}))
            << "seed " << seed;
    }
}

TEST(SimDeterminism, different_seeds_interleave_differently) {
    std::set<std::uint64_t> hashes;
    for (std::uint64_t seed = 1; seed <= 8; ++seed) {
        hashes.insert(mixed_program(SimOptions{.seed = seed}));
    }
    EXPECT_GT(hashes.size(), 1u);
}

struct Span {
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
};

Span span_of(const std::vector<TraceRecord>& trace, const std::string& label) {
    Span span;
    for (const TraceRecord& record : trace) {
        if (record.label == label) {
            (record.phase == TraceRecord::Phase::Begin ? span.begin : span.end) = record.step;
        }
    }
    return span;
}

TEST(SimAsynchronousFailures, work_that_consumed_outputs_before_the_failure_was_known_takes_it) {
    // The producer reports its failure only when it completes; a consumer on another stream
    // (unordered, so the seed decides) may already have read its outputs by then, or even have
    // run before the producer began. Outcomes follow program order (C13): the consumer was
    // enqueued after the producer, so under every schedule it takes the producer's failure.
    int concurrent = 0;
    int earlier = 0;
    for (std::uint64_t seed = 1; seed <= 64; ++seed) {
        auto runtime = make_runtime(SimOptions{.seed = seed, .record_trace = true});
        Client client = runtime->client(0);
        const StreamId side = *client.create_stream();
        Handle a = allocate(client, 64);
        Handle b = allocate(client, 64);
        Handle c = allocate(client, 64);
        ASSERT_TRUE(
            client.launch("fail", LaunchConfig::linear(16, 1), {out(a)}, KernelArgs().u64(21)));
        ASSERT_TRUE(client.launch("copy", LaunchConfig::linear(64, 1), {in(a), out(b)},
                                  KernelArgs(), side));
        ASSERT_TRUE(client.launch("checksum", LaunchConfig::linear(1), {in(b), out(c)},
                                  KernelArgs(), side));
        ASSERT_TRUE(runtime->sync_all());
        const auto trace = runtime->trace();
        const Span producer = span_of(trace, "fail");
        const Span consumer = span_of(trace, "copy");
        earlier += consumer.begin < producer.begin ? 1 : 0;
        concurrent += producer.begin < consumer.begin && consumer.begin < producer.end ? 1 : 0;
        auto read = client.read(c);
        ASSERT_FALSE(read) << "seed " << seed << ": a consumer of failed outputs read clean";
        const auto* root = unwritten(read.error())->root->details_as<KernelFailedDetails>();
        ASSERT_NE(root, nullptr) << read.error().report();
        EXPECT_EQ(root->code, 21u);
    }
    EXPECT_GT(concurrent, 0) << "no seed ran the consumer while the producer was still running";
    EXPECT_GT(earlier, 0) << "no seed ran the consumer before the producer began";
}

TEST(SimDelay, a_delayed_stream_starts_its_work_after_the_delay) {
    auto runtime = make_runtime(SimOptions{.record_trace = true});
    Client client = runtime->client(0);
    const StreamId side = *client.create_stream();
    ASSERT_TRUE(client.inject(StreamDelay{side, 50}));
    Handle a = allocate(client, 64);
    ASSERT_TRUE(
        client.launch("fill", LaunchConfig::linear(64), {out(a)}, KernelArgs().u64(1), side));
    ASSERT_TRUE(runtime->sync_all());
    EXPECT_GE(span_of(runtime->trace(), "fill").begin, 50u);
    EXPECT_EQ(client.inject(StreamDelay{StreamId{99}, 1}).error().kind(),
              ErrorKind::InvalidArgument);
}

TEST(SimThreads, runs_a_multi_device_program_on_worker_threads) {
    auto runtime =
        make_runtime(SimOptions{.mode = SchedulerMode::Threads, .grant_all_peers = true});
    Client zero = runtime->client(0);
    Client one = runtime->client(1);
    Handle shared = *zero.share_with_peers(allocate(zero, 1 << 16));
    Handle failed = allocate(zero, 64);
    Handle copy = allocate(one, 1 << 16);
    ASSERT_TRUE(
        zero.launch("fill", LaunchConfig::linear(1 << 16), {out(shared)}, KernelArgs().u64(4)));
    ASSERT_TRUE(zero.launch("fail", LaunchConfig::linear(1), {out(failed)}, KernelArgs().u64(2)));
    auto event = zero.record_event(zero.default_stream());
    ASSERT_TRUE(one.wait_event(one.default_stream(), *event));
    ASSERT_TRUE(one.launch("copy", LaunchConfig::linear(1 << 16), {in(shared), out(copy)}));
    auto read = one.read(copy);
    ASSERT_TRUE(read) << read.error().report();
    EXPECT_EQ(read->front(), std::byte{4});
    EXPECT_EQ(read->back(), std::byte{4});
    EXPECT_FALSE(zero.read(failed));
    EXPECT_TRUE(runtime->races().empty());
}

TEST(SimThreads, the_handoff_completes_with_real_concurrency) {
    auto runtime =
        make_runtime(SimOptions{.mode = SchedulerMode::Threads, .grant_all_peers = true});
    Client producer = runtime->client(0);
    Client consumer = runtime->client(1);
    Handle data = *consumer.share_with_peers(allocate(consumer, 256));
    Handle flag = *consumer.share_with_peers(allocate(consumer, 4));
    Handle source = allocate(producer, 256);
    Handle result = allocate(consumer, 256);
    ASSERT_TRUE(consumer.write(flag, std::vector<std::byte>(4)));
    ASSERT_TRUE(producer.write(source, std::vector<std::byte>(256, std::byte{0x33})));
    ASSERT_TRUE(runtime->sync_all());
    ASSERT_TRUE(consumer.launch("handoff_consume", LaunchConfig::linear(32, 8),
                                {in(flag), in(data), out(result)}));
    ASSERT_TRUE(producer.launch("handoff_produce", LaunchConfig::linear(1),
                                {in(source), out(data), inout(flag)}));
    auto read = consumer.read(result);
    ASSERT_TRUE(read) << read.error().report();
    EXPECT_EQ(*read, std::vector<std::byte>(256, std::byte{0x33}));
}

/// The value a ring program fills buffer (round, device, stream) with.
std::byte ring_value(int round, std::uint32_t device, std::size_t stream) {
    return static_cast<std::byte>(round * 16 + static_cast<int>(device) * 4 +
                                  static_cast<int>(stream) + 1);
}

TEST(SimThreads, three_devices_with_three_streams_each_pass_buffers_along_a_ring_by_events) {
    // Every stream of every device writes shared memory while the next device's streams copy
    // what the previous round's events ordered: nine workers run at once, and under a thread
    // sanitizer every access to scheduling state is checked.
    constexpr std::uint32_t devices = 3;
    constexpr std::size_t streams_per_device = 3;
    constexpr std::uint64_t size_bytes = 1 << 14;
    auto runtime = make_runtime(
        SimOptions{.devices = devices, .mode = SchedulerMode::Threads, .grant_all_peers = true});
    std::vector<Client> clients;
    std::vector<std::vector<StreamId>> streams(devices);
    for (std::uint32_t device = 0; device < devices; ++device) {
        clients.push_back(runtime->client(device));
        streams[device].push_back(clients[device].default_stream());
        while (streams[device].size() < streams_per_device) {
            streams[device].push_back(*clients[device].create_stream());
        }
    }
    for (int round = 0; round < 4; ++round) {
        std::vector<Handle> copies;
        std::vector<std::byte> expected;
        for (std::uint32_t device = 0; device < devices; ++device) {
            Client& owner = clients[device];
            const std::uint32_t next = (device + 1) % devices;
            for (std::size_t stream = 0; stream < streams_per_device; ++stream) {
                Handle source = *owner.share_with_peers(allocate(owner, size_bytes));
                ASSERT_TRUE(owner.launch(
                    "fill", LaunchConfig::linear(size_bytes, 256), {out(source)},
                    KernelArgs().u64(
                        std::to_integer<std::uint64_t>(ring_value(round, device, stream))),
                    streams[device][stream]));
                auto event = owner.record_event(streams[device][stream]);
                ASSERT_TRUE(event) << event.error().report();
                ASSERT_TRUE(clients[next].wait_event(streams[next][stream], *event));
                Handle copy = allocate(clients[next], size_bytes);
                ASSERT_TRUE(clients[next].copy(source, copy, streams[next][stream]));
                copies.push_back(copy);
                expected.push_back(ring_value(round, device, stream));
            }
        }
        ASSERT_TRUE(runtime->sync_all());
        for (std::size_t index = 0; index < copies.size(); ++index) {
            const std::uint32_t reader =
                (static_cast<std::uint32_t>(index / streams_per_device) + 1) % devices;
            auto read = clients[reader].read(copies[index]);
            ASSERT_TRUE(read) << read.error().report();
            EXPECT_EQ(*read, std::vector<std::byte>(size_bytes, expected[index]))
                << "round " << round;
        }
    }
    EXPECT_TRUE(runtime->races().empty());
}

TEST(SimThreads, a_failure_on_one_stream_reaches_a_peer_consumer_and_spares_an_unrelated_chain) {
    auto runtime = make_runtime(
        SimOptions{.devices = 3, .mode = SchedulerMode::Threads, .grant_all_peers = true});
    Client zero = runtime->client(0);
    Client one = runtime->client(1);
    Client two = runtime->client(2);
    const StreamId zero_side = *zero.create_stream();
    const StreamId one_side = *one.create_stream();
    const StreamId two_side = *two.create_stream();
    Handle failed = *zero.share_with_peers(allocate(zero, 4096));
    Handle consumed = allocate(one, 4096);
    Handle unrelated = allocate(two, 4096);
    Handle unrelated_copy = allocate(two, 4096);
    ASSERT_TRUE(zero.launch("fail", LaunchConfig::linear(64, 8), {out(failed)}, KernelArgs().u64(9),
                            zero_side));
    auto event = zero.record_event(zero_side);
    ASSERT_TRUE(one.wait_event(one_side, *event));
    ASSERT_TRUE(one.launch("copy", LaunchConfig::linear(4096, 256), {in(failed), out(consumed)},
                           KernelArgs(), one_side));
    ASSERT_TRUE(two.launch("fill", LaunchConfig::linear(4096, 256), {out(unrelated)},
                           KernelArgs().u64(6), two_side));
    ASSERT_TRUE(two.launch("copy", LaunchConfig::linear(4096, 256),
                           {in(unrelated), out(unrelated_copy)}, KernelArgs(), two_side));
    ASSERT_TRUE(runtime->sync_all());

    auto read = one.read(consumed);
    ASSERT_FALSE(read);
    const UnwrittenDetails* details = unwritten(read.error());
    ASSERT_NE(details, nullptr) << read.error().report();
    // The skipped copy names the owner's report, whose root is the kernel that failed (P3).
    const Error* cause = details->root.get();
    while (const UnwrittenDetails* hop = unwritten(*cause)) {
        cause = hop->root.get();
    }
    const auto* root = cause->details_as<KernelFailedDetails>();
    ASSERT_NE(root, nullptr) << read.error().report();
    EXPECT_EQ(root->code, 9u);
    EXPECT_EQ(root->device, zero.service());
    auto clean = two.read(unrelated_copy);  // C11: a chain that shares nothing is unaffected.
    ASSERT_TRUE(clean) << clean.error().report();
    EXPECT_EQ(*clean, std::vector<std::byte>(4096, std::byte{6}));
}

// Work a device runs cannot wait for the device's work: a host callable's call that would
// (here a sync, which waits for the callable's own work) is refused, naming the work, in either
// scheduler mode, rather than running the scheduler inside the work or waiting for itself; the
// callable's failure claims its writes (C8).
TEST(SimNestedCalls, a_call_from_inside_work_that_would_wait_is_refused_naming_the_work) {
    for (const SchedulerMode mode : {SchedulerMode::Deterministic, SchedulerMode::Threads}) {
        SCOPED_TRACE(mode == SchedulerMode::Threads ? "threads" : "deterministic");
        auto runtime = make_runtime(SimOptions{.mode = mode});
        Client client = runtime->client(0);
        Handle target = allocate(client, 16);
        std::optional<Error> refused;
        ExternalWork work{"syncs_inside", {out(target)}, {}};
        work.run.host = [&](HostKernelContext&) -> Status {
            Status synced = client.sync();
            if (!synced) {
                refused = synced.error();
            }
            return synced;
        };
        ASSERT_TRUE(client.enqueue(std::move(work)));
        auto read = client.read(target);
        ASSERT_FALSE(read);
        ASSERT_TRUE(refused);
        EXPECT_EQ(refused->kind(), ErrorKind::InvalidArgument);
        EXPECT_NE(refused->message().find("'syncs_inside' (device 0, stream 1"), std::string::npos)
            << refused->report();
        EXPECT_NE(refused->message().find("would have to wait"), std::string::npos);
        const auto* unwritten = std::get_if<UnwrittenDetails>(&read.error().details());
        ASSERT_NE(unwritten, nullptr) << read.error().report();
        EXPECT_EQ(unwritten->root->kind(), ErrorKind::InvalidArgument);
        EXPECT_TRUE(client.sync());  // From outside the work, the same call waits as ever.
    }
}

}  // namespace
}  // namespace tandem::sim

namespace tandem::sim {
namespace {

using namespace testing;

// The engine remembers a bounded number of recorded events; one it forgot (completed long ago)
// is still a valid event to wait on, and orders what waits after everything it covered.
TEST(SimBounds, a_wait_on_an_event_recorded_long_ago_is_valid_and_orders) {
    auto runtime = make_runtime();
    Client client = runtime->client(0);
    Client other = runtime->client(1);
    Handle buffer = allocate(client, 64);
    ASSERT_TRUE(
        client.launch("fill", LaunchConfig::linear(64), {out(buffer)}, KernelArgs().u64(3)));
    Result<Event> first = client.record_event(client.default_stream());
    ASSERT_TRUE(first);
    for (int index = 0; index < 20'000; ++index) {
        ASSERT_TRUE(client.record_event(client.default_stream()));
    }
    ASSERT_TRUE(client.sync());
    ASSERT_TRUE(other.wait_event(other.default_stream(), *first));
    EXPECT_TRUE(runtime->races().empty());
}

// Work that is never synchronised is bounded too: past the bound an enqueue runs the oldest work
// first, and every outcome is still right.
TEST(SimBounds, an_unsynchronised_program_past_the_bound_of_unsettled_work_keeps_its_outcomes) {
    auto runtime = make_runtime();
    Client client = runtime->client(0);
    Handle buffer = allocate(client, 8);
    ASSERT_TRUE(client.write(buffer, std::vector<std::byte>(8, std::byte{0})));
    for (int index = 0; index < 40'000; ++index) {
        ASSERT_TRUE(client.launch("fill", LaunchConfig::linear(8), {out(buffer)},
                                  KernelArgs().u64(index % 200)));
    }
    auto read = client.read(buffer);
    ASSERT_TRUE(read) << read.error().report();
    EXPECT_EQ(read->front(), std::byte{39'999 % 200});
}

}  // namespace
}  // namespace tandem::sim
