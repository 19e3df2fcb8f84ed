#include "tandem/backend/claim_store.hpp"

#include <gtest/gtest.h>

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

TEST_F(ClaimStoreTest, a_landed_write_releases_exactly_its_range) {
    ClaimKey whole[] = {{a, {0, 100}}};
    FailureId failure = store.fail(whole, boom());
    ClaimKey middle[] = {{a, {40, 60}}};
    store.release(middle[0]);
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
    EXPECT_EQ(
        errors[0].details_as<UnwrittenDetails>()->root->details_as<KernelFailedDetails>()->code,
        1u);
}

// Work that fails with an Unwritten error (it could not write because bytes it needed, on
// another device or in another process, were claimed) is a hop of that failure: the new failure
// carries the error's root and hops, oldest first, and a read reports one chain, not a report
// inside a report.
TEST_F(ClaimStoreTest, a_failure_with_an_unwritten_error_carries_its_root_and_hops) {
    const ServiceId elsewhere{9, 0, 1, 1};
    UnwrittenDetails carried;
    carried.failure = FailureId{4};
    carried.allocations = 1;
    // The newest hop is the work itself: it needed `c` (the bytes it found claimed) and would
    // have written `a`; `c` was left claimed by an older hop that needed `d`.
    const ClaimKey older_wrote[] = {{c, {0, 8}}};
    const ClaimKey newer_wrote[] = {{a, {0, 16}}};
    carried.chain = {SkipRecord{"newer", elsewhere, {c, {0, 8}}, {std::begin(newer_wrote),
                                                                 std::end(newer_wrote)}},
                     SkipRecord{"older", elsewhere, {d, {0, 8}}, {std::begin(older_wrote),
                                                                 std::end(older_wrote)}}};
    carried.root = std::make_shared<const Error>(boom(31));
    ClaimKey whole[] = {{a, {0, 16}}};
    (void)store.fail(whole, Error::unwritten(carried));
    Status read = store.check(whole);
    ASSERT_FALSE(read);
    const auto* details = read.error().details_as<UnwrittenDetails>();
    ASSERT_NE(details, nullptr) << read.error().report();
    ASSERT_NE(details->root, nullptr);
    EXPECT_EQ(details->root->kind(), ErrorKind::KernelFailed) << read.error().report();
    EXPECT_EQ(details->root->details_as<KernelFailedDetails>()->code, 31u);
    ASSERT_EQ(details->chain.size(), 2u) << read.error().report();
    EXPECT_EQ(details->chain[0].kernel, "newer");
    EXPECT_EQ(details->chain[1].kernel, "older");
    expect_consistent();
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

TEST_F(ClaimStoreTest, a_freed_allocation_sheds_its_claims_and_a_new_occupant_starts_clean) {
    ClaimKey writes[] = {{a, {0, 16}}};
    (void)store.fail(writes, boom());
    store.forget(a);
    EXPECT_TRUE(store.check(writes));
    EXPECT_TRUE(store.drained());
}

// Twelve failures, each claiming two ranges of `a` twelve claims apart, and the first also a
// range of `b`: a release or a free of `a` meets each failure twice, past the touched failures it
// keeps unique as it goes, and must still drop each once.
class ManyFailures : public ClaimStoreTest {
protected:
    static constexpr int failures = 12;
    std::vector<FailureId> ids;

    void SetUp() override {
        for (int index = 0; index < failures; ++index) {
            ClaimKey first = {a, {index * 10ULL, index * 10ULL + 5}};
            ids.push_back(store.fail({&first, 1}, boom(static_cast<std::uint32_t>(index))));
            store.claim({a, {(index + failures) * 10ULL, (index + failures) * 10ULL + 5}},
                        ids.back());
        }
        store.claim({b, {0, 4}}, ids.front());
        expect_consistent();
    }
    void expect_only_the_first_alive() {
        EXPECT_TRUE(store.failure_alive(ids.front()));
        EXPECT_EQ(store.allocations_carrying(ids.front()), 1u);
        for (std::size_t index = 1; index < ids.size(); ++index) {
            EXPECT_FALSE(store.failure_alive(ids[index])) << index;
        }
        EXPECT_EQ(store.failure_count(), 1u);
        expect_consistent();
    }
};

TEST_F(ManyFailures, a_release_over_every_claim_drops_each_failure_once) {
    store.release({a, {0, failures * 20ULL}});
    expect_only_the_first_alive();
}

TEST_F(ManyFailures, freeing_the_allocation_drops_each_failure_once) {
    store.forget(a);
    expect_only_the_first_alive();
}

TEST_F(ManyFailures, a_claim_over_every_claim_leaves_only_its_own_and_the_first) {
    ClaimKey whole = {a, {0, failures * 20ULL}};
    const FailureId over = store.fail({&whole, 1}, boom(99));
    EXPECT_TRUE(store.failure_alive(over));
    EXPECT_TRUE(store.failure_alive(ids.front()));
    EXPECT_EQ(store.failure_count(), 2u);
    expect_consistent();
}

}  // namespace
}  // namespace tandem
