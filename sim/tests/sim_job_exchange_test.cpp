// `Job::exchange`: a meeting of every rank that carries a value from each, on a job simulated in
// this process (ranks_in_one_process.hpp); and the bounds of a simulated job's message delay.

#include "ranks_in_one_process.hpp"

#include <gmock/gmock.h>

#include <string>

namespace tandem::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using Exchange = RanksInOneProcess;

TEST_F(Exchange, every_rank_gets_every_ranks_value_in_rank_order_each_time) {
    for (int round = 0; round < 3; ++round) {
        std::vector<std::vector<std::string>> got(2);
        for (const Status& done : on_every_rank([&](std::uint32_t rank) -> Status {
                 const std::string mine =
                     "rank " + std::to_string(rank) + " round " + std::to_string(round);
                 Result<std::vector<std::string>> values = ranks[rank].exchange(mine);
                 if (!values) {
                     return values.error();
                 }
                 got[rank] = std::move(*values);
                 return {};
             })) {
            ASSERT_TRUE(done.ok()) << done.error().report();
        }
        const std::string round_text = " round " + std::to_string(round);
        for (const auto& values : got) {
            EXPECT_THAT(values, ElementsAre("rank 0" + round_text, "rank 1" + round_text));
        }
    }
}

TEST_F(Exchange, carries_empty_and_the_largest_values_and_bytes_of_any_kind) {
    const std::string largest(job_exchange_bytes_max, '\0');
    std::vector<std::vector<std::string>> got(2);
    for (const Status& done : on_every_rank([&](std::uint32_t rank) -> Status {
             Result<std::vector<std::string>> values =
                 ranks[rank].exchange(rank == 0 ? largest : std::string());
             if (!values) {
                 return values.error();
             }
             got[rank] = std::move(*values);
             return {};
         })) {
        ASSERT_TRUE(done.ok()) << done.error().report();
    }
    EXPECT_EQ(got[1], got[0]);
    EXPECT_EQ(got[1][0], largest);
    EXPECT_EQ(got[1][1], "");
}

TEST_F(Exchange, a_value_over_the_limit_is_refused_before_meeting_anyone) {
    Result<std::vector<std::string>> values =
        ranks[0].exchange(std::string(job_exchange_bytes_max + 1, 'x'));
    ASSERT_FALSE(values);
    EXPECT_EQ(values.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_THAT(values.error().message(), HasSubstr("at most 65536 bytes"));
    // It took no place in the order of exchanges: the next one pairs with rank 1's first.
    for (const Status& done : on_every_rank([&](std::uint32_t rank) -> Status {
             Result<std::vector<std::string>> next = ranks[rank].exchange(std::to_string(rank));
             if (!next) {
                 return next.error();
             }
             return *next == std::vector<std::string>{"0", "1"}
                        ? Status{}
                        : Error::invalid_argument("rank " + std::to_string(rank) + " got " +
                                                  (*next)[0] + "," + (*next)[1]);
         })) {
        EXPECT_TRUE(done.ok()) << done.error().report();
    }
}

TEST_F(Exchange, a_rank_that_is_gone_ends_the_exchange_with_device_lost_naming_it) {
    ranks[1].abandon();
    Result<std::vector<std::string>> values = ranks[0].exchange("mine");
    ASSERT_FALSE(values);
    EXPECT_EQ(values.error().kind(), ErrorKind::DeviceLost) << values.error().report();
    EXPECT_THAT(values.error().message(), HasSubstr("the exchange cannot be passed"));
    EXPECT_THAT(values.error().message(), HasSubstr("rank 1"));
}

TEST_F(Exchange, a_rank_that_never_comes_ends_it_with_peer_unreachable) {
    Result<std::vector<std::string>> values =
        ranks[0].exchange("mine", std::chrono::milliseconds(50));
    ASSERT_FALSE(values);
    EXPECT_EQ(values.error().kind(), ErrorKind::PeerUnreachable) << values.error().report();
    EXPECT_THAT(values.error().message(), HasSubstr("rank 1 did not reach it"));
}

TEST(MessageDelay, a_delay_outside_0_to_1_s_is_refused_before_any_rank_is_met) {
    for (const auto delay : {std::chrono::microseconds(-1), std::chrono::microseconds(1'000'001)}) {
        JoinOptions options;
        options.runtime.from_environment = false;
        options.runtime.backend = "sim";
        options.message_delay_max = delay;
        Result<std::vector<Job>> joined = Job::join_in_process(2, options);
        ASSERT_FALSE(joined);
        EXPECT_EQ(joined.error().kind(), ErrorKind::InvalidArgument);
        EXPECT_THAT(joined.error().message(),
                    HasSubstr("JoinOptions::message_delay_max is 0 to 1 s"));
    }
}

}  // namespace
}  // namespace tandem::testing
