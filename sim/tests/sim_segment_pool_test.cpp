// Segments kept between runtimes (SegmentPool): a program run on reused segments behaves exactly
// as on fresh ones, and a kept segment shows nothing of the runtime that used it before.

#include "sim_test_support.hpp"

#include "tandem/sim/segment.hpp"

#include <regex>
#include <string>

namespace tandem::sim {
namespace {

using namespace testing;

constexpr std::uint64_t capacity_bytes = std::uint64_t{8} << 20;

/// Everything a run shows: its trace, its hash and steps, the addresses it was given and every
/// byte it read, bytes never written (the seed's noise) included.
struct Observed {
    std::vector<std::string> trace;
    std::uint64_t trace_hash = 0;
    std::uint64_t steps = 0;
    std::vector<std::uint64_t> addresses;
    std::vector<std::vector<std::byte>> reads;
    bool operator==(const Observed&) const = default;
};

/// The runtime's id is random and appears in reports; it is the one thing runs may differ in.
/// `text` without the runtime's name (" of runtime 3"): each run is a runtime of its own.
std::string without_runtime_name(const std::string& text) {
    static const std::regex name(" of runtime [0-9]+");
    return std::regex_replace(text, name, "");
}

Observed run_program(std::uint64_t seed, std::shared_ptr<SegmentPool> pool) {
    auto runtime = make_runtime(SimOptions{.seed = seed,
                                           .capacity_bytes = capacity_bytes,
                                           .grant_all_peers = true,
                                           .record_trace = true,
                                           .segments = std::move(pool)});
    Client zero = runtime->client(0);
    Client one = runtime->client(1);
    const StreamId side = *one.create_stream();
    Handle shared = *zero.share_with_peers(allocate(zero, 4096));
    Handle fresh = allocate(zero, 1000);
    Handle failed = allocate(one, 512);
    Handle copied = allocate(one, 4096);
    Handle large = allocate(one, 300 * 1024);  // A region of its own, past the sliced pool.
    Observed observed;
    for (const Handle* handle : {&shared, &fresh, &failed, &copied, &large}) {
        observed.addresses.push_back(handle->memory().allocation().address);
    }
    EXPECT_TRUE(
        zero.launch("fill", LaunchConfig::linear(4096, 256), {out(shared)}, KernelArgs().u64(7)));
    EXPECT_TRUE(
        one.launch("fail", LaunchConfig::linear(64, 8), {out(failed)}, KernelArgs().u64(9), side));
    auto event = zero.record_event(zero.default_stream());
    EXPECT_TRUE(one.wait_event(one.default_stream(), *event));
    EXPECT_TRUE(one.launch("copy", LaunchConfig::linear(4096, 256), {in(shared), out(copied)}));
    EXPECT_TRUE(one.write(*large.slice(0, 64), std::vector<std::byte>(64, std::byte{3})));
    EXPECT_TRUE(runtime->sync_all());
    observed.reads.push_back(*zero.read(fresh));
    observed.reads.push_back(*one.read(copied));
    observed.reads.push_back(*one.read(large));
    EXPECT_FALSE(one.read(failed));
    for (const TraceRecord& record : runtime->trace()) {
        observed.trace.push_back(std::to_string(record.step) + " d" +
                                 std::to_string(record.device) + " " + record.label + " " +
                                 without_runtime_name(record.outcome));
    }
    observed.trace_hash = runtime->trace_hash();
    observed.steps = runtime->steps();
    return observed;
}

TEST(SimSegmentPool, a_program_on_reused_segments_runs_exactly_as_on_fresh_ones) {
    auto pool = std::make_shared<SegmentPool>();
    for (std::uint64_t seed : {1u, 2u, 33u}) {
        const Observed fresh = run_program(seed, nullptr);
        ASSERT_FALSE(fresh.trace.empty());
        // Another program first, so that the segments hold what it left.
        (void)run_program(seed + 1000, pool);
        const std::uint64_t reused_before = pool->reused();
        const Observed reused = run_program(seed, pool);
        EXPECT_EQ(pool->reused(), reused_before + 2) << "the run did not reuse both segments";
        EXPECT_EQ(reused.trace, fresh.trace) << "seed " << seed;
        EXPECT_EQ(reused.trace_hash, fresh.trace_hash) << "seed " << seed;
        EXPECT_EQ(reused.steps, fresh.steps);
        EXPECT_EQ(reused.addresses, fresh.addresses);
        EXPECT_EQ(reused.reads, fresh.reads) << "seed " << seed;
    }
}

TEST(SimSegmentPool, a_kept_segment_reads_as_zeros_where_its_last_runtime_wrote) {
    auto pool = std::make_shared<SegmentPool>();
    std::vector<std::string> names;
    {
        auto runtime = make_runtime(
            SimOptions{.devices = 1, .capacity_bytes = capacity_bytes, .segments = pool});
        Client client = runtime->client(0);
        Handle handle = allocate(client, 1 << 20);
        ASSERT_TRUE(client.write(handle, std::vector<std::byte>(1 << 20, std::byte{0xab})));
        ASSERT_TRUE(client.sync());
        names = runtime->segment_names();
    }
    ASSERT_EQ(pool->kept(), 1u);
    Result<std::unique_ptr<Segment>> segment = pool->take(1, 0, capacity_bytes);
    ASSERT_TRUE(segment);
    EXPECT_EQ((*segment)->name(), names.at(0)) << "a new segment, not the kept one";
    const std::byte* bytes = (*segment)->data();
    EXPECT_TRUE(std::all_of(bytes, bytes + (2 << 20), [](std::byte b) {
        return b == std::byte{0};
    })) << "the kept segment still holds the bytes of the runtime before";
}

TEST(SimSegmentPool, only_a_segment_of_the_same_capacity_and_device_is_reused) {
    auto pool = std::make_shared<SegmentPool>();
    (void)make_runtime(
        SimOptions{.devices = 2, .capacity_bytes = capacity_bytes, .segments = pool});
    EXPECT_EQ(pool->kept(), 2u);
    (void)make_runtime(
        SimOptions{.devices = 1, .capacity_bytes = capacity_bytes * 2, .segments = pool});
    EXPECT_EQ(pool->reused(), 0u);
    EXPECT_EQ(pool->kept(), 3u);
    Result<std::unique_ptr<Segment>> second = pool->take(1, 1, capacity_bytes);
    ASSERT_TRUE(second);
    EXPECT_TRUE((*second)->name().ends_with("-d1")) << (*second)->name();
    EXPECT_EQ(pool->reused(), 1u);
}

TEST(SimSegmentPool, kept_segments_are_not_in_dev_shm_either) {
    auto pool = std::make_shared<SegmentPool>();
    std::vector<std::string> names =
        make_runtime(SimOptions{.capacity_bytes = capacity_bytes, .segments = pool})
            ->segment_names();
    ASSERT_EQ(names.size(), 2u);
    EXPECT_EQ(pool->kept(), 2u);
    // A kept segment is held by its mapping alone, so a process that dies holding a pool leaves
    // nothing behind either.
    struct stat status {};
    for (const std::string& name : names) {
        EXPECT_NE(::stat(("/dev/shm/" + name).c_str(), &status), 0) << name << " is in /dev/shm";
    }
}

TEST(SimSegmentPool, the_pool_keeps_at_most_its_bound) {
    auto pool = std::make_shared<SegmentPool>();
    std::vector<std::shared_ptr<SimRuntime>> runtimes;
    const std::size_t devices = SegmentPool::max_kept_segments / 4 + 1;
    for (int runtime = 0; runtime < 4; ++runtime) {
        runtimes.push_back(make_runtime(SimOptions{.devices = static_cast<std::uint32_t>(devices),
                                                   .capacity_bytes = capacity_bytes,
                                                   .segments = pool}));
    }
    runtimes.clear();
    EXPECT_EQ(pool->kept(), SegmentPool::max_kept_segments);
}

}  // namespace
}  // namespace tandem::sim
