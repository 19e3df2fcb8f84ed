#include "tandem/core/memory_reference.hpp"

#include <cassert>
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

// ---------------------------------------------------------------- ManagedMemoryHandle

ManagedMemoryHandle ManagedMemoryHandle::create(const AllocationInfo& allocation,
                                                std::shared_ptr<ReleaseSink> sink) {
    return ManagedMemoryHandle(std::make_shared<detail::MemoryControl>(allocation, std::move(sink)),
                               FirstReference{});
}

ManagedMemoryHandle::ManagedMemoryHandle(std::shared_ptr<detail::MemoryControl> control,
                                         FirstReference /*unshared*/)
    : control_(std::move(control)) {
    // No other thread can see a block that was just made: its counts are set, not incremented.
    control_->counts.store(detail::MemoryControl::handle_unit, std::memory_order_relaxed);
}

ManagedMemoryHandle::ManagedMemoryHandle(std::shared_ptr<detail::MemoryControl> control)
    : control_(std::move(control)) {
    control_->acquire(detail::MemoryControl::handle_unit);
}

ManagedMemoryHandle::ManagedMemoryHandle(const ManagedMemoryHandle& other)
    : ManagedMemoryHandle(other.control_) {}

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
    if (control_) {
        detail::MemoryControl::release(control_, detail::MemoryControl::handle_unit);
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
    return ManagedMemoryBinding(control_);
}

WeakMemoryBinding ManagedMemoryHandle::downgrade() const {
    assert(control_ && "use of a moved-from memory handle");
    return WeakMemoryBinding(control_);
}

// ---------------------------------------------------------------- ManagedMemoryBinding

ManagedMemoryBinding::ManagedMemoryBinding(std::shared_ptr<detail::MemoryControl> control)
    : control_(std::move(control)) {
    control_->acquire(detail::MemoryControl::holder_unit);
}

ManagedMemoryBinding::ManagedMemoryBinding(std::shared_ptr<detail::MemoryControl> control,
                                           Counted /*taken*/)
    : control_(std::move(control)) {}

ManagedMemoryBinding::ManagedMemoryBinding(const ManagedMemoryBinding& other)
    : ManagedMemoryBinding(other.control_) {}

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
    if (control_) {
        detail::MemoryControl::release(control_, detail::MemoryControl::holder_unit);
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
    return WeakMemoryBinding(control_);
}

// ---------------------------------------------------------------- WeakMemoryBinding

WeakMemoryBinding::WeakMemoryBinding(std::shared_ptr<detail::MemoryControl> control)
    : control_(std::move(control)) {}

MemoryId WeakMemoryBinding::id() const { return control_->allocation.id; }

std::optional<ManagedMemoryBinding> WeakMemoryBinding::upgrade() const {
    // Take a holder only while the count is above zero: once the allocation was released its count
    // stays at zero forever, so an upgrade can never revive it or reach a later occupant.
    using detail::MemoryControl;
    std::uint64_t counts = control_->counts.load(std::memory_order_acquire);
    while (MemoryControl::holders_in(counts) > 0) {
        if (control_->counts.compare_exchange_weak(counts, counts + MemoryControl::holder_unit,
                                                   std::memory_order_acq_rel)) {
            // The holder taken here is the binding's own.
            return ManagedMemoryBinding(control_, ManagedMemoryBinding::Counted{});
        }
    }
    return std::nullopt;
}

}  // namespace tandem
