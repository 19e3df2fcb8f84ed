#include "yaml_reader.hpp"

#include <charconv>
#include <cmath>
#include <limits>

namespace tandem::tool {

std::string SourceMark::describe() const {
    return file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

SourceMark YamlReader::mark(const YAML::Node& node) const {
    const YAML::Mark at = node.Mark();
    if (at.is_null()) {
        // Only a node that is not in the text has no mark (the null document of an empty file);
        // the start of the file is where a person would add what is missing.
        return SourceMark{file_, 1, 1};
    }
    // yaml-cpp counts from 0; editors and compilers count from 1.
    return SourceMark{file_, at.line + 1, at.column + 1};
}

void YamlReader::fail(const YAML::Node& at, const std::string& problem) const {
    fail(mark(at), problem);
}

void YamlReader::fail(const SourceMark& at, const std::string& problem) const {
    throw MalformedInput(at.describe() + ": " + problem);
}

const std::string& YamlReader::scalar(const YAML::Node& node, const std::string& what) const {
    if (!node.IsScalar()) {
        fail(node, "expected " + what + " (a single value)");
    }
    return node.Scalar();
}

std::uint64_t YamlReader::u64(const YAML::Node& node, const std::string& what) const {
    const std::string& value = scalar(node, what);
    std::string_view digits = value;
    int base = 10;
    if (digits.starts_with("0x") || digits.starts_with("0X")) {
        digits.remove_prefix(2);
        base = 16;
    }
    std::uint64_t parsed = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), parsed, base);
    if (digits.empty() || error != std::errc{} || end != digits.data() + digits.size()) {
        fail(node, "expected " + what + " (an unsigned integer), not '" + value + "'");
    }
    return parsed;
}

std::uint32_t YamlReader::u32(const YAML::Node& node, const std::string& what) const {
    const std::uint64_t value = u64(node, what);
    if (value > std::numeric_limits<std::uint32_t>::max()) {
        fail(node, "expected " + what + " below 2^32, not " + std::to_string(value));
    }
    return static_cast<std::uint32_t>(value);
}

std::uint8_t YamlReader::byte(const YAML::Node& node, const std::string& what) const {
    const std::uint64_t value = u64(node, what);
    if (value > 255) {
        fail(node, "expected " + what + " (a byte, 0 to 255), not " + std::to_string(value));
    }
    return static_cast<std::uint8_t>(value);
}

double YamlReader::f64(const YAML::Node& node, const std::string& what) const {
    const std::string& value = scalar(node, what);
    double parsed = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), parsed);
    if (value.empty() || error != std::errc{} || end != value.data() + value.size() ||
        !std::isfinite(parsed)) {
        fail(node, "expected " + what + " (a finite number), not '" + value + "'");
    }
    return parsed;
}

bool YamlReader::boolean(const YAML::Node& node, const std::string& what) const {
    const std::string& value = scalar(node, what);
    if (value == "true") {
        return true;
    }
    if (value == "false") {
        return false;
    }
    fail(node, "expected " + what + " (true or false), not '" + value + "'");
}

std::string YamlReader::name(const YAML::Node& node, const std::string& what) const {
    const std::string& value = scalar(node, what);
    const bool valid = !value.empty() && value.size() <= 64 &&
                       value.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                               "0123456789_-.") == std::string::npos;
    if (!valid) {
        fail(node, "expected " + what + " (letters, digits, '_', '-' or '.', at most 64), not '" +
                       value + "'");
    }
    return value;
}

std::string YamlReader::text(const YAML::Node& node, const std::string& what) const {
    return scalar(node, what);
}

std::vector<std::uint64_t> YamlReader::u64_list(const YAML::Node& node,
                                                const std::string& what) const {
    return list(node, what, [&](const YAML::Node& item) { return u64(item, what); });
}

YamlFields::YamlFields(const YamlReader& reader, const YAML::Node& node, std::string what,
                       std::initializer_list<const char*> allowed)
    : reader_(reader), node_(node), what_(std::move(what)) {
    if (!node.IsMap()) {
        reader.fail(node, "expected " + what_ + " (a mapping of keys to values)");
    }
    const std::set<std::string> known(allowed.begin(), allowed.end());
    for (const auto& entry : node) {
        if (!entry.first.IsScalar() || !known.contains(entry.first.Scalar())) {
            std::string expected;
            for (const char* key : allowed) {
                expected += (expected.empty() ? "" : ", ") + std::string(key);
            }
            reader.fail(entry.first, "unknown key '" +
                                         (entry.first.IsScalar() ? entry.first.Scalar() : "?") +
                                         "' in " + what_ + "; expected one of: " + expected);
        }
    }
}

YAML::Node YamlFields::require(const char* key) const {
    YAML::Node value = get(key);
    if (!value.IsDefined()) {
        reader_.fail(node_, what_ + " needs the key '" + key + "'");
    }
    return value;
}

}  // namespace tandem::tool
