// The closest known name (closest_name.hpp), by Levenshtein distance over bytes.

#include "tandem/core/closest_name.hpp"

#include <algorithm>

namespace tandem {

std::size_t edit_distance(std::string_view a, std::string_view b) {
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

std::optional<std::string> closest_name(std::string_view given,
                                        const std::vector<std::string>& known) {
    if (known.empty()) {
        return std::nullopt;
    }
    const auto closest = std::min_element(known.begin(), known.end(),
                                          [&](const std::string& a, const std::string& b) {
                                              return edit_distance(given, a) < edit_distance(given, b);
                                          });
    if (edit_distance(given, *closest) > std::max<std::size_t>(2, given.size() / 3)) {
        return std::nullopt;
    }
    return *closest;
}

}  // namespace tandem
