// bfloat16's arithmetic (tandem/core/bfloat16.hpp), the steps every reduction of bf16 takes on
// every backend. The oracle of the rounding: of the two bfloat16 values around a float, the one
// nearer in exact (double) arithmetic, the even one on a tie, and infinity past the largest
// finite value by the same rule, as if 2^128 were the next value up.

#include "tandem/core/bfloat16.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace tandem {
namespace {

float float_of_bits(std::uint32_t bits) {
    float value = 0;
    std::memcpy(&value, &bits, sizeof value);
    return value;
}

/// The value bfloat16 `bits` stands for, with infinity as 2^128: the neighbour a float past the
/// largest finite value is measured against.
double value_as_neighbour(std::uint16_t bits) {
    if ((bits & 0x7FFFu) == 0x7F80u) {
        return std::ldexp((bits & 0x8000u) != 0 ? -1.0 : 1.0, 128);
    }
    return static_cast<double>(bf16_to_float(bits));
}

/// The oracle's rounding of the float of `bits`, a number (not a NaN, not an infinity).
std::uint16_t nearest_even(std::uint32_t bits) {
    const auto below = static_cast<std::uint16_t>(bits >> 16);  // Toward zero.
    const auto above = static_cast<std::uint16_t>(below + 1);   // Away from zero.
    const double exact = static_cast<double>(float_of_bits(bits));
    const double to_below = std::fabs(exact - value_as_neighbour(below));
    const double to_above = std::fabs(value_as_neighbour(above) - exact);
    if (to_below != to_above) {
        return to_below < to_above ? below : above;
    }
    return (below & 1u) == 0 ? below : above;
}

/// Every float whose upper half is `upper`, against the oracle.
void expect_every_lower_half_rounds_as_the_oracle(std::uint16_t upper) {
    for (std::uint32_t lower = 0; lower <= 0xFFFFu; ++lower) {
        const std::uint32_t bits = (static_cast<std::uint32_t>(upper) << 16) | lower;
        ASSERT_EQ(float_to_bf16(float_of_bits(bits)), nearest_even(bits))
            << "float bits 0x" << std::hex << bits;
    }
}

TEST(Bfloat16, a_float_rounds_to_the_nearer_neighbour_and_a_tie_to_the_even_one) {
    // Zero and the smallest subnormals, one and the value above it (odd), the smallest normal,
    // the largest finite values (whose neighbour above is infinity), and their negatives.
    constexpr std::uint16_t uppers[] = {0x0000, 0x0001, 0x0080, 0x3F80, 0x3F81, 0x7F7E,
                                        0x7F7F, 0x8000, 0x8001, 0xBF80, 0xBF81, 0xFF7F};
    for (const std::uint16_t upper : uppers) {
        expect_every_lower_half_rounds_as_the_oracle(upper);
    }
}

TEST(Bfloat16, ties_go_to_the_even_neighbour_in_both_directions) {
    EXPECT_EQ(float_to_bf16(1.0f + 0x1p-8f), 0x3F80);             // 1 is even: down.
    EXPECT_EQ(float_to_bf16(1.0f + 3 * 0x1p-8f), 0x3F82);         // 1 + 2^-7 is odd: up.
    EXPECT_EQ(float_to_bf16(-(1.0f + 0x1p-8f)), 0xBF80);          // The sign does not change it.
    EXPECT_EQ(float_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3F81);  // Past the tie: up.
}

TEST(Bfloat16, past_the_largest_finite_value_a_float_rounds_to_infinity_of_its_sign) {
    EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()), 0x7F80);
    EXPECT_EQ(float_to_bf16(-std::numeric_limits<float>::max()), 0xFF80);
    EXPECT_EQ(float_to_bf16(float_of_bits(0x7F7F7FFFu)), 0x7F7F);  // Below the tie: stays.
    EXPECT_EQ(float_to_bf16(float_of_bits(0x7F7F8000u)), 0x7F80);  // The tie, 0x7F7F odd: up.
    EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::infinity()), 0x7F80);
    EXPECT_EQ(float_to_bf16(-std::numeric_limits<float>::infinity()), 0xFF80);
}

