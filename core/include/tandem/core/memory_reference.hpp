#pragma once

// The three references to an allocation.
//
// Every allocation has one control block: where the allocation is (its never-reused `MemoryId`,
// address, size and stream, fixed for its life), a count of strong handles, a count of holders
// (handles plus bindings) and a count of weak references. The block belongs to one allocation
// while any reference to it exists, so a weak reference can only ever upgrade to the allocation
// it was made from: once the holder count reaches zero it stays there, and the pool that owns the
// bytes learns of it through its release sink.
//
// Because the block carries the address, a device resolves a binding to its bytes without asking
// the memory manager: a binding it holds is live by definition. The counts are intrusive (no
// `shared_ptr` beside them), and handle and holder counts share one atomic word, so copying or
// dropping a handle or binding costs one atomic operation. Once no reference is left, the memory
// manager reuses the block for a later allocation instead of freeing it.

#include "tandem/core/ids.hpp"
#include "tandem/core/runtime_key.hpp"

#include <atomic>
#include <cassert>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

namespace tandem {

/// A live allocation: its id, where its bytes are, and the stream it was made on.
struct AllocationInfo {
    /// The allocation's id, never reused.
    MemoryId id{};
    /// The device address of its first byte.
    std::uint64_t address = 0;
    /// Its length as requested.
    std::uint64_t size_bytes = 0;
    /// The stream it was allocated on, whose work must pass before its bytes are reused.
    StreamId stream{};
};

namespace detail {
struct MemoryControl;
}  // namespace detail

/// Told when the last handle or binding of an allocation is gone, so the bytes may be swept.
class ReleaseSink {
public:
    virtual ~ReleaseSink() = default;
    /// Called once per allocation, from whichever thread dropped the last holder, with the
    /// allocation's control block (`control.allocation` says what was released). The sink takes
    /// over the holders' weak reference: it may queue the block through `control.queued_next`,
    /// and must end with `control.drop_weak()` (or reuse the block, when that reference is the
    /// only one left).
    virtual void released(detail::MemoryControl& control) noexcept = 0;
};

namespace detail {

/// The shared state of one allocation's references. Internal: use the reference types.
///
/// `counts` holds the strong handles in its high half and the holders in its low half, so that a
/// handle, which is both, is counted by one atomic addition of `handle_unit`. `weak` counts weak
/// references plus one for all holders together while any is left; the block is deleted when it
/// reaches zero. Each reference is at least a pointer, and holders and weak references are capped
/// at 2^32 - 1 each: adding one more is refused with an abort rather than wrapped.
struct MemoryControl {
    static constexpr std::uint64_t holder_unit = 1;
    static constexpr std::uint64_t handle_unit = (std::uint64_t{1} << 32) | holder_unit;

    AllocationInfo allocation;
    /// Told when the last holder goes; may be null (references made outside a memory manager).
    ReleaseSink* sink = nullptr;
    std::atomic<std::uint64_t> counts{0};
    std::atomic<std::uint32_t> weak{0};
    /// Whether the program labelled the allocation (labels.hpp): its last holder then forgets the
    /// label. A flag in the block, so that releasing an unlabelled allocation looks at nothing
    /// else; it fits in the padding after `weak`.
    std::atomic<bool> labelled{false};
    /// The release sink's: links a released block into its queue.
    MemoryControl* queued_next = nullptr;

    /// A block with one handle (and the holders' weak reference) for `allocation`.
    void start(const AllocationInfo& allocation_info, ReleaseSink* release_sink) {
        allocation = allocation_info;
        start(release_sink);
    }
    /// The same for the `allocation` already filled in.
    void start(ReleaseSink* release_sink) {
        sink = release_sink;
        queued_next = nullptr;
        labelled.store(false, std::memory_order_relaxed);
        // No other thread can see a block that is being started: the counts are set, not added.
        counts.store(handle_unit, std::memory_order_relaxed);
        weak.store(1, std::memory_order_relaxed);
    }

    [[nodiscard]] static std::uint32_t holders_in(std::uint64_t word) {
        return static_cast<std::uint32_t>(word);
    }
    [[nodiscard]] static std::uint32_t handles_in(std::uint64_t word) {
        return static_cast<std::uint32_t>(word >> 32);
    }
    void acquire(std::uint64_t unit);
    /// Drops a reference counted as `unit`; the last holder hands the block to the sink.
    void release(std::uint64_t unit) {
        if (holders_in(counts.fetch_sub(unit, std::memory_order_acq_rel)) == 1) {
            // Labelled before its first handle was handed out: the count's acquire above orders
            // the flag's store before this load.
            if (labelled.load(std::memory_order_relaxed)) [[unlikely]] {
                forget_label();
            }
            if (sink != nullptr) {
                sink->released(*this);
            } else {
                drop_weak();
            }
        }
    }
    void acquire_weak();
    /// Removes the allocation's label from the process's table, as its last holder goes.
    void forget_label() noexcept;
    [[noreturn]] static void too_many_references();
    /// Drops one weak reference; deletes the block with the last.
    void drop_weak() {
        if (weak.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            delete this;
        }
    }
};

/// The count a handle takes: one strong reference, which is also a holder.
struct HandleCount {
    static void take(MemoryControl& control) { control.acquire(MemoryControl::handle_unit); }
    static void drop(MemoryControl& control) { control.release(MemoryControl::handle_unit); }
};
/// The count a binding takes: a holder.
struct HolderCount {
    static void take(MemoryControl& control) { control.acquire(MemoryControl::holder_unit); }
    static void drop(MemoryControl& control) { control.release(MemoryControl::holder_unit); }
};
/// The count a weak binding takes.
struct WeakCount {
    static void take(MemoryControl& control) { control.acquire_weak(); }
    static void drop(MemoryControl& control) { control.drop_weak(); }
};

/// One reference to a control block, counted as `Count`: a copy takes a count, destruction or
/// assignment over it drops its own, a move leaves the source empty. Each reference type below is
/// one of these, so the copy, move and drop rules are written once for all three.
template <typename Count>
class CountedReference {
public:
    /// Adopts a count the caller took on `control`.
    explicit CountedReference(MemoryControl* control) noexcept : control_(control) {}
    CountedReference(const CountedReference& other) : control_(other.control_) {
        if (control_ != nullptr) {
            Count::take(*control_);
        }
    }
    CountedReference(CountedReference&& other) noexcept
        : control_(std::exchange(other.control_, nullptr)) {}
    CountedReference& operator=(const CountedReference& other) {
        if (this != &other) {
            CountedReference copy(other);
            *this = std::move(copy);
        }
        return *this;
    }
    CountedReference& operator=(CountedReference&& other) noexcept {
        if (this != &other) {
            reset();
            control_ = std::exchange(other.control_, nullptr);
        }
        return *this;
    }
    /// Out of line (`memory_reference.cpp`): inlined into `std::optional`'s destructor, GCC 12
    /// warns that the pointer of a disengaged optional may be read uninitialised.
    ~CountedReference();

