#pragma once

// Checks for the options that take numbers, run on the text as written before CLI11 converts it.
// CLI11 reads "-5" into an unsigned option as 2^64 - 5 and saturates a number past 2^64 - 1, so
// a count or seed that would wrap is refused here, with a message that CLI11 prefixes with the
// option's name ("--runs: must not be negative").

#include <CLI/CLI.hpp>

#include <cstdint>
#include <limits>

namespace tandem::tool {

/// The largest value a 64-bit count or seed holds.
constexpr std::uint64_t whole_number_max = std::numeric_limits<std::uint64_t>::max();

/// A whole number from `min` to `max`, in decimal digits only: no sign, no fraction, nothing
/// after it.
CLI::Validator whole_number(std::uint64_t min, std::uint64_t max = whole_number_max);

/// A finite decimal number from `min` to `max` (NaN and infinities are refused). `range` says
/// the bounds in words for the message and the help.
CLI::Validator decimal_number(double min, double max, const std::string& range);

}  // namespace tandem::tool
