#pragma once

// The scenario parser's state: the names each step defines, so later steps are checked against
// them before anything runs.

#include "yaml_reader.hpp"

#include <map>
#include <set>
#include <utility>

namespace tandem::tool {

/// Bounds on what a file may ask for, so a hostile file is refused before it allocates.
inline constexpr std::uint32_t max_devices = 64;
inline constexpr std::uint64_t max_buffer_bytes = std::uint64_t{1} << 32;
inline constexpr std::size_t max_steps = 100'000;

class ScenarioParser {
public:
    explicit ScenarioParser(std::string file) : reader_(std::move(file)) {}

    void parse_top(const YAML::Node& root);
    Scenario finish();

private:
    struct BufferInfo {
        std::uint32_t device = 0;
        std::uint64_t size_bytes = 0;
    };

    void parse_devices(const YAML::Node& node);
    Step step(const YAML::Node& node);
    Action action(const YAML::Node& key, const YAML::Node& body,
                  std::optional<FailureExpectation>& fails);

    AllocateStep allocate(const YamlFields& fields);
    SliceStep slice(const YamlFields& fields);
    StreamStep stream_step(const YamlFields& fields);
    DestroyStreamStep destroy_stream_step(const YamlFields& fields);
    /// An abandon step: a rank of the job's.
    AbandonStep abandon(const YamlFields& fields);
    /// A cut step: two different ranks of the job's, in either order.
    CutStep cut(const YamlFields& fields);
    /// `node` as a rank of the job's, for a step of `kind` ("an abandon step").
    std::uint32_t job_rank(const YAML::Node& node, const std::string& kind);
    WriteStep write(const YamlFields& fields);
    LaunchStep launch(const YamlFields& fields);
    LaunchConfig launch_config(const YamlFields& fields) const;
    LaunchResource resource(const YAML::Node& node) const;
    ScalarArg scalar_arg(const YAML::Node& node) const;
    CopyStep copy(const YamlFields& fields);
    SyncStep sync(const YamlFields& fields);
    ReadStep read(const YamlFields& fields);
    InjectStep inject(const YAML::Node& node) const;

    ByteSpec byte_spec(const YamlFields& fields, const std::string& what) const;
    void check_size(const YAML::Node& at, const ByteSpec& spec, std::uint64_t size_bytes,
                    const std::string& what) const;
    FailureExpectation failure(const YAML::Node& node) const;
    std::uint32_t device(const YAML::Node& node) const;
    /// The device a step runs on: its `device` key, or `fallback` (the buffer's device).
    std::uint32_t device_or(const YamlFields& fields, std::uint32_t fallback) const {
        return fields.has("device") ? device(fields.get("device")) : fallback;
    }
    const BufferInfo& buffer(const YAML::Node& node) const;
    std::string stream(const YamlFields& fields, std::uint32_t on_device) const;
    void define_buffer(const YAML::Node& at, const std::string& name, BufferInfo info);

    YamlReader reader_;
    Scenario scenario_;
    std::map<std::string, BufferInfo> buffers_;
    /// Freed buffer names and the line that freed them, for a precise message on later use.
    std::map<std::string, int> freed_;
    std::set<std::pair<std::uint32_t, std::string>> streams_;
    std::map<std::string, std::uint32_t> events_;
    std::map<std::string, std::uint32_t> graphs_;
    /// Streams with an open capture window, so begin and end pair up.
    std::set<std::pair<std::uint32_t, std::string>> capturing_;
};

}  // namespace tandem::tool
