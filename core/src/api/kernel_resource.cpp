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

namespace {

std::string dims(const Dim3& dim) {
    return std::to_string(dim.x) + " x " + std::to_string(dim.y) + " x " + std::to_string(dim.z);
}

}  // namespace

Error config_refusal(const std::string& kernel, const LaunchConfig& config) {
    const std::uint64_t block = config.block.count();
    if (block == 0) {
        return Error::launch_refused(kernel, "a block of zero threads");
    }
    if (block > max_block_threads) {
        return Error::launch_refused(kernel, "a block of " + std::to_string(block) +
                                                 " threads is over the limit of " +
                                                 std::to_string(max_block_threads));
    }
    const Dim3& b = config.block;
    if (b.x > max_block_dims.x || b.y > max_block_dims.y || b.z > max_block_dims.z) {
        return Error::launch_refused(
            kernel, "a block of " + dims(b) + " is over the limit of " + dims(max_block_dims));
    }
    const Dim3& g = config.grid;
    if (g.x > max_grid_dims.x || g.y > max_grid_dims.y || g.z > max_grid_dims.z) {
        return Error::launch_refused(
            kernel, "a grid of " + dims(g) + " blocks is over the limit of " + dims(max_grid_dims));
    }
    return Error::launch_refused(kernel, "a grid of " + dims(g) + " blocks of " +
                                             std::to_string(block) +
                                             " threads is more than 2^64 - 1 threads");
}

}  // namespace tandem
