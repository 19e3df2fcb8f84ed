#include "tandem/backend/claims.hpp"

#include <gtest/gtest.h>

namespace tandem {
namespace {

constexpr FailureId f1{1};
constexpr FailureId f2{2};

std::vector<Claim> claims_of(const AllocationClaims& claims) {
    return {claims.claims().begin(), claims.claims().end()};
}

TEST(AllocationClaims, claiming_sets_the_only_claimant_of_every_byte) {
    AllocationClaims claims;
    claims.claim({0, 100}, f1);
    TouchedFailures touched = claims.claim({40, 60}, f2);
    ASSERT_EQ(touched.size(), 1u);
    EXPECT_EQ(touched[0], f1);
    EXPECT_EQ(claims_of(claims), (std::vector<Claim>{{{0, 40}, f1}, {{40, 60}, f2}, {{60, 100}, f1}}));
    EXPECT_FALSE(claims.check_invariants());
}

TEST(AllocationClaims, ranges_of_one_failure_that_touch_fuse) {
    AllocationClaims claims;
    claims.claim({0, 10}, f1);
    claims.claim({20, 30}, f1);
    claims.claim({10, 20}, f1);
    EXPECT_EQ(claims_of(claims), (std::vector<Claim>{{{0, 30}, f1}}));
}

TEST(AllocationClaims, an_empty_range_changes_nothing) {
    AllocationClaims claims;
    claims.claim({0, 10}, f1);
    claims.claim({5, 5}, f2);
    claims.release({5, 5});
    EXPECT_EQ(claims_of(claims), (std::vector<Claim>{{{0, 10}, f1}}));
}

TEST(AllocationClaims, a_partial_release_keeps_the_rest) {
    AllocationClaims claims;
    claims.claim({0, 100}, f1);
    claims.release({30, 70});
    EXPECT_EQ(claims_of(claims), (std::vector<Claim>{{{0, 30}, f1}, {{70, 100}, f1}}));
    EXPECT_FALSE(claims.first_claimant({30, 70}));
    EXPECT_EQ(claims.first_claimant({20, 80}), f1);
}

TEST(AllocationClaims, release_spanning_several_claims_keeps_both_ends) {
    AllocationClaims claims;
    claims.claim({0, 10}, f1);
    claims.claim({10, 20}, f2);
    claims.claim({20, 30}, f1);
    claims.release({5, 25});
    EXPECT_EQ(claims_of(claims), (std::vector<Claim>{{{0, 5}, f1}, {{25, 30}, f1}}));
    EXPECT_FALSE(claims.carries(f2));
}

TEST(AllocationClaims, claimants_lists_each_failure_once_in_byte_order) {
    AllocationClaims claims;
    claims.claim({0, 10}, f2);
    claims.claim({10, 20}, f1);
    claims.claim({20, 30}, f2);
    std::vector<FailureId> found;
    claims.claimants({0, 30}, found);
    EXPECT_EQ(found, (std::vector<FailureId>{f2, f1}));
}

}  // namespace
}  // namespace tandem
