#include "tandem/core/outcome.hpp"

#include <map>
#include <vector>

namespace tandem {
namespace {

std::map<std::uint32_t, std::vector<ClaimKey>> by_device(std::span<const Target> targets) {
    std::map<std::uint32_t, std::vector<ClaimKey>> grouped;
    for (const Target& target : targets) {
        grouped[target.device].push_back(target.key);
    }
    return grouped;
}

}  // namespace

std::optional<Cause> first_claimed_input(const DeviceDirectory& devices,
                                         std::span<const Target> inputs) {
    for (const Target& input : inputs) {
        if (std::optional<Error> lost = devices.lost(input.device)) {
            return Cause{input.device, std::nullopt, *lost, input.key};
        }
        const ClaimKey key[] = {input.key};
        const ClaimStore& claims = devices.claims_of(input.device);
        if (auto claimed = claims.first_claimed(key)) {
            // The report is taken now: by the time the skip is applied (a later step, a later
            // sync), the failure may have been dropped with the last allocation carrying it.
            return Cause{input.device, claimed->second, claims.report(claimed->second, input.key),
                         input.key};
        }
    }
    return std::nullopt;
}

Error cause_error(const DeviceDirectory& devices, const Cause& cause) {
    const ClaimStore& claims = devices.claims_of(cause.device);
    if (cause.failure && claims.failure_alive(*cause.failure)) {
        return claims.report(*cause.failure, cause.needed);
    }
    return *cause.error;
}

void claim_skipped(const DeviceDirectory& devices, ServiceId runner, std::string_view label,
                   std::span<const Target> outputs, const Cause& cause) {
    for (auto& [device, keys] : by_device(outputs)) {
        ClaimStore& store = devices.claims_of(device);
        SkipRecord record{std::string(label), runner, cause.needed, keys};
        if (cause.failure && cause.device == device && store.failure_alive(*cause.failure)) {
            store.add_skip(*cause.failure, std::move(record));
            for (const ClaimKey& key : keys) {
                store.claim(key, *cause.failure);
            }
            continue;
        }
        FailureId failure = store.fail(keys, cause_error(devices, cause));
        if (store.failure_alive(failure)) {
            store.add_skip(failure, std::move(record));
        }
    }
    for (const Target& output : outputs) {
        if (output.peer) {
            output.peer->fail(cause_error(devices, cause));
        }
    }
}

void claim_failed(const DeviceDirectory& devices, std::span<const Target> outputs,
                  const Error& error) {
    for (auto& [device, keys] : by_device(outputs)) {
        (void)devices.claims_of(device).fail(keys, error);
    }
    for (const Target& output : outputs) {
        if (output.peer) {
            output.peer->fail(error);
        }
    }
}

void release_outputs(const DeviceDirectory& devices, std::span<const Target> outputs) {
    for (const Target& output : outputs) {
        devices.claims_of(output.device).release(output.key);
        if (output.peer) {
            (void)output.peer->repair();
        }
    }
}

}  // namespace tandem
