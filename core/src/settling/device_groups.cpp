#include "tandem/backend/device_groups.hpp"

#include <algorithm>
#include <utility>

namespace tandem {

DeviceGroups::DeviceGroups(Placement placement, MakeGroup make)
    : placement_(placement), make_(std::move(make)) {
    if (placement_ == Placement::Together) {
        (void)make_group();
    }
}

DeviceGroup& DeviceGroups::make_group() {
    groups_.push_back(make_());
    groups_.back()->order_ = groups_.size() - 1;
    return *groups_.back();
}

void DeviceGroups::add_device() {
    std::lock_guard serial(join_mutex_);
    const auto device = static_cast<std::uint32_t>(devices_.size());
    DeviceGroup& group = placement_ == Placement::Together ? shared() : make_group();
    group.members_.push_back(device);
    devices_.emplace_back(&group);
}

std::size_t DeviceGroups::count() const {
    std::lock_guard serial(join_mutex_);
    return static_cast<std::size_t>(std::count_if(
        groups_.begin(), groups_.end(),
        [](const std::unique_ptr<DeviceGroup>& group) { return !group->members_.empty(); }));
}

void DeviceGroups::join(std::uint32_t first, std::uint32_t second) {
    std::lock_guard serial(join_mutex_);
    DeviceGroup* one = &of(first);
    DeviceGroup* other = &of(second);
    if (one == other) {
        return;
    }
    // The larger group stays, so the fewest devices move; both are locked in the lock order.
    if (one->members_.size() < other->members_.size()) {
        std::swap(one, other);
    }
    DeviceGroup& low = one->order_ < other->order_ ? *one : *other;
    DeviceGroup& high = &low == one ? *other : *one;
    for (;;) {
        low.mutex.lock();
        high.mutex.lock();
        DeviceGroup& busy = low.released_.load(std::memory_order_relaxed) != 0 ? low : high;
        const int seen = busy.released_.load(std::memory_order_relaxed);
        if (seen == 0) {
            break;  // Neither group has a holder away.
        }
        // A holder waits for the GPU with its lock let go, and comes back to its group's state:
        // sleep until the last such wait of the group ends (it wakes this one), then try again.
        // A count that changes between the unlock and the wait returns the wait at once.
        high.mutex.unlock();
        low.mutex.unlock();
        busy.released_.wait(seen, std::memory_order_acquire);
    }
    merge(*one, *other);
    high.mutex.unlock();
    low.mutex.unlock();
}

void DeviceGroups::merge(DeviceGroup& stayer, DeviceGroup& leaver) {
    const MovedSequences moved = stayer.pipeline.absorb(leaver.pipeline);
    stayer.absorb(leaver, moved);
    for (std::uint32_t device : leaver.members_) {
        stayer.members_.push_back(device);
        devices_[device].store(&stayer, std::memory_order_release);
    }
    leaver.members_.clear();
}

}  // namespace tandem
