// The progress line's estimate of the time left (progress.hpp): from the rate so far, in words a
// person reads at a glance, and nothing before there is a rate to go by.

#include "../tandem/progress.hpp"

#include <gtest/gtest.h>

namespace tandem::tool {
namespace {

TEST(ProgressTimeLeft, nothing_is_estimated_before_anything_is_done) {
    EXPECT_EQ(time_left(0, 100, 5.0), "");
}

TEST(ProgressTimeLeft, the_rest_takes_as_long_per_item_as_what_was_done) {
    EXPECT_EQ(time_left(25, 100, 10.0), "about 30 s left");
    EXPECT_EQ(time_left(1, 100, 12.0), "about 20 min left");  // 1188 s.
    EXPECT_EQ(time_left(1, 1001, 36.0), "about 10.0 h left");
}

TEST(ProgressTimeLeft, a_finished_run_has_nothing_left) {
    EXPECT_EQ(time_left(100, 100, 7.0), "about 0 s left");
}

TEST(ProgressTimeLeft, durations_read_in_seconds_minutes_or_hours) {
    EXPECT_EQ(duration_words(0.4), "0 s");
    EXPECT_EQ(duration_words(89), "89 s");
    EXPECT_EQ(duration_words(100), "2 min");
    EXPECT_EQ(duration_words(89 * 60), "89 min");
    EXPECT_EQ(duration_words(5400), "1.5 h");
    EXPECT_EQ(duration_words(-3), "0 s") << "a deadline just passed";
}

}  // namespace
}  // namespace tandem::tool
