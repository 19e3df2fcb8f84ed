#include "tandem/core/kernel_resource.hpp"

#include <string>

namespace tandem {

std::string_view to_string(AccessMode mode) {
    switch (mode) {
        case AccessMode::Read:
            return "read";
        case AccessMode::Write:
            return "write";
        case AccessMode::ReadWrite:
            return "read-write";
    }
    return "unknown";
}

KernelResource::KernelResource(Binding binding, AccessMode access)
    : binding_(std::move(binding)), access_(access) {}

KernelResource::KernelResource(const Handle& handle, AccessMode access)
    : binding_(std::in_place_type<BufferBinding>, handle), access_(access) {}

KernelResource KernelResource::buffer(BufferBinding binding, AccessMode access) {
    return KernelResource(std::move(binding), access);
}

KernelResource KernelResource::tensor_map(TensorMapBinding map, AccessMode access) {
    return KernelResource(std::move(map), access);
}

KernelResource KernelResource::peer(PeerBinding peer, AccessMode access) {
    return KernelResource(std::move(peer), access);
}

const BufferBinding* KernelResource::local_binding() const {
    if (const auto* buffer = std::get_if<BufferBinding>(&binding_)) {
        return buffer;
    }
    if (const auto* map = std::get_if<TensorMapBinding>(&binding_)) {
        return &map->binding();
    }
    return nullptr;
}

const PeerBinding* KernelResource::peer_binding() const {
    return std::get_if<PeerBinding>(&binding_);
}

const BufferBinding& KernelResource::buffer_binding() const {
    if (const BufferBinding* local = local_binding()) {
        return *local;
    }
    return std::get<PeerBinding>(binding_).binding();
}

Status detail::check_launch_limits_counted(std::span<const KernelResource> resources) {
    if (resources.size() > max_launch_resources) {
        return Error::invalid_argument(
            "a launch binds at most " + std::to_string(max_launch_resources) +
            " resources; this one binds " + std::to_string(resources.size()));
    }
    std::size_t maps = 0;
    for (const KernelResource& resource : resources) {
        maps += std::holds_alternative<TensorMapBinding>(resource.binding()) ? 1 : 0;
    }
    if (maps > max_launch_tensor_maps) {
        return Error::invalid_argument("a launch binds at most " +
                                       std::to_string(max_launch_tensor_maps) +
                                       " tensor maps; this one binds " + std::to_string(maps));
    }
    return {};
}

}  // namespace tandem
