#include "tandem/backend/fault_plan.hpp"

#include <cstdint>
#include <string>
#include <utility>

namespace tandem {

Error InjectedFault::failure(std::string kernel, ServiceId device, StreamId stream) const {
    return Error::kernel_failed(KernelFailedDetails{.kernel = std::move(kernel),
                                                    .device = device,
                                                    .stream = stream,
                                                    .code = code,
                                                    .injected = true,
                                                    .fault_entry = entry});
}

Status FaultPlan::arm(const Fault& fault) {
    if (const auto* kernel = std::get_if<KernelFault>(&fault)) {
        // Written so that NaN is refused too: every comparison with it is false.
        if (!(kernel->probability >= 0.0 && kernel->probability <= 1.0)) {
            return Error::invalid_argument("a fault probability lies in [0, 1]");
        }
        if (kernel_faults_.size() >= max_kernel_faults) {
            return Error::invalid_argument(
                "at most " + std::to_string(max_kernel_faults) +
                " kernel faults are armed at once on a device; one for every launch stays until "
                "the device goes, one for the nth launch until that launch");
        }
        kernel_faults_.push_back(KernelFaultState{*kernel, armed_ + 1, 0});
    } else if (const auto* allocation = std::get_if<AllocationFault>(&fault)) {
        if (allocation->nth == 0) {
            return Error::invalid_argument("allocation faults count from 1");
        }
        allocation_countdown_ = allocation->nth;
        allocation_entry_ = armed_ + 1;
    } else if (const auto* loss = std::get_if<DeviceLossFault>(&fault)) {
        if (loss->after_operations > 0) {
            loss_countdown_ = loss->after_operations;
        }
    }
    if (armed_ != UINT32_MAX) {  // Numbers stop at the last one rather than wrap.
        ++armed_;
    }
    return {};
}

Status FaultPlan::check_delay(std::uint64_t held_back, std::uint64_t steps) {
    // Written so that it cannot wrap: `held_back` never exceeds the bound.
    if (steps > StreamDelay::max_steps || held_back > StreamDelay::max_steps - steps) {
        return Error::invalid_argument("a stream is held back at most " +
                                       std::to_string(StreamDelay::max_steps) +
                                       " steps in all; asked for " + std::to_string(steps) +
                                       " more after " + std::to_string(held_back));
    }
    return {};
}

std::optional<InjectedFault> FaultPlan::kernel_fault_due(std::string_view kernel) {
    // Every armed fault on the kernel counts this launch, even after an earlier one hit it: two
    // faults armed for the first and second launch hit the first and the second. The first due
    // fault, in the order they were armed, gives the code.
    std::optional<InjectedFault> due;
    for (KernelFaultState& state : kernel_faults_) {
        if (state.fault.kernel != kernel) {
            continue;
        }
        ++state.launches;
        if (state.fault.nth != 0 && state.launches != state.fault.nth) {
            continue;
        }
        const bool hits =
            state.fault.probability >= 1.0 ||
            std::uniform_real_distribution<double>(0.0, 1.0)(rng_) < state.fault.probability;
        if (hits && !due) {
            due = InjectedFault{state.fault.code, state.entry};
        }
    }
    // A fault for the nth launch can hit no later one.
    std::erase_if(kernel_faults_, [](const KernelFaultState& state) {
        return state.fault.nth != 0 && state.launches >= state.fault.nth;
    });
    return due;
}

std::optional<Error> FaultPlan::allocation_fault_due(std::uint64_t size_bytes,
                                                     const MemoryManager& memory) {
    // A request the manager refuses as wrong (InvalidArgument) is not an allocation: it neither
    // counts towards an armed failure nor uses one up.
    if (size_bytes == 0 || size_bytes > MemoryManager::max_allocation_bytes) {
        return std::nullopt;
    }
    if (allocation_countdown_ == 0 || --allocation_countdown_ != 0) {
        return std::nullopt;
    }
    const MemoryUsage usage = memory.usage();
    return Error::out_of_memory(
        "injected allocation failure of " + std::to_string(size_bytes) + " bytes (fault #" +
            std::to_string(allocation_entry_) + " injected into the device)",
        OutOfMemoryDetails{size_bytes, usage.free_bytes, usage.reserved_bytes,
                           usage.largest_free_block_bytes});
}

bool FaultPlan::loss_due() {
    if (!loss_countdown_) {
        return false;
    }
    if (*loss_countdown_ == 0) {
        loss_countdown_.reset();
        return true;
    }
    --*loss_countdown_;
    return false;
}

}  // namespace tandem
