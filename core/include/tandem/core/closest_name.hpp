#pragma once

// "Did you mean ...?" for a mistyped name (a kernel, a command, an option): the known name closest
// to what was typed, by edit distance, when it is close enough to be the likely intent.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tandem {

/// The edit distance between `a` and `b`: insertions, deletions and substitutions of bytes.
std::size_t edit_distance(std::string_view a, std::string_view b);

/// The name of `known` closest to `given`, if it is within a third of `given`'s length (at
/// least two edits), so that a wild guess suggests nothing.
std::optional<std::string> closest_name(std::string_view given,
                                        const std::vector<std::string>& known);

}  // namespace tandem
