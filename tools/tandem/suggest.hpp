#pragma once

// "Did you mean ...?" for a mistyped command or option: the known name closest to what was
// typed, by edit distance, when it is close enough to be the likely intent.

#include <optional>
#include <string>
#include <vector>

namespace tandem::tool {

/// The name of `known` closest to `given`, if it is within a third of `given`'s length (at
/// least two edits), so that a wild guess suggests nothing.
std::optional<std::string> closest_name(const std::string& given,
                                        const std::vector<std::string>& known);

}  // namespace tandem::tool
