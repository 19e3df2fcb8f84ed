#pragma once

// The faults armed on one device, and when each is due. Both backends keep one: the decisions
// (which launch fails, which allocation, after how many operations the device is lost) are taken
// here, in program order, so a plan means the same on the simulator and on GPUs.

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

/// The faults armed on one device (`Client::inject`), and the count of launches and allocations
/// each waits for. A device asks it, for every launch and allocation, whether a fault is due.
class FaultPlan {
public:
    /// Arms a kernel, allocation or delayed device-loss fault; `InvalidArgument` for a probability
    /// outside [0, 1] (NaN included) or an allocation counted from 0. A loss with no delay and a
    /// stream delay are the device's to apply at once.
    Status arm(const Fault& fault);

    /// Whether a fault hits this launch of `kernel`, and its code. Called for every launch
    /// enqueued, in program order; probabilities draw from `rng`.
    std::optional<std::uint32_t> kernel_fault_due(std::string_view kernel, std::mt19937_64& rng);
    /// Whether any kernel fault was ever armed: without one, no launch needs `kernel_fault_due`.
    [[nodiscard]] bool kernel_faults_armed() const { return !kernel_faults_.empty(); }
    /// The injected failure of this allocation, if one is due; its figures are `memory`'s usage.
    /// A size the manager refuses as wrong is not counted.
    /// Reads the usage only when a failure is due, so that an allocation pays nothing for it.
    std::optional<Error> allocation_fault_due(std::uint64_t size_bytes,
                                              const MemoryManager& memory);
    /// Whether an allocation failure is armed: until one is, allocations need not ask.
    [[nodiscard]] bool allocation_fault_armed() const { return allocation_countdown_ != 0; }
    /// Counts one operation; true when an armed device loss is due now.
    bool loss_due();
    /// Whether a stream already held back `held_back` steps may be held back `steps` more:
    /// `InvalidArgument` past `StreamDelay::max_steps` in all, since a sync waits out every step
    /// and an unbounded delay would hang it. Every backend asks before it applies a delay.
    static Status check_delay(std::uint64_t held_back, std::uint64_t steps);

private:
    struct KernelFaultState {
        KernelFault fault;
        std::uint64_t launches = 0;
    };
    std::vector<KernelFaultState> kernel_faults_;
    std::uint64_t allocation_countdown_ = 0;
    std::optional<std::uint64_t> loss_countdown_;
};

}  // namespace tandem
