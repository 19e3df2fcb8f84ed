#pragma once

// Errors as values.
//
// An `Error` is an immutable, cheaply copied value (one shared pointer): the failure graph keeps
// the error of every live failure, and every report that names a failure copies it. Kinds form a
// closed set; each kind's documentation says what the caller should decide. Details that a person
// needs to act (bytes requested, the expected service, the chain of skipped work) travel as typed
// fields, so tests and tools read them without parsing text.

#include "tandem/core/ids.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace tandem {

/// The closed set of error kinds.
enum class ErrorKind : std::uint8_t {
    /// The pool could not find the bytes. Free memory (drop handles) or ask for less, then retry.
    OutOfMemory,
    /// The call itself was wrong (offsets past the size, a zero-byte allocation, a malformed
    /// descriptor). Fix the program; retrying the same call fails the same way.
    InvalidArgument,
    /// A handle of one device was given to another device's client. Fix the program.
    WrongService,
    /// The launch was refused before anything ran (compile or configuration error). Fix the
    /// kernel or its configuration; its declared outputs are claimed.
    LaunchRefused,
    /// A kernel reported a failure from inside. Its outputs are claimed; retry or handle the code.
    KernelFailed,
    /// A read found bytes claimed by failed or skipped work. The report walks back to the root
    /// cause; fix or rerun the work that failed, then write the bytes again.
    Unwritten,
    /// One read found several distinct failures; each is listed.
    Several,
    /// The device hit a sticky fault and can run nothing more. Drop its runtime and create a new
    /// one; on a GPU a trap poisons every device of its process, so a new process is the restart.
    DeviceLost,
    /// A peer device cannot be reached (no access path), or another rank, process or library
    /// did not answer in time. Check the topology, or that the other side runs and takes part.
    PeerUnreachable,
    /// The code running the work threw or was torn down before it finished. Its outputs are
    /// claimed; the work may be retried.
    TornDown,
};

/// The kind's name, as reports print it ("OutOfMemory", "Unwritten", ...).
std::string_view to_string(ErrorKind kind);
/// The decision an error of this kind asks of its caller, in one sentence.
std::string_view advice(ErrorKind kind);

class Error;

/// A launch that did not run because one of its inputs was claimed, as the failure graph records
/// it: which kernel, on which device, the claimed input it needed and the outputs it would have
/// produced.
struct SkipRecord {
    /// The kernel that was skipped.
    std::string kernel;
    /// The device it was enqueued on.
    ServiceId device;
    /// The claimed input it needed.
    ClaimKey needed;
    /// What it would have written, now claimed by the same failure.
    std::vector<ClaimKey> produced;
};

/// The figures of an `OutOfMemory`: what was asked for and what the device had, in bytes.
struct OutOfMemoryDetails {
    /// The size of the allocation that failed.
    std::uint64_t requested_bytes = 0;
    /// Bytes not in use on the device.
    std::uint64_t free_bytes = 0;
    /// Bytes the device's pools held from storage.
    std::uint64_t reserved_bytes = 0;
    /// The largest allocation that could have succeeded.
    std::uint64_t largest_free_block_bytes = 0;
};

/// The services of a `WrongService`: the client's device and the handle's.
struct WrongServiceDetails {
    /// The device of the client that was called.
    ServiceId expected;
    /// The device the handle belongs to.
    ServiceId actual;
};

/// The kernel of a `LaunchRefused`.
struct LaunchRefusedDetails {
    /// The kernel whose launch was refused.
    std::string kernel;
};

/// What a `KernelFailed` reports: which kernel, where, and the code it reported.
struct KernelFailedDetails {
    /// The kernel that failed.
    std::string kernel;
    /// The device it ran on.
    ServiceId device;
    /// The stream it was enqueued on.
    StreamId stream;
    /// The failure code the kernel reported from inside.
    std::uint32_t code = 0;
    /// Whether the failure was injected (`KernelFault`, a scenario's `inject`) rather than
    /// reported by the kernel itself: the kernel did not run.
    bool injected = false;
    /// Which injected fault it was: its number among the faults injected into the device, from 1
    /// in the order `Client::inject` took them (allocation and loss faults count too); 0 when
    /// the failure was not injected.
    std::uint32_t fault_entry = 0;
};

