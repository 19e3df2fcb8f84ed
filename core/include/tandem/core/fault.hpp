#pragma once

// Faults a backend can inject on purpose: the failures tandem claims to survive, made to happen
// when a test or scenario says so. Probabilities draw from the run's seed, so a faulty run
// replays exactly.

#include "tandem/core/ids.hpp"

#include <cstdint>
#include <string>
#include <variant>

namespace tandem {

/// Launches of `kernel` report failure `code` from inside: the `nth` launch from now only
/// (1-based), or every launch when `nth` is 0, each with `probability`.
struct KernelFault {
    /// The kernel's name, as launches name it.
    std::string kernel;
    /// Which launch from now fails, from 1; 0 for every launch.
    std::uint64_t nth = 0;
    /// The chance that a launch the fault covers fails, from 0 to 1.
    double probability = 1.0;
    /// The failure code the kernel reports.
    std::uint32_t code = 1;
};

/// The `nth` allocation from now (1-based) fails with `OutOfMemory`.
struct AllocationFault {
    /// Which allocation from now fails, from 1.
    std::uint64_t nth = 1;
};

/// The device is lost (a sticky fault) once `after_operations` more operations have run on it.
struct DeviceLossFault {
    /// Operations that still run before the device is lost; 0 loses it at once.
    std::uint64_t after_operations = 0;
};

/// Work on `stream` is held back for `steps` scheduler steps (the simulator's deterministic mode)
/// or microseconds (its threads mode; a kernel that waits, on a GPU) before it may run.
struct StreamDelay {
    /// The longest a stream may be held back, in all: a sync waits out every step of a delay,
    /// so an unbounded one would hang it. The simulator counts the steps not yet run; a GPU counts
    /// those injected since the device last synchronised.
    static constexpr std::uint64_t max_steps = 1'000'000;

    /// The stream held back.
    StreamId stream;
    /// How long it is held back: scheduler steps on the deterministic simulator, microseconds in
    /// its threads mode and on a GPU.
    std::uint64_t steps = 0;
};

/// Any fault `Client::inject` takes.
using Fault = std::variant<KernelFault, AllocationFault, DeviceLossFault, StreamDelay>;

/// The fault in words, for reports and traces ("kernel 'fill' fails with code 7 on launch 2").
std::string describe(const Fault& fault);

}  // namespace tandem
