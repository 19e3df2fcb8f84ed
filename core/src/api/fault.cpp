#include "tandem/core/fault.hpp"

namespace tandem {

std::string describe(const Fault& fault) {
    struct Describe {
        std::string operator()(const KernelFault& kernel) const {
            std::string text = "kernel '" + kernel.kernel + "' fails with code " +
                               std::to_string(kernel.code);
            text += kernel.nth == 0 ? " on every launch" : " on launch " + std::to_string(kernel.nth);
            if (kernel.probability < 1.0) {
                text += " with probability " + std::to_string(kernel.probability);
            }
            return text;
        }
        std::string operator()(const AllocationFault& allocation) const {
            return "allocation " + std::to_string(allocation.nth) + " from now fails";
        }
        std::string operator()(const DeviceLossFault& loss) const {
            return "the device is lost after " + std::to_string(loss.after_operations) +
                   " more operations";
        }
        std::string operator()(const StreamDelay& delay) const {
            return to_string(delay.stream) + " is held back " + std::to_string(delay.steps) +
                   " steps";
        }
    };
    return std::visit(Describe{}, fault);
}

}  // namespace tandem
