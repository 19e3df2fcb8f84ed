#pragma once

// The claims an operation's outcome leaves, across the devices its bytes live on. Every backend
// learns outcomes its own way (a scheduler step on sim, a status word on cuda); what an outcome
// does to claims is the same everywhere, and lives here. The settle pipeline
// (`settle_pipeline.hpp`) is the one caller; each owner is reached through the runtime's
// `DeviceDirectory`, by its service id.

#include "tandem/backend/device_directory.hpp"
#include "tandem/core/peer_memory.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace tandem {

/// Bytes an operation reads or writes: a key of the device that owns them, and the shared memory
/// it was reached through when the owner is not the device running the operation.
struct Target {
    /// The device that owns the bytes.
    ServiceId owner;
    /// The bytes, as that device's claims name them.
    ClaimKey key;
};

/// Why an operation's outputs are claimed without it running: a failure found on an input.
struct Cause {
    /// The device whose graph holds `failure`, when the input was claimed there.
    ServiceId owner;
    /// The failure claiming the input, when it was claimed.
    std::optional<FailureId> failure;
    /// The error: the claim's report as it was found, or what else caused it (a lost owner, a
    /// failed peer write). Always set by `first_claimed_input`.
    std::optional<Error> error;
    /// The input bytes that were needed.
    ClaimKey needed;
};

/// The first input whose bytes are claimed on their owner (C9, P3) or whose owner is lost (D1), in
/// declared order. Byte-precise: shared memory whose other bytes failed does not make a clean
/// input claimed.
std::optional<Cause> first_claimed_input(const DeviceDirectory& devices,
                                         std::span<const Target> inputs);
/// The first output of a device other than `runner` whose owner is lost (D1: work binding a
/// lost device's memory is skipped, a write as a read is), in declared order: the loss as the
/// cause, the output's bytes as needed. `runner`'s own loss fails the work where it runs.
std::optional<Cause> first_lost_output(const DeviceDirectory& devices, ServiceId runner,
                                       std::span<const Target> outputs);
/// The error a device other than the cause's sees: the owner's full report for a claim.
Error cause_error(const DeviceDirectory& devices, const Cause& cause);
/// C9: the operation `label`, which `runner` ran (or would have), did not run because of
/// `cause`; its outputs take that failure, with a skip record naming `runner` (a cross-device hop
/// becomes a new failure carrying the owner's root and hops, `ClaimStore::claim_skipped`).
void claim_skipped(DeviceDirectory& devices, ServiceId runner, std::string_view label,
                   std::span<const Target> outputs, const Cause& cause);
/// C8: the operation failed with `error`; one new failure per device claims its outputs (P4 for
/// shared memory: on its owner).
void claim_failed(DeviceDirectory& devices, std::span<const Target> outputs, const Error& error);
/// C3: the operation landed; its outputs' claims are released (P5: in program order, since the
/// pipeline settles in that order).
void release_outputs(DeviceDirectory& devices, std::span<const Target> outputs);

}  // namespace tandem
