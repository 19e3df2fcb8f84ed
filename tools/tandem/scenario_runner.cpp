#include "scenario_runner.hpp"

#include <algorithm>
#include <sstream>

namespace tandem::tool {
namespace {

void root_kinds(const Error& error, std::vector<ErrorKind>& kinds) {
    if (const auto* unwritten = error.details_as<UnwrittenDetails>()) {
        root_kinds(*unwritten->root, kinds);
    } else if (const auto* several = error.details_as<SeveralDetails>()) {
        for (const Error& each : several->errors) {
            root_kinds(each, kinds);
        }
    } else {
        kinds.push_back(error.kind());
    }
}

/// Why `error` does not match `expected`, or empty when it does.
std::string mismatch(const Error& error, const FailureExpectation& expected) {
    const std::string report = error.report();
    if (expected.kind && error.kind() != *expected.kind) {
        return "expected " + std::string(to_string(*expected.kind)) + ", got:\n" + report;
    }
    if (expected.root) {
        std::vector<ErrorKind> kinds;
        root_kinds(error, kinds);
        if (std::find(kinds.begin(), kinds.end(), *expected.root) == kinds.end()) {
            return "expected a root " + std::string(to_string(*expected.root)) + ", got:\n" +
                   report;
        }
    }
    if (!expected.chain.empty()) {
        const auto* unwritten = error.details_as<UnwrittenDetails>();
        std::vector<std::string> chain;
        for (const SkipRecord& hop : unwritten ? unwritten->chain : std::vector<SkipRecord>{}) {
            chain.push_back(hop.kernel);
        }
        if (chain != expected.chain) {
            return "expected the skip chain to list " + std::to_string(expected.chain.size()) +
                   " hops as the file says, got:\n" + report;
        }
    }
    for (const std::string& needle : expected.report) {
        if (report.find(needle) == std::string::npos) {
            return "expected the report to contain '" + needle + "', got:\n" + report;
        }
    }
    return {};
}

std::string hex_dump(const std::vector<std::byte>& bytes) {
    std::ostringstream out;
    const std::size_t shown = std::min<std::size_t>(bytes.size(), 32);
    for (std::size_t index = 0; index < shown; ++index) {
        out << (index ? " " : "") << std::hex << std::to_integer<unsigned>(bytes[index]);
    }
    if (shown < bytes.size()) {
        out << " ... (" << std::dec << bytes.size() << " bytes)";
    }
    return out.str();
}

}  // namespace

std::string describe_outcome(const Outcome& outcome) {
    if (!outcome.problem.empty()) {
        return "problem: " + outcome.problem;
    }
    if (outcome.error) {
        return std::string(to_string(outcome.error->kind())) + ": " + outcome.error->message();
    }
    return outcome.bytes ? "ok: " + hex_dump(*outcome.bytes) : "ok";
}

std::string judge(const Step& step, const Outcome& outcome) {
    if (!outcome.problem.empty()) {
        return outcome.problem;
    }
    if (step.fails) {
        if (!outcome.error) {
            return "expected the step to fail, but it succeeded";
        }
        return mismatch(*outcome.error, *step.fails);
    }
    if (outcome.error) {
        return "expected the step to succeed, got:\n" + outcome.error->report();
    }
    const auto* read = std::get_if<ReadStep>(&step.action);
    if (read && read->expect && outcome.bytes) {
        const std::vector<std::byte> expected = read->expect->materialize(outcome.bytes->size());
        if (expected != *outcome.bytes) {
            return "expected " + read->expect->describe() + ", read " + hex_dump(*outcome.bytes);
        }
    }
    return {};
}

std::optional<std::uint32_t> executing_device(const Action& action,
                                              std::map<std::string, std::uint32_t>& owners) {
    if (const auto* allocate = std::get_if<AllocateStep>(&action)) {
        owners[allocate->name] = allocate->device;
        return allocate->device;
    }
    if (const auto* slice = std::get_if<SliceStep>(&action)) {
        const std::uint32_t owner = owners[slice->of];
        owners[slice->name] = owner;
        return owner;  // The owner slices; another rank slices what it looks up.
    }
    if (const auto* share = std::get_if<ShareStep>(&action)) {
        return owners[share->buffer];
    }
    if (const auto* grant = std::get_if<GrantStep>(&action)) {
        return grant->owner;
    }
    if (const auto* sync = std::get_if<SyncStep>(&action)) {
        return sync->device;
    }
    if (std::holds_alternative<FreeStep>(action)) {
        return std::nullopt;
    }
    return std::visit(
        [](const auto& step) -> std::optional<std::uint32_t> {
            if constexpr (requires { step.device; }) {
                return step.device;
            } else {
                return std::nullopt;
            }
        },
        action);
}

}  // namespace tandem::tool
