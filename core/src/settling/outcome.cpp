#include "tandem/backend/outcome.hpp"

#include <map>
#include <vector>

namespace tandem {
namespace {

std::map<ServiceId, std::vector<ClaimKey>> by_owner(std::span<const Target> targets) {
    std::map<ServiceId, std::vector<ClaimKey>> grouped;
    for (const Target& target : targets) {
        grouped[target.owner].push_back(target.key);
    }
    return grouped;
}

}  // namespace

std::optional<Cause> first_claimed_input(const DeviceDirectory& devices,
                                         std::span<const Target> inputs) {
    for (const Target& input : inputs) {
        if (std::optional<Error> lost = devices.lost(input.owner)) {
            return Cause{input.owner, std::nullopt, std::move(*lost), input.key};
        }
        if (devices.nothing_claimed(input.owner)) {
            continue;
        }
        const ClaimKey key[] = {input.key};
        if (std::optional<FoundClaim> claimed = devices.first_claimed(input.owner, key)) {
            // The report is taken now: by the time the skip is applied (a later step, a later
            // sync), the failure may have been dropped with the last allocation carrying it.
            return Cause{input.owner, claimed->failure, std::move(claimed->report), input.key};
        }
    }
    return std::nullopt;
}

std::optional<Cause> first_lost_output(const DeviceDirectory& devices, ServiceId runner,
                                       std::span<const Target> outputs) {
    for (const Target& output : outputs) {
        if (output.owner == runner) {
            continue;
        }
        if (std::optional<Error> lost = devices.lost(output.owner)) [[unlikely]] {
            return Cause{output.owner, std::nullopt, std::move(*lost), output.key};
        }
    }
    return std::nullopt;
}

Error cause_error(const DeviceDirectory& devices, const Cause& cause) {
    if (cause.failure) {
        if (std::optional<Error> report = devices.report(cause.owner, *cause.failure, cause.needed)) {
            return *report;
        }
    }
    return *cause.error;
}

void claim_skipped(DeviceDirectory& devices, ServiceId runner, std::string_view label,
                   std::span<const Target> outputs, const Cause& cause) {
    const Error error = cause_error(devices, cause);
    for (auto& [owner, keys] : by_owner(outputs)) {
        SkipRecord record{std::string(label), runner, cause.needed, keys};
        // On the cause's own device the outputs join its failure (one chain); elsewhere the hop
        // is a new failure carrying the owner's root and hops.
        const std::optional<FailureId> join =
            cause.owner == owner ? cause.failure : std::optional<FailureId>();
        devices.claim_skipped(owner, keys, join, error, std::move(record));
    }
}

void claim_failed(DeviceDirectory& devices, std::span<const Target> outputs, const Error& error) {
    for (auto& [owner, keys] : by_owner(outputs)) {
        devices.claim_failed(owner, keys, error);
    }
}

void release_outputs(DeviceDirectory& devices, std::span<const Target> outputs) {
    for (const Target& output : outputs) {
        devices.release(output.owner, output.key);
    }
}

}  // namespace tandem
