#pragma once

// What enqueued work keeps reserved until it settles: every allocation it binds, so that no pool
// frees, reuses or moves its bytes while the work may still touch them.

#include "tandem/core/kernel_resource.hpp"

#include <span>
#include <vector>

namespace tandem {

/// The bindings a unit of work holds until it settles. A buffer of the running device is kept as
/// its allocation's reference alone, eight bytes; a tensor map or a peer's shared memory as the
/// whole resource (a peer's binding keeps what sharing it set up). Work settles long after it
/// was enqueued, when its record is no longer in cache: the less it holds, the less settling it
/// touches.
class HeldBindings {
public:
    /// Holds what each of `resources` binds, moved out of it without taking a count: each
    /// resource is left bound to nothing, and must only be destroyed.
    void take(std::span<KernelResource> resources);
    /// Holds what `resource` binds.
    void add(const KernelResource& resource);
    /// Holds what each of `resources` binds; they stay bound.
    void add(std::span<const KernelResource> resources) {
        for (const KernelResource& resource : resources) {
            add(resource);
        }
    }
    /// Holds `binding`'s allocation.
    void add(const BufferBinding& binding) { memory_.push_back(binding.memory()); }
    /// Lets go of everything held, keeping the storage for the next work.
    void clear() noexcept {
        memory_.clear();
        resources_.clear();
    }
    /// Whether nothing is held.
    [[nodiscard]] bool empty() const { return memory_.empty() && resources_.empty(); }
    /// How many bindings are held.
    [[nodiscard]] std::size_t size() const { return memory_.size() + resources_.size(); }

private:
    std::vector<ManagedMemoryBinding> memory_;
    std::vector<KernelResource> resources_;
};

}  // namespace tandem
