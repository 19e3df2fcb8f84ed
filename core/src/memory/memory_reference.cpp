#include "tandem/core/memory_reference.hpp"

#include <atomic>
#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

namespace tandem {

MemoryId MemoryId::next(std::uint32_t rank) {
    // Starts at 1 so that a default-constructed id (0) never names an allocation. Each thread takes
    // ids in batches, so an allocation pays no atomic operation for its id; ids stay unique, and
    // increase within a thread, but not across threads.
    static std::atomic<std::uint64_t> counter{1};
    constexpr std::uint64_t batch = 1024;
    thread_local std::uint64_t next = 0;
    thread_local std::uint64_t end = 0;
    if (next == end) {
        next = counter.fetch_add(batch, std::memory_order_relaxed);
        end = next + batch;
    }
    const std::uint64_t tag =
        rank == ServiceId::no_rank ? 0 : (std::uint64_t{rank} + 1) << rank_shift;
    return MemoryId{tag | next++};
}

namespace detail {

void MemoryControl::too_many_references() {
    std::fputs("tandem: more than 2^32 - 1 references to one allocation\n", stderr);
    std::abort();
}

void MemoryControl::acquire(std::uint64_t unit) {
    // Handles never outnumber holders, so a holder count about to wrap is the only overflow.
    if (holders_in(counts.fetch_add(unit, std::memory_order_relaxed)) ==
        std::numeric_limits<std::uint32_t>::max()) {
        too_many_references();
    }
}

void MemoryControl::acquire_weak() {
    if (weak.fetch_add(1, std::memory_order_relaxed) == std::numeric_limits<std::uint32_t>::max()) {
        too_many_references();
    }
}

template <typename Count>
CountedReference<Count>::~CountedReference() {
    reset();
}

template class CountedReference<HandleCount>;
template class CountedReference<HolderCount>;
template class CountedReference<WeakCount>;

}  // namespace detail

namespace {

// A reference that was moved from names no allocation: its id is 0, its allocation has no bytes,
// and a reference drawn from it is as empty. Reading one is a programming error, but it reads as
// nothing rather than following a null block.

template <typename Count>
MemoryId id_of(const detail::CountedReference<Count>& control) {
    return control.empty() ? MemoryId{} : control->allocation.id;
}

template <typename Count>
const AllocationInfo& allocation_of(const detail::CountedReference<Count>& control) {
    static const AllocationInfo none{};
    return control.empty() ? none : control->allocation;
}

}  // namespace

// ---------------------------------------------------------------- ManagedMemoryHandle

ManagedMemoryHandle ManagedMemoryHandle::create(RuntimeKey, const AllocationInfo& allocation,
                                                ReleaseSink* sink) {
    auto* block = new detail::MemoryControl;
    block->start(allocation, sink);
    return ManagedMemoryHandle(block);
}

ManagedMemoryHandle ManagedMemoryHandle::adopt(RuntimeKey, detail::MemoryControl& started) {
    return ManagedMemoryHandle(&started);
}

MemoryId ManagedMemoryHandle::id() const { return id_of(control_); }

const AllocationInfo& ManagedMemoryHandle::allocation() const { return allocation_of(control_); }

bool ManagedMemoryHandle::can_mut() const {
    return !control_.empty() && detail::MemoryControl::handles_in(control_->counts.load(
                                    std::memory_order_acquire)) == 1;
}

ManagedMemoryBinding ManagedMemoryHandle::binding() const {
    if (control_.empty()) [[unlikely]] {
        return ManagedMemoryBinding(nullptr);
    }
    detail::HolderCount::take(*control_);
    return ManagedMemoryBinding(&*control_);
}

WeakMemoryBinding ManagedMemoryHandle::downgrade() const {
    if (control_.empty()) [[unlikely]] {
        return WeakMemoryBinding(nullptr);
    }
    detail::WeakCount::take(*control_);
    return WeakMemoryBinding(&*control_);
}

// ---------------------------------------------------------------- ManagedMemoryBinding

MemoryId ManagedMemoryBinding::id() const { return id_of(control_); }

const AllocationInfo& ManagedMemoryBinding::allocation() const { return allocation_of(control_); }

WeakMemoryBinding ManagedMemoryBinding::downgrade() const {
    if (control_.empty()) [[unlikely]] {
        return WeakMemoryBinding(nullptr);
    }
    detail::WeakCount::take(*control_);
    return WeakMemoryBinding(&*control_);
}

// ---------------------------------------------------------------- WeakMemoryBinding

MemoryId WeakMemoryBinding::id() const { return id_of(control_); }

std::optional<ManagedMemoryBinding> WeakMemoryBinding::upgrade() const {
    // Take a holder only while the count is above zero: once the allocation was released its count
    // stays at zero for as long as this block names it, so an upgrade can never revive it or reach
    // a later occupant. (The block is reused only when no weak reference is left.)
    using detail::MemoryControl;
    if (control_.empty()) [[unlikely]] {
        return std::nullopt;
    }
    MemoryControl& block = *control_;
    std::uint64_t counts = block.counts.load(std::memory_order_acquire);
    while (MemoryControl::holders_in(counts) > 0) {
        if (MemoryControl::holders_in(counts) == std::numeric_limits<std::uint32_t>::max()) {
            MemoryControl::too_many_references();
        }
        if (block.counts.compare_exchange_weak(counts, counts + MemoryControl::holder_unit,
                                               std::memory_order_acq_rel)) {
            return ManagedMemoryBinding(&block);
        }
    }
    return std::nullopt;
}

}  // namespace tandem
