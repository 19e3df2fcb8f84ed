#pragma once

// The three references to an allocation.
//
// Every allocation has one control block: where the allocation is (its never-reused `MemoryId`,
// address, size and stream, fixed for its life), a count of strong handles and a count of holders
// (handles plus bindings). The block belongs to one allocation and is never recycled, so a weak
// reference can only ever upgrade to the allocation it was made from: once the holder count reaches
// zero it stays there, and the pool that owns the bytes learns of it through its release sink.
//
// Because the block carries the address, a device resolves a binding to its bytes without asking the
// memory manager: a binding it holds is live by definition. Both counts share one atomic word, so a
// copy or a drop costs one atomic operation; references are copied when work is enqueued, not per
// byte.

#include "tandem/core/ids.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>

namespace tandem {

/// A live allocation: its id, where its bytes are, and the stream it was made on.
struct AllocationInfo {
    MemoryId id{};
    std::uint64_t address = 0;
    std::uint64_t size_bytes = 0;
    StreamId stream{};
};

namespace detail {
struct MemoryControl;
}  // namespace detail

/// Told when the last handle or binding of an allocation is gone, so the bytes may be swept.
class ReleaseSink {
public:
    virtual ~ReleaseSink() = default;
    /// Called once per allocation, from whichever thread dropped the last reference, with the
    /// allocation's control block (`control->allocation` says what was released). The sink may
    /// keep the block by moving from `control`, queueing it through the block's `queued_` fields
    /// without a heap call; whatever it leaves is dropped after it returns.
    virtual void released(std::shared_ptr<detail::MemoryControl>& control) noexcept = 0;
};

namespace detail {

/// The shared state of one allocation's references. Internal: use the reference types.
///
/// `counts` holds the strong handles in its high half and the holders in its low half, so that a
/// handle, which is both, is counted by one atomic addition of `handle_unit`. Neither half carries
/// into the other before the `shared_ptr` that every reference also holds would overflow its own
/// count, which is a signed 32-bit integer in the standard libraries tandem builds with.
struct MemoryControl {
    static constexpr std::uint64_t holder_unit = 1;
    static constexpr std::uint64_t handle_unit = (std::uint64_t{1} << 32) | holder_unit;

    MemoryControl(const AllocationInfo& allocation_info, std::shared_ptr<ReleaseSink> release_sink)
        : allocation(allocation_info), sink(std::move(release_sink)) {}

    const AllocationInfo allocation;
    const std::shared_ptr<ReleaseSink> sink;
    std::atomic<std::uint64_t> counts{0};
    /// The release sink's: a released block that waits in its queue owns itself through
    /// `queued_self` and links to the next through `queued_next`.
    std::shared_ptr<MemoryControl> queued_self;
    MemoryControl* queued_next = nullptr;

    [[nodiscard]] static std::uint32_t holders_in(std::uint64_t word) {
        return static_cast<std::uint32_t>(word);
    }
    [[nodiscard]] static std::uint32_t handles_in(std::uint64_t word) {
        return static_cast<std::uint32_t>(word >> 32);
    }
    void acquire(std::uint64_t unit) { counts.fetch_add(unit, std::memory_order_relaxed); }
    /// Drops the reference `control` (counted as `unit`), telling the sink when it was the last
    /// holder. Leaves `control` empty.
    static void release(std::shared_ptr<MemoryControl>& control, std::uint64_t unit) {
        MemoryControl& block = *control;
        if (holders_in(block.counts.fetch_sub(unit, std::memory_order_acq_rel)) == 1 &&
            block.sink) {
            block.sink->released(control);
        }
        control.reset();
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
    static ManagedMemoryHandle create(const AllocationInfo& allocation,
                                      std::shared_ptr<ReleaseSink> sink);

    ManagedMemoryHandle(const ManagedMemoryHandle& other);
    ManagedMemoryHandle(ManagedMemoryHandle&& other) noexcept;
    ManagedMemoryHandle& operator=(const ManagedMemoryHandle& other);
    ManagedMemoryHandle& operator=(ManagedMemoryHandle&& other) noexcept;
    ~ManagedMemoryHandle();

    [[nodiscard]] MemoryId id() const;
    [[nodiscard]] const AllocationInfo& allocation() const;
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
    /// Where the bytes are. Valid for as long as this binding exists: it keeps them reserved.
    [[nodiscard]] const AllocationInfo& allocation() const;
    [[nodiscard]] WeakMemoryBinding downgrade() const;

private:
    friend class ManagedMemoryHandle;
    friend class WeakMemoryBinding;
    /// Takes a holder for the new binding.
    explicit ManagedMemoryBinding(std::shared_ptr<detail::MemoryControl> control);
    /// Adopts a holder the caller already took.
    struct Counted {};
    ManagedMemoryBinding(std::shared_ptr<detail::MemoryControl> control, Counted /*taken*/);
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
