#include "tandem/core/claim_store.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace tandem {
namespace {

constexpr ServiceId device0{7, 0};

class ClaimStoreTest : public ::testing::Test {
protected:
    ClaimStore store{device0};
    MemoryId a = MemoryId::next();
    MemoryId b = MemoryId::next();
    MemoryId c = MemoryId::next();
    MemoryId d = MemoryId::next();

    static Error boom(std::uint32_t code = 1) {
        return Error::kernel_failed({"boom", device0, StreamId{1}, code});
    }
    void expect_consistent() {
        std::optional<std::string> broken = store.check_invariants();
        EXPECT_FALSE(broken) << *broken;
    }
};

TEST_F(ClaimStoreTest, a_failed_scope_claims_its_write_set_with_one_new_failure) {
    ClaimKey writes[] = {{a, {0, 64}}, {b, {0, 32}}};
    WriteScope scope = store.begin_write("boom", writes);
    FailureId failure = scope.fail(boom());
    EXPECT_EQ(store.allocations_carrying(failure), 2u);
    EXPECT_EQ(store.failure_count(), 1u);
    expect_consistent();
}

TEST_F(ClaimStoreTest, a_landed_write_releases_exactly_its_range) {
    ClaimKey whole[] = {{a, {0, 100}}};
    FailureId failure = store.fail(whole, boom());
    ClaimKey middle[] = {{a, {40, 60}}};
    store.begin_write("rewrite", middle).succeed();
    EXPECT_TRUE(store.check(middle));
    ClaimKey left[] = {{a, {0, 40}}};
    Status read = store.check(left);
    ASSERT_FALSE(read);
    EXPECT_EQ(read.error().details_as<UnwrittenDetails>()->failure, failure);
    expect_consistent();
}

TEST_F(ClaimStoreTest, a_read_names_every_distinct_failure_once_in_order_of_discovery) {
    ClaimKey first[] = {{a, {0, 10}}, {b, {0, 10}}};
    ClaimKey second[] = {{a, {10, 20}}};
    FailureId f1 = store.fail(first, boom(1));
    FailureId f2 = store.fail(second, boom(2));
    ClaimKey reads[] = {{a, {0, 20}}, {b, {0, 10}}, {c, {0, 8}}};
    Status read = store.check(reads);
    ASSERT_FALSE(read);
    ASSERT_EQ(read.error().kind(), ErrorKind::Several);
    const auto& errors = read.error().details_as<SeveralDetails>()->errors;
    ASSERT_EQ(errors.size(), 2u);
    EXPECT_EQ(errors[0].details_as<UnwrittenDetails>()->failure, f1);
    EXPECT_EQ(errors[1].details_as<UnwrittenDetails>()->failure, f2);
    EXPECT_EQ(errors[0].details_as<UnwrittenDetails>()->root->details_as<KernelFailedDetails>()->code,
              1u);
}

TEST_F(ClaimStoreTest, an_empty_read_never_fails) {
    ClaimKey whole[] = {{a, {0, 100}}};
    (void)store.fail(whole, boom());
    ClaimKey empty[] = {{a, {50, 50}}};
    EXPECT_TRUE(store.check(empty));
}

TEST_F(ClaimStoreTest, a_failure_lives_as_long_as_some_allocation_carries_it) {
    ClaimKey writes[] = {{a, {0, 10}}, {b, {0, 10}}};
    FailureId failure = store.fail(writes, boom());
    store.release(writes[0]);
    EXPECT_TRUE(store.failure_alive(failure));
    EXPECT_EQ(store.allocations_carrying(failure), 1u);
    store.forget(b);
    EXPECT_FALSE(store.failure_alive(failure));
    EXPECT_TRUE(store.drained());
}

TEST_F(ClaimStoreTest, a_failure_that_claims_nothing_is_dropped_at_once) {
    ClaimKey nothing[] = {{a, {5, 5}}};
    FailureId failure = store.fail(nothing, boom());
    EXPECT_FALSE(store.failure_alive(failure));
    EXPECT_TRUE(store.drained());
}

TEST_F(ClaimStoreTest, failure_ids_are_never_reused) {
    ClaimKey writes[] = {{a, {0, 10}}};
    FailureId first = store.fail(writes, boom());
    store.forget(a);
    FailureId second = store.fail(writes, boom());
    EXPECT_LT(first.value, second.value);
}

TEST_F(ClaimStoreTest, claiming_the_same_bytes_with_the_same_failure_changes_no_count) {
    ClaimKey writes[] = {{a, {0, 10}}};
    FailureId failure = store.fail(writes, boom());
    store.claim(writes[0], failure);
    store.claim({a, {2, 4}}, failure);
    EXPECT_EQ(store.allocations_carrying(failure), 1u);
    expect_consistent();
}

TEST_F(ClaimStoreTest, overwriting_the_last_claim_of_a_failure_ends_it) {
    ClaimKey writes[] = {{a, {0, 10}}};
    FailureId old_failure = store.fail(writes, boom(1));
    FailureId new_failure = store.fail(writes, boom(2));
    EXPECT_FALSE(store.failure_alive(old_failure));
    EXPECT_EQ(store.allocations_carrying(new_failure), 1u);
}

TEST_F(ClaimStoreTest, a_skipped_launch_claims_its_outputs_with_the_first_claimed_input) {
    ClaimKey root_writes[] = {{a, {0, 16}}};
    FailureId failure = store.fail(root_writes, boom());
    ClaimKey inputs[] = {{b, {0, 16}}, {a, {0, 16}}};
    ClaimKey outputs[] = {{c, {0, 16}}};
    WriteScope scope = store.enter_launch("consumer", inputs, outputs);
    EXPECT_TRUE(scope.skipped());
    EXPECT_EQ(scope.failure(), failure);
    EXPECT_EQ(store.failure_count(), 1u);
    EXPECT_EQ(store.allocations_carrying(failure), 2u);
    expect_consistent();
}

TEST_F(ClaimStoreTest, pure_outputs_are_not_checked_so_writing_a_stale_buffer_repairs_it) {
    ClaimKey stale[] = {{a, {0, 16}}};
    (void)store.fail(stale, boom());
    WriteScope scope = store.enter_launch("fill", {}, stale);
    ASSERT_FALSE(scope.skipped());
    scope.succeed();
    EXPECT_TRUE(store.check(stale));
    EXPECT_TRUE(store.drained());
}

TEST_F(ClaimStoreTest, the_report_walks_skip_records_back_to_the_root_newest_hop_first) {
    ClaimKey ka[] = {{a, {0, 8}}};
    ClaimKey kb[] = {{b, {0, 8}}};
    ClaimKey kc[] = {{c, {0, 8}}};
    ClaimKey kd[] = {{d, {0, 8}}};
    (void)store.fail(ka, boom(42));
    (void)store.enter_launch("first", ka, kb);
    (void)store.enter_launch("second", kb, kc);
    (void)store.enter_launch("third", kc, kd);
    Status read = store.check(kd);
    ASSERT_FALSE(read);
    const auto* details = read.error().details_as<UnwrittenDetails>();
    ASSERT_NE(details, nullptr);
    ASSERT_EQ(details->chain.size(), 3u);
    EXPECT_EQ(details->chain[0].kernel, "third");
    EXPECT_EQ(details->chain[1].kernel, "second");
    EXPECT_EQ(details->chain[2].kernel, "first");
    EXPECT_EQ(details->root->details_as<KernelFailedDetails>()->code, 42u);
    std::string report = read.error().report();
    EXPECT_NE(report.find("skipped 'third'"), std::string::npos) << report;
    EXPECT_NE(report.find("code 42"), std::string::npos) << report;
}

TEST_F(ClaimStoreTest, the_report_keeps_the_newest_sixteen_records_and_counts_the_rest) {
    std::vector<MemoryId> chain{a};
    (void)store.fail(std::vector<ClaimKey>{{a, {0, 8}}}, boom());
    for (int hop = 0; hop < 20; ++hop) {
        MemoryId next = MemoryId::next();
        ClaimKey in[] = {{chain.back(), {0, 8}}};
        ClaimKey out[] = {{next, {0, 8}}};
        (void)store.enter_launch("hop" + std::to_string(hop), in, out);
        chain.push_back(next);
    }
    ClaimKey last[] = {{chain.back(), {0, 8}}};
    Status read = store.check(last);
    ASSERT_FALSE(read);
    const auto* details = read.error().details_as<UnwrittenDetails>();
    EXPECT_EQ(details->chain.size(), FailureGraph::max_skip_records);
    EXPECT_EQ(details->dropped_records, 4u);
    EXPECT_EQ(details->chain.front().kernel, "hop19");
    ASSERT_NE(details->root, nullptr);
    EXPECT_EQ(details->root->kind(), ErrorKind::KernelFailed);
}

TEST_F(ClaimStoreTest, a_throw_inside_the_work_leaves_the_write_set_torn_down) {
    ClaimKey writes[] = {{a, {0, 16}}};
    try {
        WriteScope scope = store.begin_write("thrower", writes);
        throw std::runtime_error("boom");
    } catch (const std::runtime_error&) {
    }
    Status read = store.check(writes);
    ASSERT_FALSE(read);
    EXPECT_EQ(read.error().details_as<UnwrittenDetails>()->root->kind(), ErrorKind::TornDown);
}

TEST_F(ClaimStoreTest, a_refused_launch_claims_only_its_declared_outputs) {
    ClaimKey input[] = {{a, {0, 16}}};
    ClaimKey output[] = {{b, {0, 16}}};
    WriteScope scope = store.begin_write("refused", output);
    (void)scope.fail(Error::launch_refused("refused", "block of 4096 threads"));
    EXPECT_TRUE(store.check(input));
    Status read = store.check(output);
    ASSERT_FALSE(read);
    EXPECT_EQ(read.error().details_as<UnwrittenDetails>()->root->kind(), ErrorKind::LaunchRefused);
}

TEST_F(ClaimStoreTest, chains_that_share_no_allocation_never_affect_each_other) {
    ClaimKey left[] = {{a, {0, 16}}};
    ClaimKey right[] = {{b, {0, 16}}};
    (void)store.fail(left, boom());
    WriteScope scope = store.enter_launch("independent", right, std::span<const ClaimKey>(right));
    EXPECT_FALSE(scope.skipped());
    scope.succeed();
    EXPECT_TRUE(store.check(right));
}

TEST_F(ClaimStoreTest, a_freed_allocation_sheds_its_claims_and_a_new_occupant_starts_clean) {
    ClaimKey writes[] = {{a, {0, 16}}};
    (void)store.fail(writes, boom());
    store.forget(a);
    EXPECT_TRUE(store.check(writes));
    EXPECT_TRUE(store.drained());
}

}  // namespace
}  // namespace tandem
