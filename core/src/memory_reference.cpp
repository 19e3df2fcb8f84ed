#include "tandem/core/memory_reference.hpp"

#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

namespace tandem {

MemoryId MemoryId::next() {
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
    return MemoryId{next++};
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

}  // namespace detail

// ---------------------------------------------------------------- ManagedMemoryHandle

ManagedMemoryHandle ManagedMemoryHandle::create(const AllocationInfo& allocation,
                                                ReleaseSink* sink) {
    auto* block = new detail::MemoryControl;
    block->start(allocation, sink);
    return ManagedMemoryHandle(block);
}

ManagedMemoryHandle ManagedMemoryHandle::adopt(detail::MemoryControl& started) {
    return ManagedMemoryHandle(&started);
}

ManagedMemoryHandle::ManagedMemoryHandle(const ManagedMemoryHandle& other)
    : control_(other.control_) {
    assert(control_ && "copy of a moved-from memory handle");
    control_->acquire(detail::MemoryControl::handle_unit);
}

ManagedMemoryHandle::ManagedMemoryHandle(ManagedMemoryHandle&& other) noexcept
    : control_(std::exchange(other.control_, nullptr)) {}

ManagedMemoryHandle& ManagedMemoryHandle::operator=(const ManagedMemoryHandle& other) {
    if (this != &other) {
        ManagedMemoryHandle copy(other);
        *this = std::move(copy);
    }
    return *this;
}

ManagedMemoryHandle& ManagedMemoryHandle::operator=(ManagedMemoryHandle&& other) noexcept {
    if (this != &other) {
        reset();
        control_ = std::exchange(other.control_, nullptr);
    }
    return *this;
}

ManagedMemoryHandle::~ManagedMemoryHandle() { reset(); }

void ManagedMemoryHandle::reset() {
    if (control_ != nullptr) {
        std::exchange(control_, nullptr)->release(detail::MemoryControl::handle_unit);
    }
}

MemoryId ManagedMemoryHandle::id() const {
    assert(control_ && "use of a moved-from memory handle");
    return control_->allocation.id;
}

const AllocationInfo& ManagedMemoryHandle::allocation() const {
    assert(control_ && "use of a moved-from memory handle");
    return control_->allocation;
}

bool ManagedMemoryHandle::can_mut() const {
    assert(control_ && "use of a moved-from memory handle");
    return detail::MemoryControl::handles_in(control_->counts.load(std::memory_order_acquire)) == 1;
}

ManagedMemoryBinding ManagedMemoryHandle::binding() const {
    assert(control_ && "use of a moved-from memory handle");
    control_->acquire(detail::MemoryControl::holder_unit);
    return ManagedMemoryBinding(control_);
}

WeakMemoryBinding ManagedMemoryHandle::downgrade() const {
    assert(control_ && "use of a moved-from memory handle");
    control_->acquire_weak();
    return WeakMemoryBinding(control_);
}

// ---------------------------------------------------------------- ManagedMemoryBinding

ManagedMemoryBinding::ManagedMemoryBinding(const ManagedMemoryBinding& other)
    : control_(other.control_) {
    assert(control_ && "copy of a moved-from memory binding");
    control_->acquire(detail::MemoryControl::holder_unit);
}

ManagedMemoryBinding::ManagedMemoryBinding(ManagedMemoryBinding&& other) noexcept
    : control_(std::exchange(other.control_, nullptr)) {}

ManagedMemoryBinding& ManagedMemoryBinding::operator=(const ManagedMemoryBinding& other) {
    if (this != &other) {
        ManagedMemoryBinding copy(other);
        *this = std::move(copy);
    }
    return *this;
}

ManagedMemoryBinding& ManagedMemoryBinding::operator=(ManagedMemoryBinding&& other) noexcept {
    if (this != &other) {
        reset();
        control_ = std::exchange(other.control_, nullptr);
    }
    return *this;
}

ManagedMemoryBinding::~ManagedMemoryBinding() { reset(); }

void ManagedMemoryBinding::reset() {
    if (control_ != nullptr) {
        std::exchange(control_, nullptr)->release(detail::MemoryControl::holder_unit);
    }
}

MemoryId ManagedMemoryBinding::id() const {
    assert(control_ && "use of a moved-from memory binding");
    return control_->allocation.id;
}

const AllocationInfo& ManagedMemoryBinding::allocation() const {
    assert(control_ && "use of a moved-from memory binding");
    return control_->allocation;
}

WeakMemoryBinding ManagedMemoryBinding::downgrade() const {
    assert(control_ && "use of a moved-from memory binding");
    control_->acquire_weak();
    return WeakMemoryBinding(control_);
}

// ---------------------------------------------------------------- WeakMemoryBinding

WeakMemoryBinding::WeakMemoryBinding(const WeakMemoryBinding& other) : control_(other.control_) {
    if (control_ != nullptr) {
        control_->acquire_weak();
    }
}

WeakMemoryBinding::WeakMemoryBinding(WeakMemoryBinding&& other) noexcept
    : control_(std::exchange(other.control_, nullptr)) {}

WeakMemoryBinding& WeakMemoryBinding::operator=(const WeakMemoryBinding& other) {
    if (this != &other) {
        WeakMemoryBinding copy(other);
        *this = std::move(copy);
    }
    return *this;
}

WeakMemoryBinding& WeakMemoryBinding::operator=(WeakMemoryBinding&& other) noexcept {
    if (this != &other) {
        reset();
        control_ = std::exchange(other.control_, nullptr);
    }
    return *this;
}

WeakMemoryBinding::~WeakMemoryBinding() { reset(); }

void WeakMemoryBinding::reset() {
    if (control_ != nullptr) {
        std::exchange(control_, nullptr)->drop_weak();
    }
}

MemoryId WeakMemoryBinding::id() const {
    assert(control_ && "use of a moved-from weak binding");
    return control_->allocation.id;
}

std::optional<ManagedMemoryBinding> WeakMemoryBinding::upgrade() const {
    assert(control_ && "use of a moved-from weak binding");
    // Take a holder only while the count is above zero: once the allocation was released its count
    // stays at zero for as long as this block names it, so an upgrade can never revive it or reach
    // a later occupant. (The block is reused only when no weak reference is left.)
    using detail::MemoryControl;
    std::uint64_t counts = control_->counts.load(std::memory_order_acquire);
    while (MemoryControl::holders_in(counts) > 0) {
        if (MemoryControl::holders_in(counts) == std::numeric_limits<std::uint32_t>::max()) {
            MemoryControl::too_many_references();
        }
        if (control_->counts.compare_exchange_weak(counts, counts + MemoryControl::holder_unit,
                                                   std::memory_order_acq_rel)) {
            return ManagedMemoryBinding(control_);
        }
    }
    return std::nullopt;
}

}  // namespace tandem
