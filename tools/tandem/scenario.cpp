// Byte specifications, step names, and writing a scenario back out as YAML (what explore does
// with a shrunk program, so the file it leaves runs with `tandem run` like any other).

#include "scenario.hpp"

#include <cstring>
#include <iomanip>
#include <limits>
#include <sstream>

namespace tandem::tool {

std::vector<std::byte> ByteSpec::materialize(std::uint64_t size_bytes) const {
    std::vector<std::byte> bytes(size_bytes);
    switch (kind) {
        case Kind::Fill:
            std::fill(bytes.begin(), bytes.end(), std::byte{fill});
            break;
        case Kind::List:
            for (std::size_t index = 0; index < bytes.size() && index < list.size(); ++index) {
                bytes[index] = std::byte{list[index]};
            }
            break;
        case Kind::Pattern:
            for (std::size_t index = 0; index < bytes.size(); ++index) {
                bytes[index] =
                    std::byte{static_cast<std::uint8_t>(pattern_start + index * pattern_step)};
            }
            break;
        case Kind::F32:
            std::memcpy(bytes.data(), f32.data(),
                        std::min<std::size_t>(bytes.size(), f32.size() * 4));
            break;
        case Kind::U64:
            std::memcpy(bytes.data(), u64.data(),
                        std::min<std::size_t>(bytes.size(), u64.size() * 8));
            break;
    }
    return bytes;
}

std::optional<std::uint64_t> ByteSpec::fixed_size() const {
    switch (kind) {
        case Kind::List:
            return list.size();
        case Kind::F32:
            return f32.size() * 4;
        case Kind::U64:
            return u64.size() * 8;
        case Kind::Fill:
        case Kind::Pattern:
            break;
    }
    return std::nullopt;
}

std::string ByteSpec::describe() const {
    std::ostringstream out;
    switch (kind) {
        case Kind::Fill:
            out << "fill: " << unsigned{fill};
            break;
        case Kind::List:
            out << "bytes: [";
            for (std::size_t index = 0; index < list.size(); ++index) {
                out << (index ? ", " : "") << unsigned{list[index]};
            }
            out << "]";
            break;
        case Kind::Pattern:
            out << "pattern: {start: " << unsigned{pattern_start}
                << ", step: " << unsigned{pattern_step} << "}";
            break;
        case Kind::F32:
            out << "f32: [";
            for (std::size_t index = 0; index < f32.size(); ++index) {
                out << (index ? ", " : "")
                    << std::setprecision(std::numeric_limits<float>::max_digits10) << f32[index]
                    << std::setprecision(6);
            }
            out << "]";
            break;
        case Kind::U64:
            out << "u64: [";
            for (std::size_t index = 0; index < u64.size(); ++index) {
                out << (index ? ", " : "") << u64[index];
            }
            out << "]";
            break;
    }
    return out.str();
}

std::string_view step_kind(const Action& action) {
    static constexpr std::string_view names[] = {
        "allocate",    "slice",  "stream", "write",          "launch",  "share", "grant",
        "copy",        "record", "wait",   "sync",           "read",    "free",  "begin_capture",
        "end_capture", "replay", "inject", "destroy_stream", "abandon", "cut"};
    static_assert(std::size(names) == std::variant_size_v<Action>);
    return names[action.index()];
}

namespace {

std::string quoted(const std::string& text) {
    std::string out = "\"";
    for (char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
        }
        out += c;
    }
    return out + "\"";
}

std::string access_name(AccessMode mode) {
    return mode == AccessMode::Read ? "read" : mode == AccessMode::Write ? "write" : "readwrite";
}

std::string fault_fields(const InjectStep& step) {
    std::ostringstream out;
    out << "device: " << step.device;
    if (const auto* kernel = std::get_if<KernelFault>(&step.fault)) {
        out << ", kernel: " << kernel->kernel << ", nth: " << kernel->nth
            << ", probability: " << kernel->probability << ", code: " << kernel->code;
    } else if (const auto* allocation = std::get_if<AllocationFault>(&step.fault)) {
        out << ", allocation: " << allocation->nth;
    } else if (const auto* loss = std::get_if<DeviceLossFault>(&step.fault)) {
        out << ", lose_after: " << loss->after_operations;
    } else if (const auto* delay = std::get_if<StreamDelay>(&step.fault)) {
        out << ", stream: " << step.stream << ", delay: " << delay->steps;
    }
    return out.str();
}

/// The body of one step, as a flow mapping without its braces.
/// A launch step's fields, as a file spells them.
std::string launch_fields(const LaunchStep& step) {
    std::ostringstream out;
    out << "kernel: " << step.kernel << ", device: " << step.device << ", stream: " << step.stream
        << ", grid: [" << step.config.grid.x << ", " << step.config.grid.y << ", "
        << step.config.grid.z << "], block: [" << step.config.block.x << ", "
        << step.config.block.y << ", " << step.config.block.z << "], resources: [";
    for (std::size_t index = 0; index < step.resources.size(); ++index) {
        out << (index ? ", " : "") << "{buffer: " << step.resources[index].buffer
            << ", access: " << access_name(step.resources[index].access) << "}";
    }
    out << "], args: [";
    for (std::size_t index = 0; index < step.args.size(); ++index) {
        out << (index ? ", " : "") << (step.args[index].is_f64 ? "{f64: " : "{u64: ");
        if (step.args[index].is_f64) {
            // Every digit a double needs, so the program written back replays exactly (the
            // default six digits rounded it).
            out << std::setprecision(std::numeric_limits<double>::max_digits10)
                << step.args[index].f64 << std::setprecision(6) << "}";
        } else {
            out << step.args[index].u64 << "}";
        }
    }
    out << "]";
    return out.str();
}

std::string step_body(const Action& action) {
    std::ostringstream out;
    std::visit(
        [&out](const auto& step) {
            using T = std::decay_t<decltype(step)>;
            if constexpr (std::is_same_v<T, AllocateStep>) {
                out << "name: " << step.name << ", device: " << step.device
                    << ", size: " << step.size_bytes;
            } else if constexpr (std::is_same_v<T, SliceStep>) {
                out << "name: " << step.name << ", of: " << step.of
                    << ", offset: " << step.offset_bytes << ", length: " << step.length_bytes;
            } else if constexpr (std::is_same_v<T, StreamStep> ||
                                 std::is_same_v<T, DestroyStreamStep>) {
                out << "name: " << step.name << ", device: " << step.device;
            } else if constexpr (std::is_same_v<T, WriteStep>) {
                out << "buffer: " << step.buffer << ", device: " << step.device << ", "
                    << step.data.describe();
            } else if constexpr (std::is_same_v<T, LaunchStep>) {
                out << launch_fields(step);
            } else if constexpr (std::is_same_v<T, ShareStep>) {
                out << "buffer: " << step.buffer;
            } else if constexpr (std::is_same_v<T, GrantStep>) {
                out << "owner: " << step.owner << ", accessor: " << step.accessor;
            } else if constexpr (std::is_same_v<T, CopyStep>) {
                out << "from: " << step.from << ", to: " << step.to << ", device: " << step.device
                    << ", stream: " << step.stream;
            } else if constexpr (std::is_same_v<T, RecordStep> || std::is_same_v<T, WaitStep>) {
                out << "event: " << step.event << ", device: " << step.device
                    << ", stream: " << step.stream;
            } else if constexpr (std::is_same_v<T, SyncStep>) {
                if (step.device) {
                    out << "device: " << *step.device;
                }
            } else if constexpr (std::is_same_v<T, ReadStep>) {
                out << "buffer: " << step.buffer << ", device: " << step.device;
                if (step.expect) {
                    out << ", expect: {" << step.expect->describe() << "}";
                }
            } else if constexpr (std::is_same_v<T, FreeStep>) {
                out << "buffer: " << step.buffer;
            } else if constexpr (std::is_same_v<T, BeginCaptureStep>) {
                out << "device: " << step.device << ", stream: " << step.stream;
            } else if constexpr (std::is_same_v<T, EndCaptureStep>) {
                out << "device: " << step.device << ", stream: " << step.stream
                    << ", graph: " << step.graph;
            } else if constexpr (std::is_same_v<T, ReplayStep>) {
                out << "graph: " << step.graph << ", device: " << step.device
                    << ", stream: " << step.stream;
            } else if constexpr (std::is_same_v<T, InjectStep>) {
                out << fault_fields(step);
            } else if constexpr (std::is_same_v<T, AbandonStep>) {
                out << "rank: " << step.rank;
            } else if constexpr (std::is_same_v<T, CutStep>) {
                out << "ranks: [" << step.lower << ", " << step.higher << "]";
            }
        },
        action);
    return out.str();
}

std::string failure_fields(const FailureExpectation& fails) {
    std::ostringstream out;
    const char* separator = "";
    if (fails.kind) {
        out << "kind: " << to_string(*fails.kind);
        separator = ", ";
    }
    if (fails.root) {
        out << separator << "root: " << to_string(*fails.root);
        separator = ", ";
    }
    if (!fails.report.empty()) {
        out << separator << "report: [";
        for (std::size_t index = 0; index < fails.report.size(); ++index) {
            out << (index ? ", " : "") << quoted(fails.report[index]);
        }
        out << "]";
    }
    return out.str();
}

}  // namespace