/// What an `Unwritten` read found: the failure claiming its bytes, the chain of skipped work back
/// to the root and the root error.
struct UnwrittenDetails {
    /// The failure claiming the bytes read.
    FailureId failure;
    /// How many allocations carried the failure when the read found it.
    std::uint64_t allocations = 0;
    /// Skipped work from the buffer that was read back towards the root, newest hop first.
    std::vector<SkipRecord> chain;
    /// Skip records of this failure that were dropped because the record list is bounded.
    std::uint64_t dropped_records = 0;
    /// The error of the work that failed first. Never null.
    std::shared_ptr<const Error> root;
};

/// The failures of a `Several`, one error each, in the order the read found them.
struct SeveralDetails {
    /// Each distinct failure's error.
    std::vector<Error> errors;
};

/// The device of a `DeviceLost`.
struct DeviceLostDetails {
    /// The device that is lost.
    ServiceId device;
};

/// The devices of a `PeerUnreachable`.
struct PeerUnreachableDetails {
    /// The device that tried to reach the other.
    ServiceId from;
    /// The device that could not be reached.
    ServiceId to;
};

/// The typed details an error carries: one of the structs above, or none (`std::monostate`).
using ErrorDetails =
    std::variant<std::monostate, OutOfMemoryDetails, WrongServiceDetails, LaunchRefusedDetails,
                 KernelFailedDetails, UnwrittenDetails, SeveralDetails, DeviceLostDetails,
                 PeerUnreachableDetails>;

/// An error: a kind, a message, typed details and an optional cause.
class Error {
public:
    /// An error of `kind` with `message` and `details`. The named constructors below build each
    /// kind with its details and a message in the usual words.
    Error(ErrorKind kind, std::string message, ErrorDetails details = {});

    /// `OutOfMemory` with its figures.
    static Error out_of_memory(std::string message, OutOfMemoryDetails details);
    /// `InvalidArgument`: the call itself was wrong; `message` says how.
    static Error invalid_argument(std::string message);
    /// `WrongService`: a handle of `actual` given to the client of `expected`.
    static Error wrong_service(ServiceId expected, ServiceId actual);
    /// `LaunchRefused`: the launch of `kernel` was refused before it ran, for `reason`.
    static Error launch_refused(std::string kernel, std::string reason);
    /// `KernelFailed`: the kernel reported a failure code from inside.
    static Error kernel_failed(KernelFailedDetails details);
    /// `Unwritten`: a read found claimed bytes; `details.root` must not be null.
    static Error unwritten(UnwrittenDetails details);
    /// One error when `errors` holds one, else a `Several` listing them all.
    static Error several(std::vector<Error> errors);
    /// `DeviceLost`: `device` hit a sticky fault, for `reason`.
    static Error device_lost(ServiceId device, std::string reason);
    /// `PeerUnreachable`: `from` cannot reach `to`, for `reason`.
    static Error peer_unreachable(ServiceId from, ServiceId to, std::string reason);
    /// `TornDown`: the code running the work threw or was torn down; `message` says how.
    static Error torn_down(std::string message);
    /// `TornDown`: `work` (as a report names it) threw the exception being handled, whatever
    /// its type; its `what()` when it is a `std::exception`. Only inside a catch block.
    static Error thrown_by(std::string_view work);

    /// The kind, which says what the caller should decide.
    [[nodiscard]] ErrorKind kind() const;
    /// The message, without the kind.
    [[nodiscard]] const std::string& message() const;
    /// The typed details (`std::monostate` when the kind carries none).
    [[nodiscard]] const ErrorDetails& details() const;
    /// The typed details, or null when this error carries another kind of details.
    template <typename Details>
    [[nodiscard]] const Details* details_as() const {
        return std::get_if<Details>(&details());
    }
    /// The error that caused this one, or null.
    [[nodiscard]] const Error* cause() const;
    /// A copy of this error with `cause` appended at the end of its cause chain.
    [[nodiscard]] Error caused_by(Error cause) const;

    /// The error as a person reads it: kind, message, details, the advice of its kind and its
    /// cause chain, one item a line.
    [[nodiscard]] std::string report() const;

private:
    struct Payload;
    explicit Error(std::shared_ptr<const Payload> payload);
    std::shared_ptr<const Payload> payload_;
};

}  // namespace tandem
