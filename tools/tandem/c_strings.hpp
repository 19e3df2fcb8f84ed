#pragma once

// Words as exec takes them: the tool starts processes of its own (the ranks of `tandem launch`,
// and of a scenario run as a job).

#include <string>
#include <vector>

namespace tandem::tool {

/// Pointers to `words`, ended by a null, valid while `words` is not changed.
inline std::vector<char*> c_strings(std::vector<std::string>& words) {
    std::vector<char*> pointers;
    pointers.reserve(words.size() + 1);
    for (std::string& word : words) {
        pointers.push_back(word.data());
    }
    pointers.push_back(nullptr);
    return pointers;
}

}  // namespace tandem::tool