// A NaN whose payload lies only in the dropped half would become infinity if cut, and one of all
// ones would carry into the sign if rounded: every NaN gives the one canonical NaN.
TEST(Bfloat16, every_nan_becomes_the_canonical_nan) {
    for (const std::uint32_t bits : {0x7FC00000u, 0x7F800001u, 0x7FFFFFFFu, 0xFFC00000u,
                                     0xFF800001u, 0xFFFFFFFFu, 0x7FA00000u}) {
        EXPECT_EQ(float_to_bf16(float_of_bits(bits)), bf16_canonical_nan)
            << "float bits 0x" << std::hex << bits;
    }
    EXPECT_TRUE(bf16_is_nan(bf16_canonical_nan));
    EXPECT_FALSE(bf16_is_nan(0x7F80));
    EXPECT_TRUE(std::isnan(bf16_to_float(0xFF81)));
}

TEST(Bfloat16, every_value_survives_a_float_and_back) {
    for (std::uint32_t bits = 0; bits <= 0xFFFFu; ++bits) {
        const auto value = static_cast<std::uint16_t>(bits);
        const std::uint16_t expected = bf16_is_nan(value) ? bf16_canonical_nan : value;
        ASSERT_EQ(float_to_bf16(bf16_to_float(value)), expected) << "bits 0x" << std::hex << bits;
    }
}

TEST(Bfloat16, a_sum_rounds_once_to_the_nearest_even) {
    EXPECT_EQ(bf16_sum(0x3F80, 0x3B80), 0x3F80);  // 1 + 2^-8: a tie, to 1.
    EXPECT_EQ(bf16_sum(0x3F81, 0x3B80), 0x3F82);  // (1 + 2^-7) + 2^-8: a tie, up to even.
    EXPECT_EQ(bf16_sum(0x4380, 0x3F80), 0x4380);  // 256 + 1: a tie, to 256.
    EXPECT_EQ(bf16_sum(0x4380, 0x4040), 0x4382);  // 256 + 3: a tie, up to 260.
    EXPECT_EQ(bf16_sum(0x4B80, 0x3F80), 0x4B80);  // 2^24 + 1: far below the last place.
    EXPECT_EQ(bf16_sum(0xBF80, 0x3F80), 0x0000);  // -1 + 1 is +0.
    EXPECT_EQ(bf16_sum(0x8000, 0x8000), 0x8000);  // -0 + -0 is -0.
}

TEST(Bfloat16, a_sum_past_the_largest_finite_value_is_infinity_and_opposite_infinities_nan) {
    EXPECT_EQ(bf16_sum(0x7F7F, 0x7F7F), 0x7F80);
    EXPECT_EQ(bf16_sum(0xFF7F, 0xFF7F), 0xFF80);
    EXPECT_EQ(bf16_sum(0x7F80, 0xFF80), bf16_canonical_nan);
    EXPECT_EQ(bf16_sum(0x7FC1, 0x3F80), bf16_canonical_nan);  // A NaN's payload is not kept.
    EXPECT_EQ(bf16_sum(0x3F80, 0xFFC0), bf16_canonical_nan);
}

TEST(Bfloat16, max_and_min_take_one_operand_as_it_is_a_nan_giving_way_to_a_number) {
    EXPECT_EQ(bf16_max(0xBF80, 0xC000), 0xBF80);  // max(-1, -2) = -1.
    EXPECT_EQ(bf16_min(0xBF80, 0xC000), 0xC000);  // min(-1, -2) = -2.
    EXPECT_EQ(bf16_max(0x3F80, 0xFF80), 0x3F80);  // Against -infinity.
    EXPECT_EQ(bf16_min(0x7F80, 0xBF80), 0xBF80);  // Against +infinity.
    constexpr std::uint16_t nans[] = {bf16_canonical_nan, 0xFFC1};
    for (const std::uint16_t nan : nans) {
        EXPECT_EQ(bf16_max(nan, 0xBF80), 0xBF80);
        EXPECT_EQ(bf16_max(0xBF80, nan), 0xBF80);
        EXPECT_EQ(bf16_min(nan, 0x3F80), 0x3F80);
        EXPECT_EQ(bf16_min(0x3F80, nan), 0x3F80);
    }
    EXPECT_EQ(bf16_max(0x7FC1, 0xFFC0), bf16_canonical_nan);
    EXPECT_EQ(bf16_min(0x7FC1, 0xFFC0), bf16_canonical_nan);
}

TEST(Bfloat16, max_takes_plus_zero_and_min_minus_zero_in_either_order) {
    EXPECT_EQ(bf16_max(0x8000, 0x0000), 0x0000);
    EXPECT_EQ(bf16_max(0x0000, 0x8000), 0x0000);
    EXPECT_EQ(bf16_min(0x8000, 0x0000), 0x8000);
    EXPECT_EQ(bf16_min(0x0000, 0x8000), 0x8000);
}

}  // namespace
}  // namespace tandem
