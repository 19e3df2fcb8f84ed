#include "tandem/backend/held_bindings.hpp"

namespace tandem {

void HeldBindings::take(std::span<KernelResource> resources) {
    for (KernelResource& resource : resources) {
        if (auto* buffer = std::get_if<BufferBinding>(&resource.binding_)) {
            memory_.push_back(std::move(buffer->memory_));
        } else {
            resources_.push_back(std::move(resource));
        }
    }
}

void HeldBindings::add(const KernelResource& resource) {
    if (const auto* buffer = std::get_if<BufferBinding>(&resource.binding())) {
        add(*buffer);
    } else {
        resources_.push_back(resource);
    }
}

}  // namespace tandem
