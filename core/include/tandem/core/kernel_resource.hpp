#pragma once

// What a kernel launch binds, and how it may access each resource.

#include "tandem/core/copy_descriptor.hpp"
#include "tandem/core/handle.hpp"
#include "tandem/core/kernel.hpp"
#include "tandem/core/peer_binding.hpp"
#include "tandem/core/result.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <variant>

namespace tandem {

/// How a launch accesses a resource. Inputs (read, read-write) are checked for claims before the
/// launch runs; outputs (write, read-write) are claimed or released by its outcome.
enum class AccessMode : std::uint8_t { Read, Write, ReadWrite };

/// "read", "write" or "read-write".
std::string_view to_string(AccessMode mode);
/// Whether the launch reads the resource (read or read-write).
[[nodiscard]] constexpr bool reads(AccessMode mode) { return mode != AccessMode::Write; }
/// Whether the launch writes the resource (write or read-write).
[[nodiscard]] constexpr bool writes(AccessMode mode) { return mode != AccessMode::Read; }

/// One resource a launch binds, and how the kernel may access it: a buffer of the launching device,
/// a tensor map over one, or memory a peer shared.
class KernelResource {
public:
    /// What the resource binds.
    using Binding = std::variant<BufferBinding, TensorMapBinding, PeerBinding>;

    /// A resource with no declared access counts as read-write.
    KernelResource(Binding binding, AccessMode access = AccessMode::ReadWrite);
    /// `handle`'s buffer on its own device, bound in place.
    KernelResource(const Handle& handle, AccessMode access);

    /// A buffer of the launching device.
    static KernelResource buffer(BufferBinding binding, AccessMode access = AccessMode::ReadWrite);
    /// A tensor map over a buffer of the launching device.
    static KernelResource tensor_map(TensorMapBinding map,
                                     AccessMode access = AccessMode::ReadWrite);
    /// Memory a peer shared.
    static KernelResource peer(PeerBinding peer, AccessMode access = AccessMode::ReadWrite);

    /// What the resource binds.
    [[nodiscard]] const Binding& binding() const { return binding_; }
    /// How the kernel may access it.
    [[nodiscard]] AccessMode access() const { return access_; }
    /// The buffer of the launching device the resource binds, or null for another device's memory.
    [[nodiscard]] const BufferBinding* local_binding() const;
    /// The peer binding, or null for memory of the launching device.
    [[nodiscard]] const PeerBinding* peer_binding() const;
    /// The buffer the resource names, whichever device it lives on.
    [[nodiscard]] const BufferBinding& buffer_binding() const;

private:
    friend class HeldBindings;  // Moves a buffer's reference out as work takes it.
    Binding binding_;
    AccessMode access_;
};

/// A resource of a launch, as a user names it: a handle (of this device, or shared memory of a
/// peer), optionally viewed as a tensor map, and the access the kernel needs.
struct LaunchArgument {
    /// The memory to bind: a handle of this device, or memory a peer shared.
    Handle handle;
    /// How the kernel may access it; read-write when not said.
    AccessMode access = AccessMode::ReadWrite;
    /// A tiled view of the buffer, when the kernel addresses it through a tensor map (this device's
    /// memory only).
    std::optional<TensorMapDescriptor> tensor_map{};
};

namespace detail {
[[nodiscard]] Status check_launch_limits_counted(std::span<const KernelResource> resources);
}  // namespace detail

/// InvalidArgument, naming the limit, when `resources` are more than a launch binds
/// (`max_launch_resources`, `max_launch_tensor_maps`). Inline for the common launch, whose few
/// resources are within both limits without counting.
[[nodiscard]] inline Status check_launch_limits(std::span<const KernelResource> resources) {
    if (resources.size() <= max_launch_tensor_maps) {
        return {};
    }
    return detail::check_launch_limits_counted(resources);
}

/// Whether a GPU takes `config` for a grid that is not empty: a block of 1 to
/// `max_block_threads` threads within `max_block_dims`, a grid within `max_grid_dims`, and no
/// more than 2^64 - 1 threads in all. Inline: every launch asks.
[[nodiscard]] inline bool launchable(const LaunchConfig& config) {
    const Dim3& block = config.block;
    const Dim3& grid = config.grid;
    std::uint64_t threads = 0;
    return block.count() != 0 && block.count() <= max_block_threads &&
           block.x <= max_block_dims.x && block.y <= max_block_dims.y &&
           block.z <= max_block_dims.z && grid.x <= max_grid_dims.x && grid.y <= max_grid_dims.y &&
           grid.z <= max_grid_dims.z &&
           !__builtin_mul_overflow(grid.count(), block.count(), &threads);
}

/// Why a launch of `kernel` on `config`, which is not `launchable`, is refused before it runs
/// (C10): `LaunchRefused` naming the limit. The same on every backend.
[[nodiscard]] Error config_refusal(const std::string& kernel, const LaunchConfig& config);

}  // namespace tandem
