#pragma once

// The three references to an allocation.
//
// Every allocation has one control block: its never-reused `MemoryId`, a count of strong handles
// and a count of holders (handles plus bindings). The block belongs to one allocation and is never
// recycled, so a weak reference can only ever upgrade to the allocation it was made from: once the
// holder count reaches zero it stays there, and the pool that owns the bytes learns of it through
// its release sink. Counting costs two atomic operations per copy; references are copied when work
// is enqueued, not per byte.

#include "tandem/core/ids.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>

namespace tandem {

/// Told when the last handle or binding of an allocation is gone, so the bytes may be swept.
class ReleaseSink {
public:
    virtual ~ReleaseSink() = default;
    /// Called once per allocation, from whichever thread dropped the last reference.
    virtual void released(MemoryId memory) noexcept = 0;
};

namespace detail {

/// The shared state of one allocation's references. Internal: use the reference types.
struct MemoryControl {
    MemoryControl(MemoryId memory_id, std::shared_ptr<ReleaseSink> release_sink)
        : id(memory_id), sink(std::move(release_sink)) {}

    const MemoryId id;
    const std::shared_ptr<ReleaseSink> sink;
    std::atomic<std::uint32_t> handles{0};
    std::atomic<std::uint32_t> holders{0};

    void acquire_holder() { holders.fetch_add(1, std::memory_order_relaxed); }
    void release_holder() {
        if (holders.fetch_sub(1, std::memory_order_acq_rel) == 1 && sink) {
            sink->released(id);
        }
    }
};

}  // namespace detail

class ManagedMemoryBinding;
class WeakMemoryBinding;

/// A strong reference, owned by user-facing handles. `can_mut()` is true iff exactly one strong
/// reference exists: the memory may then be written in place without affecting other work.
class ManagedMemoryHandle {
public:
    /// The first handle of a new allocation. Pools call this; users get handles from a client.
    static ManagedMemoryHandle create(MemoryId id, std::shared_ptr<ReleaseSink> sink);

    ManagedMemoryHandle(const ManagedMemoryHandle& other);
    ManagedMemoryHandle(ManagedMemoryHandle&& other) noexcept;
    ManagedMemoryHandle& operator=(const ManagedMemoryHandle& other);
    ManagedMemoryHandle& operator=(ManagedMemoryHandle&& other) noexcept;
    ~ManagedMemoryHandle();

    [[nodiscard]] MemoryId id() const;
    [[nodiscard]] bool can_mut() const;
    /// A binding of the same allocation: keeps it reserved, does not count for `can_mut()`.
    [[nodiscard]] ManagedMemoryBinding binding() const;
    [[nodiscard]] WeakMemoryBinding downgrade() const;

private:
    struct FirstReference {};
    explicit ManagedMemoryHandle(std::shared_ptr<detail::MemoryControl> control);
    ManagedMemoryHandle(std::shared_ptr<detail::MemoryControl> control, FirstReference unshared);
    void reset();
    std::shared_ptr<detail::MemoryControl> control_;
};

/// Keeps an allocation reserved (its pool will not free, reuse or move it) without counting for
/// `can_mut()`. Work that is enqueued holds bindings.
class ManagedMemoryBinding {
public:
    ManagedMemoryBinding(const ManagedMemoryBinding& other);
    ManagedMemoryBinding(ManagedMemoryBinding&& other) noexcept;
    ManagedMemoryBinding& operator=(const ManagedMemoryBinding& other);
    ManagedMemoryBinding& operator=(ManagedMemoryBinding&& other) noexcept;
    ~ManagedMemoryBinding();

    [[nodiscard]] MemoryId id() const;
    [[nodiscard]] WeakMemoryBinding downgrade() const;

private:
    friend class ManagedMemoryHandle;
    friend class WeakMemoryBinding;
    explicit ManagedMemoryBinding(std::shared_ptr<detail::MemoryControl> control);
    void reset();
    std::shared_ptr<detail::MemoryControl> control_;
};

/// Names an allocation without keeping it reserved. `upgrade()` succeeds only while some handle or
/// binding still holds that allocation; it never resolves to a later occupant of its bytes.
class WeakMemoryBinding {
public:
    [[nodiscard]] MemoryId id() const;
    /// A binding, while the allocation is still held; empty once it was released.
    [[nodiscard]] std::optional<ManagedMemoryBinding> upgrade() const;

private:
    friend class ManagedMemoryHandle;
    friend class ManagedMemoryBinding;
    explicit WeakMemoryBinding(std::shared_ptr<detail::MemoryControl> control);
    std::shared_ptr<detail::MemoryControl> control_;
};

}  // namespace tandem
