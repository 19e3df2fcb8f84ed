// Looking up memory another rank published, on a job simulated in this process
// (ranks_in_one_process.hpp): a lookup pins the memory without waiting for the owner (the pin
// is counted before it goes, and the owner's withdrawal asks every rank how many it sent), so
// what a peer holds stays, whatever the order of lookups, withdrawals and drops.

#include "ranks_in_one_process.hpp"

#include <gmock/gmock.h>

namespace tandem::testing {
namespace {

using ::testing::HasSubstr;

class Lookup : public RanksInOneProcess {
protected:
    /// Rank 0's device's bytes in use, once its work is settled.
    std::uint64_t owner_in_use() {
        EXPECT_TRUE(devices[0].sync());
        return devices[0].memory_usage()->in_use_bytes;
    }
};

TEST_F(Lookup, handles_looked_up_before_a_withdrawal_keep_the_memory_until_the_last_goes) {
    const std::uint64_t before = owner_in_use();
    std::optional<Handle> first;
    std::optional<Handle> second;
    {
        Handle data = filled(0, 9);
        ASSERT_TRUE(ranks[0].publish("data", data));
        first = *ranks[1].lookup("data");
        second = *ranks[1].lookup("data");
        ASSERT_TRUE(ranks[0].withdraw("data"));
    }
    // The owner's own handle is gone and the name withdrawn: the peer's two handles hold it.
    Handle local = *devices[1].allocate(64);
    ASSERT_TRUE(devices[1].copy(*first, local));
    EXPECT_EQ(*devices[1].read(local), std::vector<std::byte>(64, std::byte{9}));
    EXPECT_GT(owner_in_use(), before);
    first.reset();
    EXPECT_GT(owner_in_use(), before);  // One handle still holds it.
    second.reset();
    // The unpin crosses to the owner's watcher; a barrier orders it before this rank looks.
    barrier();
    EXPECT_EQ(owner_in_use(), before);
}

TEST_F(Lookup, a_lookup_after_a_withdrawal_names_the_rank_and_a_name_published_again_is_found) {
    {
        Handle data = filled(0, 3);
        ASSERT_TRUE(ranks[0].publish("data", data));
        ASSERT_TRUE(ranks[0].withdraw("data"));
    }
    Result<Handle> gone = ranks[1].lookup("data", std::chrono::milliseconds(20));
    ASSERT_FALSE(gone);
    EXPECT_EQ(gone.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_THAT(gone.error().message(), HasSubstr("'data' was withdrawn by rank 0"));
    Handle again = filled(0, 4);
    Status republished = ranks[0].publish("data", again);
    ASSERT_TRUE(republished) << republished.error().report();
    // Until the publication reaches rank 1 the name reads as withdrawn there: a barrier orders it.
    barrier();
    Result<Handle> found = ranks[1].lookup("data");
    ASSERT_TRUE(found) << found.error().report();
    Handle local = *devices[1].allocate(64);
    ASSERT_TRUE(devices[1].copy(*found, local));
    EXPECT_EQ(*devices[1].read(local), std::vector<std::byte>(64, std::byte{4}));
}

}  // namespace
}  // namespace tandem::testing