    /// The block. A moved-from reference must not be used.
    [[nodiscard]] MemoryControl& operator*() const {
        assert(control_ != nullptr && "use of a moved-from memory reference");
        return *control_;
    }
    [[nodiscard]] MemoryControl* operator->() const { return &**this; }
    /// Whether it refers to no block: it was moved from.
    [[nodiscard]] bool empty() const { return control_ == nullptr; }

private:
    void reset() noexcept {
        if (control_ != nullptr) {
            Count::drop(*std::exchange(control_, nullptr));
        }
    }
    MemoryControl* control_;
};

extern template class CountedReference<HandleCount>;
extern template class CountedReference<HolderCount>;
extern template class CountedReference<WeakCount>;

}  // namespace detail

class ManagedMemoryBinding;
class WeakMemoryBinding;
namespace detail {
class LabelTable;
}  // namespace detail

/// A strong reference, owned by user-facing handles. `can_mut()` is true iff exactly one strong
/// reference exists: the memory may then be written in place without affecting other work.
/// One that was moved from names no allocation: id 0, no bytes, `can_mut()` false, and the
/// references drawn from it are as empty.
class ManagedMemoryHandle {
public:
    /// The first handle of a new allocation, in a new control block. `sink`, when not null, must
    /// outlive every holder of the allocation. Only a backend makes one (`RuntimeKey`); users get
    /// handles from a client.
    static ManagedMemoryHandle create(RuntimeKey, const AllocationInfo& allocation,
                                      ReleaseSink* sink);
    /// The first handle of a block the caller started (`MemoryControl::start`): how a memory
    /// manager hands out a block it reuses. Only a backend does (`RuntimeKey`).
    static ManagedMemoryHandle adopt(RuntimeKey, detail::MemoryControl& started);

    /// Whether it holds no allocation: it was moved from.
    [[nodiscard]] bool empty() const { return control_.empty(); }
    /// The allocation's id.
    [[nodiscard]] MemoryId id() const;
    /// The allocation: where its bytes are, for as long as this handle holds it.
    [[nodiscard]] const AllocationInfo& allocation() const;
    /// Whether this is the only strong reference: then the memory may be written in place.
    [[nodiscard]] bool can_mut() const;
    /// A binding of the same allocation: keeps it reserved, does not count for `can_mut()`.
    [[nodiscard]] ManagedMemoryBinding binding() const;
    /// A weak reference to the same allocation.
    [[nodiscard]] WeakMemoryBinding downgrade() const;

private:
    friend class detail::LabelTable;  // Marks the block of an allocation it labels.
    explicit ManagedMemoryHandle(detail::MemoryControl* counted) : control_(counted) {}
    detail::CountedReference<detail::HandleCount> control_;
};

/// Keeps an allocation reserved (its pool will not free, reuse or move it) without counting for
/// `can_mut()`. Work that is enqueued holds bindings.
class ManagedMemoryBinding {
public:
    /// Whether it holds no allocation: it was moved from, or drawn from a reference that was.
    [[nodiscard]] bool empty() const { return control_.empty(); }
    /// The allocation's id.
    [[nodiscard]] MemoryId id() const;
    /// Where the bytes are. Valid for as long as this binding exists: it keeps them reserved.
    [[nodiscard]] const AllocationInfo& allocation() const;
    /// A weak reference to the same allocation.
    [[nodiscard]] WeakMemoryBinding downgrade() const;

private:
    friend class ManagedMemoryHandle;
    friend class WeakMemoryBinding;
    /// Adopts a holder the caller took.
    explicit ManagedMemoryBinding(detail::MemoryControl* counted) : control_(counted) {}
    detail::CountedReference<detail::HolderCount> control_;
};

/// Names an allocation without keeping it reserved. `upgrade()` succeeds only while some handle or
/// binding still holds that allocation; it never resolves to a later occupant of its bytes.
class WeakMemoryBinding {
public:
    /// The id of the allocation named.
    [[nodiscard]] MemoryId id() const;
    /// A binding, while the allocation is still held; empty once it was released.
    [[nodiscard]] std::optional<ManagedMemoryBinding> upgrade() const;

private:
    friend class ManagedMemoryHandle;
    friend class ManagedMemoryBinding;
    /// Adopts a weak reference the caller took.
    explicit WeakMemoryBinding(detail::MemoryControl* counted) : control_(counted) {}
    detail::CountedReference<detail::WeakCount> control_;
};

}  // namespace tandem
