// The settle pipeline, driven as a backend drives it: work enqueued, examined, reported, settled.

#include "one_device.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace tandem {
namespace {

using testing::run_through;
using testing::work_over;

constexpr ServiceId device0{1, 0};  // As `work_over` runs its work.

class SettlePipelineTest : public ::testing::Test {
protected:
    testing::OneDevice device{device0};
    ClaimStore& store = device.store;
    SettlePipeline pipeline{device};
    MemoryId a = MemoryId::next();
    MemoryId b = MemoryId::next();
    MemoryId c = MemoryId::next();
    MemoryId d = MemoryId::next();

    static Error boom(std::uint32_t code = 1) {
        return Error::kernel_failed({"boom", device0, StreamId{1}, code});
    }
    static SettlePipeline::Inputs inputs_of(const SettlePipeline& pipeline, const Work& work) {
        return pipeline.examine(work, [](const Work&) { return true; });
    }
    void expect_consistent() {
        std::optional<std::string> broken = store.check_invariants();
        EXPECT_FALSE(broken) << *broken;
    }
};

TEST_F(SettlePipelineTest, failed_work_claims_its_write_set_with_one_new_failure) {
    ClaimKey writes[] = {{a, {0, 64}}, {b, {0, 32}}};
    run_through(pipeline, work_over("boom", {}, writes), boom());
    const FailureId failure = store.first_claimed(writes)->second;
    EXPECT_EQ(store.allocations_carrying(failure), 2u);
    EXPECT_EQ(store.failure_count(), 1u);
    expect_consistent();
}

TEST_F(SettlePipelineTest, a_skipped_launch_claims_its_outputs_with_the_first_claimed_input) {
    ClaimKey root_writes[] = {{a, {0, 16}}};
    const FailureId failure = store.fail(root_writes, boom());
    ClaimKey inputs[] = {{b, {0, 16}}, {a, {0, 16}}};
    ClaimKey outputs[] = {{c, {0, 16}}};
    auto consumer = work_over("consumer", inputs, outputs);
    run_through(pipeline, consumer);
    EXPECT_EQ(consumer->reported(), Work::Report::NotRun);  // Held back: it wrote nothing.
    EXPECT_TRUE(consumer->failed());
    EXPECT_EQ(store.first_claimed(outputs)->second, failure);
    EXPECT_EQ(store.failure_count(), 1u);
    EXPECT_EQ(store.allocations_carrying(failure), 2u);
    expect_consistent();
}

TEST_F(SettlePipelineTest, pure_outputs_are_not_checked_so_writing_a_stale_buffer_repairs_it) {
    ClaimKey stale[] = {{a, {0, 16}}};
    (void)store.fail(stale, boom());
    auto fill = work_over("fill", {}, stale);
    run_through(pipeline, fill);
    EXPECT_EQ(fill->reported(), Work::Report::Landed);
    EXPECT_TRUE(store.check(stale));
    EXPECT_TRUE(store.drained());
}

TEST_F(SettlePipelineTest, the_report_walks_skip_records_back_to_the_root_newest_hop_first) {
    ClaimKey ka[] = {{a, {0, 8}}};
    ClaimKey kb[] = {{b, {0, 8}}};
    ClaimKey kc[] = {{c, {0, 8}}};
    ClaimKey kd[] = {{d, {0, 8}}};
    (void)store.fail(ka, boom(42));
    run_through(pipeline, work_over("first", ka, kb));
    run_through(pipeline, work_over("second", kb, kc));
    run_through(pipeline, work_over("third", kc, kd));
    Status read = store.check(kd);
    ASSERT_FALSE(read);
    const auto* details = read.error().details_as<UnwrittenDetails>();
    ASSERT_NE(details, nullptr);
    ASSERT_EQ(details->chain.size(), 3u);
    EXPECT_EQ(details->chain[0].kernel, "third");
    EXPECT_EQ(details->chain[1].kernel, "second");
    EXPECT_EQ(details->chain[2].kernel, "first");
    EXPECT_EQ(details->chain[0].device, device0);
    EXPECT_EQ(details->root->details_as<KernelFailedDetails>()->code, 42u);
    std::string report = read.error().report();
    EXPECT_NE(report.find("skipped 'third'"), std::string::npos) << report;
}

TEST_F(SettlePipelineTest, the_report_keeps_the_newest_sixteen_records_and_counts_the_rest) {
    std::vector<MemoryId> chain{a};
    (void)store.fail(std::vector<ClaimKey>{{a, {0, 8}}}, boom());
    for (int hop = 0; hop < 20; ++hop) {
        MemoryId next = MemoryId::next();
        ClaimKey in[] = {{chain.back(), {0, 8}}};
        ClaimKey out[] = {{next, {0, 8}}};
        run_through(pipeline, work_over("hop" + std::to_string(hop), in, out));
        chain.push_back(next);
    }
    ClaimKey last[] = {{chain.back(), {0, 8}}};
    Status read = store.check(last);
    ASSERT_FALSE(read);
    const auto* details = read.error().details_as<UnwrittenDetails>();
    EXPECT_EQ(details->chain.size(), FailureGraph::max_skip_records);
    EXPECT_EQ(details->dropped_records, 4u);
    EXPECT_EQ(details->chain.front().kernel, "hop19");
    EXPECT_EQ(details->root->kind(), ErrorKind::KernelFailed);
}

TEST_F(SettlePipelineTest, work_that_threw_leaves_its_write_set_torn_down) {
    ClaimKey writes[] = {{a, {0, 16}}};
    run_through(pipeline, work_over("thrower", {}, writes), Error::torn_down("it threw"));
    Status read = store.check(writes);
    ASSERT_FALSE(read);
    EXPECT_EQ(read.error().details_as<UnwrittenDetails>()->root->kind(), ErrorKind::TornDown);
}

TEST_F(SettlePipelineTest, refused_work_claims_only_its_declared_outputs) {
    ClaimKey input[] = {{a, {0, 16}}};
    ClaimKey output[] = {{b, {0, 16}}};
    auto refused = work_over("refused", {}, output);
    refused->refuse(Error::launch_refused("refused", "block of 4096 threads"));
    pipeline.enqueue(refused);
    pipeline.settle_ready();  // Refused work settles without a report.
    EXPECT_TRUE(refused->settled());
    EXPECT_TRUE(store.check(input));
    Status read = store.check(output);
    ASSERT_FALSE(read);
    EXPECT_EQ(read.error().details_as<UnwrittenDetails>()->root->kind(), ErrorKind::LaunchRefused);
}

TEST_F(SettlePipelineTest, chains_that_share_no_allocation_never_affect_each_other) {
    ClaimKey left[] = {{a, {0, 16}}};
    ClaimKey right[] = {{b, {0, 16}}};
    (void)store.fail(left, boom());
    auto independent = work_over("independent", right, right);
    run_through(pipeline, independent);
    EXPECT_EQ(independent->reported(), Work::Report::Landed);
    EXPECT_TRUE(store.check(right));
}

// Outcomes follow program order (C13, P5): a consumer and a rewrite enqueued while a producer's
// outcome is unknown settle after it, whatever order the reports come in.
TEST_F(SettlePipelineTest, work_settles_in_enqueue_order_whatever_order_it_reports_in) {
    ClaimKey ka[] = {{a, {0, 16}}};
    ClaimKey kb[] = {{b, {0, 16}}};
    auto producer = work_over("producer", {}, ka);
    auto consumer = work_over("consumer", ka, kb);
    auto rewrite = work_over("rewrite", {}, kb);
    for (const auto& work : {producer, consumer, rewrite}) {
        pipeline.enqueue(work);
    }
    EXPECT_EQ(inputs_of(pipeline, *consumer), SettlePipeline::Inputs::Pending);
    rewrite->ran(Status{});
    consumer->ran(Status{});
    consumer->set_provisional(true);  // It ran before its producer's outcome was known.
    pipeline.settle_ready();
    EXPECT_FALSE(rewrite->settled());  // Waits for the producer, enqueued before it.
    producer->ran(boom(5));
    pipeline.settle_ready();
    EXPECT_TRUE(pipeline.empty());
    EXPECT_TRUE(consumer->failed());  // C13: it consumed failed bytes.
    EXPECT_FALSE(rewrite->failed());
    EXPECT_TRUE(store.check(kb));  // The later rewrite landed on the consumer's bytes.
    EXPECT_FALSE(store.check(ka));
}

// Skipped work must not run: the walk finds, per input byte, the newest writer before the
// consumer. A later partial rewrite covers some bytes; the failed producer still decides the rest.
TEST_F(SettlePipelineTest, examine_holds_back_work_whose_uncovered_bytes_a_failed_writer_decides) {
    ClaimKey whole[] = {{a, {0, 16}}};
    ClaimKey front[] = {{a, {0, 8}}};
    ClaimKey out[] = {{b, {0, 16}}};
    auto producer = work_over("producer", {}, whole);
    auto partial = work_over("partial", {}, front);
    pipeline.enqueue(producer);
    pipeline.enqueue(partial);
    producer->ran(boom(3));
    auto reads_front = work_over("reads_front", front, out);
    auto reads_whole = work_over("reads_whole", whole, out);
    std::vector<const Work*> visited;
    EXPECT_EQ(pipeline.examine(*reads_front,
                               [&](const Work& producer_seen) {
                                   visited.push_back(&producer_seen);
                                   return true;
                               }),
              SettlePipeline::Inputs::Pending);
    ASSERT_EQ(visited.size(), 1u);
    EXPECT_EQ(visited[0], partial.get());  // The failed producer is superseded for these bytes.
    EXPECT_EQ(inputs_of(pipeline, *reads_whole), SettlePipeline::Inputs::Claimed);
    partial->ran(Status{});
    pipeline.settle_ready();
    EXPECT_EQ(inputs_of(pipeline, *reads_front), SettlePipeline::Inputs::Clean);
    EXPECT_EQ(inputs_of(pipeline, *reads_whole), SettlePipeline::Inputs::Claimed);
}

TEST_F(SettlePipelineTest, a_window_records_the_clean_writes_of_its_work_once_each) {
    ClaimKey ka[] = {{a, {0, 16}}};
    ClaimKey kb[] = {{b, {0, 16}}};
    auto window = std::make_shared<CaptureWindow>();
    for (const auto* keys : {&ka, &kb, &ka}) {
        auto work = work_over("launch", {}, *keys);
        work->window = window;
        pipeline.enqueue(work);
        EXPECT_EQ(window->unsettled, 1u);
        work->ran(Status{});
        pipeline.settle_ready();
    }
    EXPECT_EQ(window->unsettled, 0u);
    EXPECT_FALSE(window->doomed);
    window->close();  // What ending the window does: deduplicated by claim key, once.
    EXPECT_EQ(window->write_set.size(), 2u);
    auto failing = work_over("failing", {}, kb);
    failing->window = window;
    run_through(pipeline, failing, boom());
    ASSERT_TRUE(window->doomed);
    EXPECT_EQ(window->doomed->kind(), ErrorKind::TornDown);
}

TEST_F(SettlePipelineTest, a_long_run_of_pending_work_settles_in_order_and_leaves_nothing) {
    ClaimKey key[] = {{a, {0, 16}}};
    std::vector<std::shared_ptr<Work>> works;
    for (int index = 0; index < 1000; ++index) {
        works.push_back(work_over("update", key, key));
        pipeline.enqueue(works.back());
    }
    EXPECT_EQ(pipeline.size(), 1000u);
    EXPECT_TRUE(pipeline.writes_unsettled(device0, key));
    for (auto each = works.rbegin(); each != works.rend(); ++each) {
        (*each)->ran(Status{});  // Reported newest first.
    }
    std::uint64_t last = 0;
    pipeline.settle_ready([&](std::shared_ptr<Work>&& settled) {
        EXPECT_GT(settled->sequence(), last);
        last = settled->sequence();
    });
    EXPECT_TRUE(pipeline.empty());
    EXPECT_FALSE(pipeline.writes_unsettled(device0, key));
    EXPECT_TRUE(store.drained());
}

// The scope of work a backend runs at once (`run_now`): whichever way the backend's part ends,
// the work settles by the rules. A throw is a TornDown failure of its outputs (C8); a consumer
// of those bytes is skipped without its part being called (C9); on a lost device nothing runs
// and the work fails with the loss (D1); refused work is not run (C10).
TEST_F(SettlePipelineTest, run_now_settles_every_way_out_of_the_backends_part_by_the_rules) {
    ClaimKey ka[] = {{a, {0, 16}}};
    ClaimKey kb[] = {{b, {0, 16}}};
    ClaimKey kc[] = {{c, {0, 16}}};
    auto thrower = work_over("thrower", {}, ka);
    pipeline.enqueue(thrower);
    pipeline.run_now(*thrower, std::nullopt, []() -> Status { throw std::runtime_error("x"); });
    pipeline.settle_ready();
    EXPECT_TRUE(thrower->failed());
    ASSERT_TRUE(thrower->failure());
    EXPECT_EQ(thrower->failure()->kind(), ErrorKind::TornDown);
    EXPECT_NE(thrower->failure()->message().find("thrower"), std::string::npos);

    int called = 0;
    const auto part = [&] {
        ++called;
        return Status{};
    };
    auto consumer = work_over("consumer", ka, kb);
    pipeline.enqueue(consumer);
    pipeline.run_now(*consumer, std::nullopt, part);
    pipeline.settle_ready();
    EXPECT_EQ(called, 0) << "skipped work was run";
    EXPECT_EQ(consumer->reported(), Work::Report::NotRun);
    EXPECT_TRUE(consumer->failed());

    auto on_lost = work_over("on a lost device", {}, kc);
    pipeline.enqueue(on_lost);
    pipeline.run_now(*on_lost, Error::device_lost(device0, "gone"), part);
    pipeline.settle_ready();
    EXPECT_EQ(called, 0) << "work on a lost device was run";
    ASSERT_TRUE(on_lost->failure());
    EXPECT_EQ(on_lost->failure()->kind(), ErrorKind::DeviceLost);

    auto refused = work_over("refused", {}, kc);
    refused->refuse(Error::launch_refused("refused", "past the limits"));
    pipeline.enqueue(refused);
    pipeline.run_now(*refused, std::nullopt, part);
    pipeline.settle_ready();
    EXPECT_EQ(called, 0) << "refused work was run";
    EXPECT_TRUE(refused->failed());

    auto clean = work_over("clean", {}, kc);
    pipeline.enqueue(clean);
    pipeline.run_now(*clean, std::nullopt, part);
    pipeline.settle_ready();
    EXPECT_EQ(called, 1);
    EXPECT_FALSE(clean->failed());
    expect_consistent();
}

/// A device whose books always read as broken.
class BrokenBooks final : public testing::StoreDirectory {
public:
    explicit BrokenBooks(ServiceId service) : store(service) {}
    ClaimStore& store_of(ServiceId) const override { return store; }
    ServiceId service_of(std::uint32_t) const override { return store.device(); }
    bool reaches(ServiceId service) const override { return service == store.device(); }
    std::optional<std::string> check_invariants(ServiceId) const override {
        return "broken on purpose";
    }
    mutable ClaimStore store;
};

// Where checking is on (`check_after_settles`: builds without NDEBUG, the simulator's
// deterministic mode), the books are checked after settles, on every backend, and a broken one
// aborts naming the work settled; where it is off, nothing is checked.
TEST(SettlePipelineBooks, a_broken_book_aborts_naming_the_work_that_settled) {
    BrokenBooks device{device0};
    SettlePipeline pipeline{device};
    const ClaimKey key[] = {{MemoryId::next(), {0, 8}}};
    pipeline.check_after_settles(false);
    run_through(pipeline, work_over("unchecked", {}, key));
    pipeline.check_after_settles(true, "(seed 7)");
    EXPECT_DEATH(run_through(pipeline, work_over("the culprit", {}, key)),
                 "invariant broken after settling 'the culprit' \\(seed 7\\): broken on purpose");
}

}  // namespace
}  // namespace tandem
