#pragma once

// The bf16 reductions the collective tests run, on the devices of one runtime
// (collective_test.cpp) and on the ranks of a job (job_collective_test.cpp) alike: each
// participant's input, as bits, and the bytes the reduction of the first two or all three must
// give. They are written out by hand, not computed by the functions under test: the oracle is
// tandem/core/collectives.hpp's rule, a fold from the left in participant order, each step
// rounded to nearest even (1 = 0x3F80, 2^-8 = 0x3B80, 256 = 0x4380, 3 = 0x4040, -4 = 0xC080,
// the largest finite value 0x7F7F, infinity 0x7F80, the canonical NaN 0x7FFF).

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tandem::conformance::bf16_cases {

/// Bits of bfloat16 values, one a participant's element.
using Values = std::vector<std::uint16_t>;

/// Participant i's input of the sum: each element a case of rounding.
inline const std::array<Values, 3> sum_inputs{
    // 1 + 2^-8 is a tie that goes to 1 (even); a third 2^-8 is another: 1 again, where
    // 1 + (2^-8 + 2^-8) would be 1 + 2^-7.
    Values{0x3F80, 0x3F81, 0x4380, 0xBF80, 0x7F7F, 0x7FC1},
    // (1 + 2^-7) + 2^-8 is a tie that goes up to 1 + 2^-6 (even); 256 + 3 one that goes up to
    // 260; -1 - 2^-8 one that goes to -1; twice the largest finite value is infinity.
    Values{0x3B80, 0x3B80, 0x4040, 0xBB80, 0x7F7F, 0x3F80},
    // 260 - 4 is 256, where 256 + (3 - 4) would be 255; infinity minus the largest finite value
    // is still infinity, where the largest plus (largest - largest) would be the largest.
    Values{0x3B80, 0x0000, 0xC080, 0x8000, 0xFF7F, 0x3F80},
};

/// The sum of the first `count` (2 or 3) participants' `sum_inputs`.
inline Values sum_of_first(std::size_t count) {
    return count == 2 ? Values{0x3F80, 0x3F82, 0x4382, 0xBF80, 0x7F80, 0x7FFF}
                      : Values{0x3F80, 0x3F82, 0x4380, 0xBF80, 0x7F80, 0x7FFF};
}

/// Participant i's input of max and min: NaNs that give way to numbers, negatives, zeros of
/// both signs, infinity.
inline const std::array<Values, 3> order_inputs{
    Values{0x7FC1, 0xBF80, 0x8000, 0x7FC0, 0xC000},  // NaN, -1, -0, NaN, -2
    Values{0xBF80, 0xC000, 0x0000, 0xFFC1, 0x7F80},  // -1, -2, +0, NaN, infinity
    Values{0xC040, 0x7FC0, 0x8000, 0x7FC0, 0x4000},  // -3, NaN, -0, NaN, 2
};

/// The max of the first `count` (2 or 3) participants' `order_inputs`: +0 above -0, and the
/// canonical NaN only where every one is a NaN.
inline Values max_of_first(std::size_t /*count*/) {
    return Values{0xBF80, 0xBF80, 0x0000, 0x7FFF, 0x7F80};
}

/// The min of the first `count` (2 or 3) participants' `order_inputs`.
inline Values min_of_first(std::size_t count) {
    return count == 2 ? Values{0xBF80, 0xC000, 0x8000, 0x7FFF, 0xC000}
                      : Values{0xC040, 0xC000, 0x8000, 0x7FFF, 0xC000};
}

}  // namespace tandem::conformance::bf16_cases
