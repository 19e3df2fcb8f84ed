// Parsing and validating a scenario file in one pass, before any runtime exists.
//
// Validation follows the steps in order with the names they define (buffers and their sizes,
// streams, events, capture graphs), so a name used before it exists or after it was freed, or a
// slice past the end of its buffer, is reported at the step that uses it.

#include "scenario_parse_detail.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

namespace tandem::tool {
namespace {

ErrorKind error_kind(const YamlReader& reader, const YAML::Node& node) {
    static const std::map<std::string, ErrorKind> kinds{
        {"OutOfMemory", ErrorKind::OutOfMemory},
        {"InvalidArgument", ErrorKind::InvalidArgument},
        {"WrongService", ErrorKind::WrongService},
        {"LaunchRefused", ErrorKind::LaunchRefused},
        {"KernelFailed", ErrorKind::KernelFailed},
        {"Unwritten", ErrorKind::Unwritten},
        {"Several", ErrorKind::Several},
        {"DeviceLost", ErrorKind::DeviceLost},
        {"PeerUnreachable", ErrorKind::PeerUnreachable},
        {"TornDown", ErrorKind::TornDown},
    };
    const std::string value = reader.text(node, "an error kind");
    const auto found = kinds.find(value);
    if (found == kinds.end()) {
        std::string expected;
        for (const auto& [name, kind] : kinds) {
            expected += (expected.empty() ? "" : ", ") + name;
        }
        reader.fail(node, "expected an error kind (" + expected + "), not '" + value + "'");
    }
    return found->second;
}

std::vector<std::string> texts(const YamlReader& reader, const YAML::Node& node,
                               const std::string& what) {
    if (node.IsScalar()) {
        return {reader.text(node, what)};
    }
    return reader.list(node, what, [&](const YAML::Node& item) { return reader.text(item, what); });
}

}  // namespace

// ---------------------------------------------------------------- shared pieces

ByteSpec ScenarioParser::byte_spec(const YamlFields& fields, const std::string& what) const {
    ByteSpec spec;
    int given = 0;
    if (fields.has("fill")) {
        spec.kind = ByteSpec::Kind::Fill;
        spec.fill = reader_.byte(fields.get("fill"), "a fill byte");
        ++given;
    }
    if (fields.has("bytes")) {
        spec.kind = ByteSpec::Kind::List;
        spec.list = reader_.list(fields.get("bytes"), "bytes", [&](const YAML::Node& item) {
            return reader_.byte(item, "a byte");
        });
        ++given;
    }
    if (fields.has("pattern")) {
        YamlFields pattern(reader_, fields.get("pattern"), "a byte pattern", {"start", "step"});
        spec.kind = ByteSpec::Kind::Pattern;
        spec.pattern_start =
            pattern.has("start") ? reader_.byte(pattern.get("start"), "a start byte") : 0;
        spec.pattern_step =
            pattern.has("step") ? reader_.byte(pattern.get("step"), "a step byte") : 1;
        ++given;
    }
    if (fields.has("f32")) {
        spec.kind = ByteSpec::Kind::F32;
        spec.f32 = reader_.list(fields.get("f32"), "float32 values", [&](const YAML::Node& item) {
            return static_cast<float>(reader_.f64(item, "a float32 value"));
        });
        ++given;
    }
    if (fields.has("u64")) {
        spec.kind = ByteSpec::Kind::U64;
        spec.u64 = reader_.u64_list(fields.get("u64"), "u64 values");
        ++given;
    }
    if (given != 1) {
        reader_.fail(fields.node(), what + " needs exactly one of: fill, bytes, pattern, f32, u64");
    }
    return spec;
}

void ScenarioParser::check_size(const YAML::Node& at, const ByteSpec& spec,
                                std::uint64_t size_bytes, const std::string& what) const {
    const std::optional<std::uint64_t> fixed = spec.fixed_size();
    if (fixed && *fixed != size_bytes) {
        reader_.fail(at, what + " gives " + std::to_string(*fixed) + " bytes but the buffer has " +
                             std::to_string(size_bytes));
    }
}

FailureExpectation ScenarioParser::failure(const YAML::Node& node) const {
    YamlFields fields(reader_, node, "a failure expectation", {"kind", "root", "chain", "report"});
    FailureExpectation expected;
    if (fields.has("kind")) {
        expected.kind = error_kind(reader_, fields.get("kind"));
    }
    if (fields.has("root")) {
        expected.root = error_kind(reader_, fields.get("root"));
    }
    if (fields.has("chain")) {
        expected.chain = texts(reader_, fields.get("chain"), "kernel names");
    }
    if (fields.has("report")) {
        expected.report = texts(reader_, fields.get("report"), "report substrings");
    }
    return expected;
}

std::uint32_t ScenarioParser::device(const YAML::Node& node) const {
    const std::uint32_t index = reader_.u32(node, "a device index");
    if (index >= scenario_.devices) {
        reader_.fail(node, "expected a device index below " + std::to_string(scenario_.devices) +
                               " (the scenario has " + std::to_string(scenario_.devices) +
                               " devices), not " + std::to_string(index));
    }
    return index;
}

const ScenarioParser::BufferInfo& ScenarioParser::buffer(const YAML::Node& node) const {
    const std::string name = reader_.name(node, "a buffer name");
    const auto found = buffers_.find(name);
    if (found != buffers_.end()) {
        return found->second;
    }
    const auto freed = freed_.find(name);
    if (freed != freed_.end()) {
        reader_.fail(node,
                     "buffer '" + name + "' was freed at line " + std::to_string(freed->second));
    }
    reader_.fail(node,
                 "expected a buffer allocated or sliced by an earlier step, not '" + name + "'");
}

std::string ScenarioParser::stream(const YamlFields& fields, std::uint32_t on_device) const {
    if (!fields.has("stream")) {
        return "main";
    }
    const std::string name = reader_.name(fields.get("stream"), "a stream name");
    if (!streams_.contains({on_device, name})) {
        reader_.fail(fields.get("stream"),
                     "expected a stream of device " + std::to_string(on_device) +
                         " ('main' or one a 'stream' step created), not '" + name + "'");
    }
    return name;
}

void ScenarioParser::define_buffer(const YAML::Node& at, const std::string& name, BufferInfo info) {
    if (buffers_.contains(name)) {
        reader_.fail(at, "buffer '" + name + "' is already defined");
    }
    freed_.erase(name);
    buffers_.emplace(name, info);
}

// ---------------------------------------------------------------- the file

void ScenarioParser::parse_devices(const YAML::Node& node) {
    YamlFields fields(reader_, node, "the devices section",
                      {"count", "ranks", "seed", "capacity", "grant_all", "grants"});
    scenario_.devices = reader_.u32(fields.require("count"), "a device count");
    if (scenario_.devices == 0 || scenario_.devices > max_devices) {
        reader_.fail(fields.get("count"),
                     "expected 1 to " + std::to_string(max_devices) + " devices");
    }
    if (fields.has("ranks")) {
        scenario_.ranks = reader_.u32(fields.get("ranks"), "a rank count");
        if (scenario_.ranks == 0 || scenario_.ranks > scenario_.devices ||
            scenario_.devices % scenario_.ranks != 0) {
            reader_.fail(fields.get("ranks"),
                         "expected a rank count that divides the " +
                             std::to_string(scenario_.devices) +
                             " devices (each rank runs as many of them)");
        }
    }
    if (fields.has("seed")) {
        scenario_.seed = reader_.u64(fields.get("seed"), "a seed");
    }
    if (fields.has("capacity")) {
        scenario_.capacity_bytes = reader_.u64(fields.get("capacity"), "a capacity in bytes");
        if (*scenario_.capacity_bytes < (std::uint64_t{2} << 20) ||
            *scenario_.capacity_bytes > (std::uint64_t{1} << 34)) {
            reader_.fail(fields.get("capacity"),
                         "expected a capacity between 2 MiB (one pool page) "
                         "and 16 GiB");
        }
    }
    if (fields.has("grant_all")) {
        scenario_.grant_all_peers = reader_.boolean(fields.get("grant_all"), "grant_all");
    }
    if (fields.has("grants")) {
        scenario_.grants =
            reader_.list(fields.get("grants"), "grants", [&](const YAML::Node& item) {
                YamlFields grant(reader_, item, "a grant", {"owner", "accessor"});
                return GrantStep{device(grant.require("owner")), device(grant.require("accessor"))};
            });
    }
}

void ScenarioParser::parse_top(const YAML::Node& root) {
    YamlFields fields(reader_, root, "a scenario",
                      {"name", "description", "devices", "faults", "steps", "races", "backends"});
    scenario_.name = reader_.text(fields.require("name"), "the scenario's name");
    if (fields.has("description")) {
        scenario_.description = reader_.text(fields.get("description"), "a description");
    }
    parse_devices(fields.require("devices"));
    for (std::uint32_t index = 0; index < scenario_.devices; ++index) {
        streams_.insert({index, "main"});
    }
    if (fields.has("races")) {
        const std::string races = reader_.text(fields.get("races"), "a race expectation");
        if (races != "none" && races != "reported") {
            reader_.fail(fields.get("races"), "expected 'none' or 'reported', not '" + races + "'");
        }
        scenario_.races = races == "none" ? RaceExpectation::None : RaceExpectation::Reported;
    }
    if (fields.has("backends")) {
        scenario_.backends =
            reader_.list(fields.get("backends"), "backends", [&](const YAML::Node& item) {
                std::string backend = reader_.text(item, "a backend");
                if (backend != "sim" && backend != "cuda") {
                    reader_.fail(item, "expected 'sim' or 'cuda', not '" + backend + "'");
                }
                return backend;
            });
    }
    if (fields.has("faults")) {
        scenario_.faults = reader_.list(fields.get("faults"), "faults",
                                        [&](const YAML::Node& item) { return inject(item); });
    }
    const YAML::Node steps = fields.require("steps");
    if (!steps.IsSequence() || steps.size() == 0 || steps.size() > max_steps) {
        reader_.fail(steps, "expected a list of 1 to " + std::to_string(max_steps) + " steps");
    }
    for (const YAML::Node& item : steps) {
        scenario_.steps.push_back(step(item));
    }
}

Step ScenarioParser::step(const YAML::Node& node) {
    if (!node.IsMap() || node.size() != 1 || !node.begin()->first.IsScalar()) {
        reader_.fail(node,
                     "expected a step: a mapping with one key naming its kind (allocate, "
                     "slice, stream, write, launch, share, grant, copy, record, wait, sync, "
                     "read, free, begin_capture, end_capture, replay, inject)");
    }
    const YAML::Node key = node.begin()->first;
    const YAML::Node body = node.begin()->second;
    Step parsed{reader_.mark(key), AllocateStep{}, std::nullopt};
    parsed.action = action(key, body, parsed.fails);
    return parsed;
}

Scenario ScenarioParser::finish() { return std::move(scenario_); }

std::variant<Scenario, ParseError> parse_scenario_text(const std::string& text,
                                                       const std::string& path) {
    try {
        const YAML::Node root = YAML::Load(text);
        ScenarioParser parser(path);
        parser.parse_top(root);
        Scenario scenario = parser.finish();
        scenario.path = path;
        return scenario;
    } catch (const YAML::Exception& error) {
        // yaml-cpp's own syntax errors carry a 0-based mark too; one without a mark points at
        // the start of the file, so that every message has a position an editor can open.
        const bool marked = !error.mark.is_null();
        return ParseError{path + ":" + std::to_string(marked ? error.mark.line + 1 : 1) + ":" +
                          std::to_string(marked ? error.mark.column + 1 : 1) + ": " + error.msg};
    } catch (const MalformedInput& error) {
        return ParseError{error.what()};
    }
}

std::variant<Scenario, ParseError> parse_scenario_file(const std::string& path) {
    std::ifstream file(path);
    if (!file) {
        // The reason the system gave (no such file, permission denied), read right after the
        // open that failed.
        return ParseError{path + ": cannot be read: " + std::strerror(errno)};
    }
    std::ostringstream text;
    text << file.rdbuf();
    return parse_scenario_text(text.str(), path);
}

}  // namespace tandem::tool
