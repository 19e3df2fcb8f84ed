#pragma once

// The faults armed on one device, and when each is due. Both backends keep one: the decisions
// (which launch fails, which allocation, after how many operations the device is lost) are taken
// here, in program order, so a plan means the same on the simulator and on GPUs.

#include "tandem/backend/launch_request.hpp"
#include "tandem/backend/memory_manager.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/fault.hpp"
#include "tandem/core/result.hpp"

#include <cstdint>
#include <optional>
#include <random>
#include <string_view>
#include <vector>

namespace tandem {

/// The faults armed on one device (`Client::inject`), and the count of launches, allocations and
/// units of work each waits for. A device asks it, for every launch, allocation and unit of work,
/// in program order, whether a fault is due; probabilities draw from the plan's own generator,
/// seeded from the runtime's seed and the device's number (`detail::device_seed`), so one seed
/// faults the same launches on every backend.
class FaultPlan {
public:
    /// Kernel faults armed at once on one device, at most: every launch of a kernel walks the
    /// faults armed on it. A fault for the nth launch is retired once that launch has passed.
    static constexpr std::size_t max_kernel_faults = 256;

    /// A plan with nothing armed, drawing from a generator seeded with `seed`.
    explicit FaultPlan(std::uint64_t seed) : rng_(seed) {}

    /// Arms a kernel, allocation or delayed device-loss fault; `InvalidArgument` for a probability
    /// outside [0, 1] (NaN included), an allocation counted from 0, or a kernel fault past
    /// `max_kernel_faults` armed. A loss with no delay and a stream delay are the device's to
    /// apply at once.
    Status arm(const Fault& fault);

    /// Whether a fault hits this launch of `kernel`: its code and its number among the faults
    /// armed. Called for every launch enqueued, in program order (one that then runs nothing or
    /// is skipped counts too).
    std::optional<InjectedFault> kernel_fault_due(std::string_view kernel);
    /// Whether a kernel fault is armed that may still hit: without one, no launch needs
    /// `kernel_fault_due`.
    [[nodiscard]] bool kernel_faults_armed() const { return !kernel_faults_.empty(); }
    /// The injected failure of this allocation, if one is due; its figures are `memory`'s usage.
    /// A size the manager refuses as wrong is not counted.
    /// Reads the usage only when a failure is due, so that an allocation pays nothing for it.
    std::optional<Error> allocation_fault_due(std::uint64_t size_bytes,
                                              const MemoryManager& memory);
    /// Whether an allocation failure is armed: until one is, allocations need not ask.
    [[nodiscard]] bool allocation_fault_armed() const { return allocation_countdown_ != 0; }
    /// Counts one unit of work (what the settle pipeline records: a launch that runs something, a
    /// copy, a write, an asynchronous read, a replay, external work), called as each is enqueued,
    /// in program order (`SettlePipeline::enqueue`); true when an armed device loss is due now:
    /// `DeviceLossFault{n}` lets n units be enqueued and is due at the next. Event records and
    /// waits are not counted.
    bool loss_due();
    /// Whether a delayed device loss is armed: until one is, units of work need not be counted.
    [[nodiscard]] bool loss_armed() const { return loss_countdown_.has_value(); }
    /// Whether a stream already held back `held_back` steps may be held back `steps` more:
    /// `InvalidArgument` past `StreamDelay::max_steps` in all, since a sync waits out every step
    /// and an unbounded delay would hang it. Every backend asks before it applies a delay.
    static Status check_delay(std::uint64_t held_back, std::uint64_t steps);

private:
    struct KernelFaultState {
        KernelFault fault;
        std::uint32_t entry = 0;
        std::uint64_t launches = 0;
    };
    std::mt19937_64 rng_;
    /// Faults armed so far, of every kind: the last one's number, as reports give it.
    std::uint32_t armed_ = 0;
    std::vector<KernelFaultState> kernel_faults_;
    std::uint64_t allocation_countdown_ = 0;
    std::uint32_t allocation_entry_ = 0;
    std::optional<std::uint64_t> loss_countdown_;
};

}  // namespace tandem
