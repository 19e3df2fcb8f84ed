#pragma once

// Typed reads of yaml-cpp nodes that fail with file:line:column and what was expected there.
//
// The parser is recursive descent over a document that is already in memory, so a failure deep
// inside unwinds through many frames; it throws `MalformedInput` internally and the public entry
// points (scenario.hpp) turn it back into a value before anything reaches a caller.

#include "scenario.hpp"

#include <yaml-cpp/yaml.h>

#include <initializer_list>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace tandem::tool {

struct MalformedInput : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class YamlReader {
public:
    explicit YamlReader(std::string file) : file_(std::move(file)) {}

    [[nodiscard]] const std::string& file() const { return file_; }
    [[nodiscard]] SourceMark mark(const YAML::Node& node) const;
    [[noreturn]] void fail(const YAML::Node& at, const std::string& problem) const;
    [[noreturn]] void fail(const SourceMark& at, const std::string& problem) const;

    [[nodiscard]] std::uint64_t u64(const YAML::Node& node, const std::string& what) const;
    [[nodiscard]] std::uint32_t u32(const YAML::Node& node, const std::string& what) const;
    [[nodiscard]] std::uint8_t byte(const YAML::Node& node, const std::string& what) const;
    [[nodiscard]] double f64(const YAML::Node& node, const std::string& what) const;
    [[nodiscard]] bool boolean(const YAML::Node& node, const std::string& what) const;
    [[nodiscard]] std::string name(const YAML::Node& node, const std::string& what) const;
    [[nodiscard]] std::string text(const YAML::Node& node, const std::string& what) const;
    /// A sequence, each element read by `element`.
    template <typename Element>
    auto list(const YAML::Node& node, const std::string& what, Element element) const {
        if (!node.IsSequence()) {
            fail(node, "expected a list of " + what);
        }
        std::vector<decltype(element(node))> values;
        for (const YAML::Node& item : node) {
            values.push_back(element(item));
        }
        return values;
    }
    [[nodiscard]] std::vector<std::uint64_t> u64_list(const YAML::Node& node,
                                                      const std::string& what) const;

private:
    [[nodiscard]] const std::string& scalar(const YAML::Node& node, const std::string& what) const;
    std::string file_;
};

/// A mapping whose keys are checked: a key outside `allowed` fails at that key, and `require`
/// fails at the map when a key is missing.
class YamlFields {
public:
    YamlFields(const YamlReader& reader, const YAML::Node& node, std::string what,
               std::initializer_list<const char*> allowed);

    [[nodiscard]] bool has(const char* key) const { return get(key).IsDefined(); }
    /// Looked up through a const node: a non-const lookup of a missing key would insert it.
    [[nodiscard]] YAML::Node get(const char* key) const {
        const YAML::Node& map = node_;
        return map[key];
    }
    [[nodiscard]] YAML::Node require(const char* key) const;
    [[nodiscard]] const YAML::Node& node() const { return node_; }

private:
    const YamlReader& reader_;
    YAML::Node node_;
    std::string what_;
};

}  // namespace tandem::tool
