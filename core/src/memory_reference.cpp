#include "tandem/core/memory_reference.hpp"

#include <cassert>
#include <utility>

namespace tandem {

MemoryId MemoryId::next() {
    // Starts at 1 so that a default-constructed id (0) never names an allocation.
    static std::atomic<std::uint64_t> counter{1};
    return MemoryId{counter.fetch_add(1, std::memory_order_relaxed)};
}

// ---------------------------------------------------------------- ManagedMemoryHandle

ManagedMemoryHandle ManagedMemoryHandle::create(MemoryId id, std::shared_ptr<ReleaseSink> sink) {
    return ManagedMemoryHandle(std::make_shared<detail::MemoryControl>(id, std::move(sink)),
                               FirstReference{});
}

ManagedMemoryHandle::ManagedMemoryHandle(std::shared_ptr<detail::MemoryControl> control,
                                         FirstReference /*unshared*/)
    : control_(std::move(control)) {
    // No other thread can see a block that was just made: its counts are set, not incremented,
    // which spares the allocation path two atomic operations.
    control_->handles.store(1, std::memory_order_relaxed);
    control_->holders.store(1, std::memory_order_relaxed);
}

ManagedMemoryHandle::ManagedMemoryHandle(std::shared_ptr<detail::MemoryControl> control)
    : control_(std::move(control)) {
    control_->handles.fetch_add(1, std::memory_order_relaxed);
    control_->acquire_holder();
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
        control_->handles.fetch_sub(1, std::memory_order_acq_rel);
        control_->release_holder();
        control_.reset();
    }
}

MemoryId ManagedMemoryHandle::id() const {
    assert(control_ && "use of a moved-from memory handle");
    return control_->id;
}

bool ManagedMemoryHandle::can_mut() const {
    assert(control_ && "use of a moved-from memory handle");
    return control_->handles.load(std::memory_order_acquire) == 1;
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
    control_->acquire_holder();
}

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
        control_->release_holder();
        control_.reset();
    }
}

MemoryId ManagedMemoryBinding::id() const {
    assert(control_ && "use of a moved-from memory binding");
    return control_->id;
}

WeakMemoryBinding ManagedMemoryBinding::downgrade() const {
    assert(control_ && "use of a moved-from memory binding");
    return WeakMemoryBinding(control_);
}

// ---------------------------------------------------------------- WeakMemoryBinding

WeakMemoryBinding::WeakMemoryBinding(std::shared_ptr<detail::MemoryControl> control)
    : control_(std::move(control)) {}

MemoryId WeakMemoryBinding::id() const { return control_->id; }

std::optional<ManagedMemoryBinding> WeakMemoryBinding::upgrade() const {
    // Take a holder only while the count is above zero: once the allocation was released its count
    // stays at zero forever, so an upgrade can never revive it or reach a later occupant.
    std::uint32_t holders = control_->holders.load(std::memory_order_acquire);
    while (holders > 0) {
        if (control_->holders.compare_exchange_weak(holders, holders + 1,
                                                    std::memory_order_acq_rel)) {
            ManagedMemoryBinding binding(control_);
            // The constructor took a holder of its own; give back the one taken here.
            control_->holders.fetch_sub(1, std::memory_order_acq_rel);
            return binding;
        }
    }
    return std::nullopt;
}

}  // namespace tandem
