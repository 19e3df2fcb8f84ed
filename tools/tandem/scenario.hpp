#pragma once

// A scenario as the tool holds it once its YAML file has been parsed and validated.
//
// Parsing and validation are one pass over the whole file that ends before any runtime exists:
// a malformed file (an unknown key, a wrong type, a buffer used before it is allocated or after
// it is freed, a slice past its buffer) is reported with file:line:column and nothing runs. The
// format is documented in scenarios/README.md; every field here is named as it is there.

#include "tandem/core/copy_descriptor.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/fault.hpp"
#include "tandem/core/kernel.hpp"
#include "tandem/core/kernel_resource.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace tandem::tool {

/// Where a step sits in its file, 1-based, for messages a person can jump to.
struct SourceMark {
    std::string file;
    int line = 0;
    int column = 0;

    [[nodiscard]] std::string describe() const;
};

/// Bytes given in a file: a fill byte, a list, an arithmetic pattern, or typed values.
struct ByteSpec {
    enum class Kind : std::uint8_t { Fill, List, Pattern, F32, U64 };
    Kind kind = Kind::Fill;
    std::uint8_t fill = 0;
    std::vector<std::uint8_t> list;
    std::uint8_t pattern_start = 0;
    std::uint8_t pattern_step = 1;
    std::vector<float> f32;
    std::vector<std::uint64_t> u64;

    /// The bytes for a buffer of `size_bytes` (fills and patterns stretch; lists do not).
    [[nodiscard]] std::vector<std::byte> materialize(std::uint64_t size_bytes) const;
    /// How many bytes the spec fixes, or none when it stretches to any size.
    [[nodiscard]] std::optional<std::uint64_t> fixed_size() const;
    [[nodiscard]] std::string describe() const;
};

/// What a failing step must report.
struct FailureExpectation {
    std::optional<ErrorKind> kind;
    /// The kind at the end of the root chain (through nested `Unwritten` roots).
    std::optional<ErrorKind> root;
    /// Kernel names of the skip chain, newest hop first, as the report lists them.
    std::vector<std::string> chain;
    /// Substrings the report must contain.
    std::vector<std::string> report;
};

struct AllocateStep {
    std::string name;
    std::uint32_t device = 0;
    std::uint64_t size_bytes = 0;
    std::string stream = "main";
};
struct SliceStep {
    std::string name;
    std::string of;
    std::uint64_t offset_bytes = 0;
    std::uint64_t length_bytes = 0;
};
struct StreamStep {
    std::string name;
    std::uint32_t device = 0;
};
/// Destroys a stream a `stream` step created, after its work; its name then names a destroyed
/// stream, which later steps may use to check that the call is refused.
struct DestroyStreamStep {
    std::string name;
    std::uint32_t device = 0;
};
struct WriteStep {
    std::string buffer;
    std::uint32_t device = 0;
    ByteSpec data;
};
struct LaunchResource {
    std::string buffer;
    AccessMode access = AccessMode::ReadWrite;
    std::optional<TensorMapDescriptor> tensor_map;
};
struct ScalarArg {
    bool is_f64 = false;
    std::uint64_t u64 = 0;
    double f64 = 0;
};
struct LaunchStep {
    std::string kernel;
    std::uint32_t device = 0;
    std::string stream = "main";
    LaunchConfig config;
    std::vector<LaunchResource> resources;
    std::vector<ScalarArg> args;
};
struct ShareStep {
    std::string buffer;
};
struct GrantStep {
    std::uint32_t owner = 0;
    std::uint32_t accessor = 0;
};
struct CopyStep {
    std::string from;
    std::string to;
    std::uint32_t device = 0;
    std::string stream = "main";
};
struct RecordStep {
    std::string event;
    std::uint32_t device = 0;
    std::string stream = "main";
};
struct WaitStep {
    std::string event;
    std::uint32_t device = 0;
    std::string stream = "main";
};
struct SyncStep {
    /// Every device when absent.
    std::optional<std::uint32_t> device;
    std::vector<std::string> buffers;
};
struct StridedView {
    std::vector<std::uint64_t> shape;
    std::vector<std::uint64_t> strides;
    std::uint64_t elem_size_bytes = 1;
};
struct ReadStep {
    std::string buffer;
    std::uint32_t device = 0;
    std::optional<StridedView> strided;
    std::optional<ByteSpec> expect;
};
struct FreeStep {
    std::string buffer;
};
struct BeginCaptureStep {
    std::uint32_t device = 0;
    std::string stream = "main";
};
struct EndCaptureStep {
    std::uint32_t device = 0;
    std::string stream = "main";
    std::string graph;
};
struct ReplayStep {
    std::string graph;
    std::uint32_t device = 0;
    std::string stream = "main";
};
struct InjectStep {
    std::uint32_t device = 0;
    /// A stream delay names its stream here; the fault's stream id is resolved when it runs.
    std::string stream = "main";
    Fault fault;
};

/// Ends rank `rank` of a job as its death would (`Job::abandon`): a scenario of ranks with one
/// runs as a job simulated in one process (scenario_in_process.hpp).
struct AbandonStep {
    std::uint32_t rank = 0;
};

/// Breaks the connection between two ranks of a job that both live (`Job::cut_connection`): the
/// job cuts off the higher, which then runs no step of the file. Runs as a job simulated in one
/// process, as an abandon step does.
struct CutStep {
    /// The rank that stays in the job.
    std::uint32_t lower = 0;
    /// The rank cut off, above `lower`.
    std::uint32_t higher = 1;
};

using Action =
    std::variant<AllocateStep, SliceStep, StreamStep, WriteStep, LaunchStep, ShareStep, GrantStep,
                 CopyStep, RecordStep, WaitStep, SyncStep, ReadStep, FreeStep, BeginCaptureStep,
                 EndCaptureStep, ReplayStep, InjectStep, DestroyStreamStep, AbandonStep, CutStep>;

/// The step kind as the file spells it ("allocate", "launch", ...).
std::string_view step_kind(const Action& action);

struct Step {
    SourceMark mark;
    Action action;
    /// The step itself must fail like this; absent, it must succeed.
    std::optional<FailureExpectation> fails;
};

enum class RaceExpectation : std::uint8_t { Unchecked, None, Reported };

struct Scenario {
    std::string path;
    std::string name;
    std::string description;
    std::uint32_t devices = 2;
    /// The processes the devices run in, one rank of a job each (`devices / ranks` devices
    /// each, in order); 1 runs them all in this process.
    std::uint32_t ranks = 1;
    std::optional<std::uint64_t> seed;
    std::optional<std::uint64_t> capacity_bytes;
    bool grant_all_peers = false;
    std::vector<GrantStep> grants;
    std::vector<InjectStep> faults;
    std::vector<Step> steps;
    RaceExpectation races = RaceExpectation::Unchecked;
    /// The backends the scenario is meant for; empty means every backend. A scenario that
    /// checks what only the simulator can show (a race report, a deadlock report, a fault from
    /// an ungranted access that would take a GPU process down) names `sim`.
    std::vector<std::string> backends;
};

/// A malformed file: where, and what was expected there.
struct ParseError {
    std::string message;
};

/// Parses and validates the whole file `path`, or says where it is wrong.
std::variant<Scenario, ParseError> parse_scenario_file(const std::string& path);
/// The same for text already in memory (`path` only names it in messages).
std::variant<Scenario, ParseError> parse_scenario_text(const std::string& text,
                                                       const std::string& path);

/// The scenario as YAML in the documented format (explore writes shrunk programs with it).
std::string write_scenario(const Scenario& scenario);

}  // namespace tandem::tool
