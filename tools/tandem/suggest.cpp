// The closest known name (suggest.hpp), by Levenshtein distance over bytes.

#include "suggest.hpp"

#include <algorithm>

namespace tandem::tool {
namespace {

/// The edit distance between `a` and `b` (insertions, deletions and substitutions).
std::size_t distance(const std::string& a, const std::string& b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) {
        row[j] = j;
    }
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
            diagonal = above;
        }
    }
    return row[b.size()];
}

}  // namespace

std::optional<std::string> closest_name(const std::string& given,
                                        const std::vector<std::string>& known) {
    if (known.empty()) {
        return std::nullopt;
    }
    const auto closest = std::min_element(known.begin(), known.end(),
                                          [&](const std::string& a, const std::string& b) {
                                              return distance(given, a) < distance(given, b);
                                          });
    if (distance(given, *closest) > std::max<std::size_t>(2, given.size() / 3)) {
        return std::nullopt;
    }
    return *closest;
}

}  // namespace tandem::tool