std::string write_scenario(const Scenario& scenario) {
    std::ostringstream out;
    out << "name: " << quoted(scenario.name) << "\n";
    if (!scenario.description.empty()) {
        out << "description: " << quoted(scenario.description) << "\n";
    }
    out << "devices:\n  count: " << scenario.devices << "\n";
    if (scenario.ranks != 1) {
        out << "  ranks: " << scenario.ranks << "\n";
    }
    if (scenario.seed) {
        out << "  seed: " << *scenario.seed << "\n";
    }
    if (scenario.capacity_bytes) {
        out << "  capacity: " << *scenario.capacity_bytes << "\n";
    }
    if (scenario.grant_all_peers) {
        out << "  grant_all: true\n";
    }
    if (!scenario.faults.empty()) {
        out << "faults:\n";
        for (const InjectStep& fault : scenario.faults) {
            out << "  - {" << fault_fields(fault) << "}\n";
        }
    }
    out << "steps:\n";
    for (const Step& step : scenario.steps) {
        const std::string body = step_body(step.action);
        out << "  - " << step_kind(step.action) << ": {" << body;
        if (step.fails) {
            out << (body.empty() ? "" : ", ") << "fails: {" << failure_fields(*step.fails) << "}";
        }
        out << "}\n";
    }
    return out.str();
}

}  // namespace tandem::tool
