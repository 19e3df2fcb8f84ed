// The launch configurations a GPU takes, and the refusal of the others: every backend asks
// `launchable` and reports `config_refusal`, so both refuse the same launches the same way.

#include "tandem/core/kernel_resource.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace tandem {
namespace {

std::string refusal_of(const LaunchConfig& config) { return config_refusal("k", config).message(); }

TEST(LaunchConfig, the_limits_themselves_are_launchable_and_one_past_any_is_not) {
    EXPECT_TRUE(launchable(LaunchConfig{Dim3{max_grid_x, 1, 1}, Dim3{1024, 1, 1}}));
    EXPECT_TRUE(launchable(LaunchConfig{Dim3{1, 65535, 65535}, Dim3{1, 1, 64}}));
    EXPECT_TRUE(launchable(LaunchConfig{Dim3{1, 1, 1}, Dim3{1, 1024, 1}}));
    const LaunchConfig past[] = {
        {Dim3{max_grid_x + 1U, 1, 1}, Dim3{1, 1, 1}},
        {Dim3{1, 65536, 1}, Dim3{1, 1, 1}},
        {Dim3{1, 1, 65536}, Dim3{1, 1, 1}},
        {Dim3{1, 1, 1}, Dim3{1025, 1, 1}},
        {Dim3{1, 1, 1}, Dim3{1, 1, 65}},
        {Dim3{1, 1, 1}, Dim3{32, 33, 1}},
        {Dim3{1, 1, 1}, Dim3{0, 1, 1}},
    };
    for (const LaunchConfig& config : past) {
        EXPECT_FALSE(launchable(config)) << refusal_of(config);
        EXPECT_EQ(config_refusal("k", config).kind(), ErrorKind::LaunchRefused);
    }
}

TEST(LaunchConfig, each_refusal_names_the_limit_it_is_past) {
    EXPECT_NE(refusal_of({Dim3{1, 1, 1}, Dim3{0, 1, 1}}).find("a block of zero threads"),
              std::string::npos);
    EXPECT_NE(refusal_of({Dim3{1, 1, 1}, Dim3{32, 33, 1}})
                  .find("a block of 1056 threads is over the limit of 1024"),
              std::string::npos);
    EXPECT_NE(refusal_of({Dim3{1, 1, 1}, Dim3{1, 1, 65}})
                  .find("a block of 1 x 1 x 65 is over the limit of 1024 x 1024 x 64"),
              std::string::npos);
    EXPECT_NE(
        refusal_of({Dim3{1, 65536, 1}, Dim3{1, 1, 1}})
            .find("a grid of 1 x 65536 x 1 blocks is over the limit of 2147483647 x 65535 x 65535"),
        std::string::npos);
}

TEST(LaunchConfig, a_launch_of_more_threads_than_64_bits_count_is_refused_not_wrapped) {
    // (2^31 - 1) * 65535^2 blocks of 1024 threads: within every dimension, past 2^64 in all.
    const LaunchConfig huge{Dim3{max_grid_x, 65535, 65535}, Dim3{1024, 1, 1}};
    EXPECT_FALSE(launchable(huge));
    EXPECT_NE(refusal_of(huge).find("more than 2^64 - 1 threads"), std::string::npos);
    // With blocks of one thread, 64 bits count it.
    EXPECT_TRUE(launchable(LaunchConfig{Dim3{max_grid_x, 65535, 65535}, Dim3{1, 1, 1}}));
}

TEST(LaunchConfig, linear_never_cuts_a_grid_down_to_the_low_bits_of_its_block_count) {
    EXPECT_EQ(LaunchConfig::linear(1000, 256).grid.x, 4u);
    EXPECT_EQ(LaunchConfig::linear(std::uint64_t{max_grid_x} * 256, 256).grid.x, max_grid_x);
    for (std::uint64_t threads : {std::uint64_t{max_grid_x} * 256 + 1, std::uint64_t{1} << 40,
                                  std::uint64_t{1} << 56, UINT64_MAX}) {
        const LaunchConfig config = LaunchConfig::linear(threads, 256);
        EXPECT_EQ(config.grid.x, max_grid_x + 1U) << threads;
        EXPECT_FALSE(config.runs_nothing()) << threads;
        EXPECT_FALSE(launchable(config)) << threads;
    }
    EXPECT_TRUE(LaunchConfig::linear(0, 256).runs_nothing());
}

}  // namespace
}  // namespace tandem
