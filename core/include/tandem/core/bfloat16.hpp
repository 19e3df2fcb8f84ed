#pragma once

// bfloat16 (`ElementType::bf16`): the upper 16 bits of an IEEE 754 binary32, a float with its
// 8-bit exponent and 7 bits of its mantissa. These functions are the one definition of what a
// reduction does with it, run by the catalog's `combine` kernel on every backend (the host
// backends and the GPU compile the same lines) and by the MPI communicator's own reductions, so
// that a step gives the same bytes on every path.
//
// A step computes in float and rounds back to nearest, ties to even. For a sum of two bfloat16
// values that is the exactly rounded sum: a float holds more than twice bfloat16's 8 significant
// bits plus two, so rounding first to float never moves a result onto a bfloat16 tie. The
// conversion is written in integer operations rather than left to a compiler's or a GPU's own:
// those agree on numbers but not on the bits of a NaN, and a NaN a step yields is always
// `bf16_canonical_nan`. Max and min are NCCL's (CUDA's `__hmax`, `__hmin`): a NaN gives way to a
// number, +0 is larger than -0, so both are commutative and associative and give one result
// whatever order the ranks are folded in. The cost over f32, per element and step: a shift to
// widen each operand, and a compare, an add and a shift to narrow the result.

#include "tandem/core/kernel.hpp"

#include <cstdint>
#include <cstring>

namespace tandem {

/// The quiet NaN every step that yields a NaN gives: CUDA's and NCCL's canonical bfloat16 NaN.
inline constexpr std::uint16_t bf16_canonical_nan = 0x7FFF;

/// Whether `bits` is a NaN: all ones in the exponent, something in the mantissa.
TANDEM_HOST_DEVICE inline bool bf16_is_nan(std::uint16_t bits) {
    return (bits & 0x7FFFu) > 0x7F80u;
}

/// The float `bits` stands for, exactly (a bfloat16 is the upper half of a float).
TANDEM_HOST_DEVICE inline float bf16_to_float(std::uint16_t bits) {
    const std::uint32_t wide = static_cast<std::uint32_t>(bits) << 16;
    float value = 0;
    std::memcpy(&value, &wide, sizeof value);
    return value;
}

/// `value` rounded to the nearest bfloat16, ties to the even one: a value past the largest
/// finite one rounds to infinity, of its sign; any NaN gives `bf16_canonical_nan`.
TANDEM_HOST_DEVICE inline std::uint16_t float_to_bf16(float value) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {
        return bf16_canonical_nan;
    }
    // Adding just under half of the dropped part, plus the kept part's lowest bit, carries into
    // the kept part exactly when the dropped part is over half, or half with the kept part odd.
    // A carry out of the largest finite exponent gives infinity's bits; nothing wraps, since
    // the largest input here (negative infinity) is far below 2^32 - 2^15.
    const std::uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1u);
    return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

/// `a + b`, rounded to nearest even: infinity past the largest finite value, the canonical NaN
/// for a NaN operand or infinities of two signs.
TANDEM_HOST_DEVICE inline std::uint16_t bf16_sum(std::uint16_t a, std::uint16_t b) {
    return float_to_bf16(bf16_to_float(a) + bf16_to_float(b));
}

namespace detail {

/// What `bf16_max` (`larger`) or `bf16_min` takes of `a` and `b`.
TANDEM_HOST_DEVICE inline std::uint16_t bf16_pick(std::uint16_t a, std::uint16_t b, bool larger) {
    if (bf16_is_nan(a)) {
        return bf16_is_nan(b) ? bf16_canonical_nan : b;
    }
    if (bf16_is_nan(b)) {
        return a;
    }
    const float left = bf16_to_float(a);
    const float right = bf16_to_float(b);
    if (left != right) {
        return (left > right) == larger ? a : b;
    }
    // Equal: one value (the same bits), or zeros of two signs, of which +0 is the larger.
    const bool a_negative = (a & 0x8000u) != 0;
    return a_negative == larger ? b : a;
}

}  // namespace detail

/// The larger of `a` and `b`, one of them as it is: a NaN gives way to the other (the canonical
/// NaN when both are), and +0 is larger than -0.
TANDEM_HOST_DEVICE inline std::uint16_t bf16_max(std::uint16_t a, std::uint16_t b) {
    return detail::bf16_pick(a, b, true);
}

/// The smaller of `a` and `b`, one of them as it is: a NaN gives way to the other (the canonical
/// NaN when both are), and -0 is smaller than +0.
TANDEM_HOST_DEVICE inline std::uint16_t bf16_min(std::uint16_t a, std::uint16_t b) {
    return detail::bf16_pick(a, b, false);
}

}  // namespace tandem
