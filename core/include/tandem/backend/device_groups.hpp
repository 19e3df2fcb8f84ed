#pragma once

// Devices in groups, each group with one lock and one settle pipeline: the unit of locking.
//
// Work meets another device only through that device's memory (a peer binding, a peer copy) or
// its events, so devices that never touched each other never order work across one another and
// need no common lock or sequence. A backend that places its devices `Apart` starts each in a
// group of its own; the first call that involves two devices (a grant, a launch binding a peer's
// shared memory, a copy from it, a wait on a peer's event) joins their groups for good. The
// joining group's unsettled work moves behind the other's, in its order: the two touched no
// memory in common, so any interleaving settles to the same claims, and a join waits for no GPU
// (a persistent kernel still running on either side is no reason to block). Threads that drive
// devices which share nothing never meet on a lock.
//
// A caller locks its device's group with `GroupLock`, which checks, once it holds the lock, that
// the group is still the device's (a join may have moved the device meanwhile) and tries again if
// not. A join holds both groups' locks, so a device's group does not change while its lock is
// held. Groups are never destroyed before the `DeviceGroups`: a thread still waiting for a group a
// join emptied finds it no longer its device's and moves on.
//
// A backend whose devices all share one schedule (the simulator's deterministic scheduler) places
// them `Together`: one group from the start, and a join is a no-op.

#include "tandem/backend/detail/engine_mutex.hpp"
#include "tandem/backend/settle_pipeline.hpp"

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace tandem {

class DeviceDirectory;

/// What the devices of one group share: the lock every call on one of them holds, and the settle
/// pipeline of their work. A backend derives from it to keep more per group.
class DeviceGroup {
public:
    /// A group whose pipeline reaches the runtime's devices through `directory`.
    explicit DeviceGroup(DeviceDirectory& directory) : pipeline(directory) {}
    virtual ~DeviceGroup() = default;
    DeviceGroup(const DeviceGroup&) = delete;
    DeviceGroup& operator=(const DeviceGroup&) = delete;

    /// Held by every call on a device of the group.
    detail::EngineMutex mutex;
    /// The group's work, in enqueue order, from enqueue until settled.
    SettlePipeline pipeline;

    /// Takes over what `other`, whose devices join this group, keeps beside its pipeline, whose
    /// work already moved here (`moved` says where); both groups locked, no wait of either on.
    virtual void absorb(DeviceGroup& /*other*/, const MovedSequences& /*moved*/) {}

    /// The devices in the group; under its lock.
    [[nodiscard]] const std::vector<std::uint32_t>& members() const { return members_; }

    /// Lets go of the group's lock for its life, for a holder that holds it once and waits for
    /// the GPU meanwhile, and takes it again when it ends. No join moves the group's devices
    /// while such a wait is on: the holder goes on with the group's state when it comes back.
    class Released {
    public:
        /// Lets go of `group`'s lock, which the caller holds once.
        explicit Released(DeviceGroup& group) : group_(group) {
            group_.released_.fetch_add(1, std::memory_order_relaxed);
            group_.mutex.unlock();
        }
        /// Takes the lock again; the last such wait to end wakes a join waiting for it.
        ~Released() {
            group_.mutex.lock();
            if (group_.released_.fetch_sub(1, std::memory_order_release) == 1) {
                group_.released_.notify_all();
            }
        }
        Released(const Released&) = delete;
        Released& operator=(const Released&) = delete;

    private:
        DeviceGroup& group_;
    };

private:
    friend class DeviceGroups;
    /// The group's place in the lock order: groups are locked together in increasing order.
    std::size_t order_ = 0;
    /// The devices in the group.
    std::vector<std::uint32_t> members_;
    /// Holders in a wait with the lock let go (`Released`). Changed under the lock; a join that
    /// found it above zero waits, without the lock, for it to change (`DeviceGroups::join`).
    std::atomic<int> released_{0};
};

/// Which group each device of a runtime is in, and the joins that merge them.
class DeviceGroups {
public:
    /// Where devices start.
    enum class Placement : std::uint8_t {
        /// Each in a group of its own, joined on the first call that involves two of them.
        Apart,
        /// All in one group, for good.
        Together,
    };
    /// Makes a backend's group, empty.
    using MakeGroup = std::function<std::unique_ptr<DeviceGroup>()>;

    /// No device yet; groups are made by `make`, placed by `placement`.
    DeviceGroups(Placement placement, MakeGroup make);
    DeviceGroups(const DeviceGroups&) = delete;
    DeviceGroups& operator=(const DeviceGroups&) = delete;

    /// Adds the runtime's next device (numbered in the order of `add_device`); before any lookup.
    void add_device();
    /// The group of `device` now; it stays so while its lock is held.
    [[nodiscard]] DeviceGroup& of(std::uint32_t device) const {
        return *devices_[device].load(std::memory_order_acquire);
    }
    /// Where the group of `device` is kept: the same place for the runtime's life, for a caller
    /// that looks the group up on every call.
    [[nodiscard]] const std::atomic<DeviceGroup*>& place_of(std::uint32_t device) const {
        return devices_[device];
    }
    /// Whether `first` and `second` are in one group.
    [[nodiscard]] bool together(std::uint32_t first, std::uint32_t second) const {
        return &of(first) == &of(second);
    }
    /// Puts `first` and `second` in one group: the smaller group's devices and unsettled work
    /// move into the larger (`SettlePipeline::absorb`, `DeviceGroup::absorb`). It waits for the
    /// waits with a lock let go to end (`DeviceGroup::Released`), woken as the last of them
    /// ends, and for nothing else. The calling thread holds no group's lock.
    void join(std::uint32_t first, std::uint32_t second);
    /// How many groups hold devices now. Takes the join lock: not for a holder of a group's lock.
    [[nodiscard]] std::size_t count() const;
    /// The one group of a `Together` placement.
    [[nodiscard]] DeviceGroup& shared() const { return *groups_.front(); }

private:
    /// A new group, last in the lock order.
    DeviceGroup& make_group();
    /// Moves `leaver`'s devices and work into `stayer`; both locked.
    void merge(DeviceGroup& stayer, DeviceGroup& leaver);

    Placement placement_;
    MakeGroup make_;
    /// Every group made, emptied ones too: a thread may still be about to lock one.
    std::deque<std::unique_ptr<DeviceGroup>> groups_;
    /// Each device's group.
    std::deque<std::atomic<DeviceGroup*>> devices_;
    /// One join at a time: groups change only under it.
    mutable std::mutex join_mutex_;
};

/// Holds the lock of a device's group (`DeviceGroup::mutex`), taken with a check that the group is
/// still the device's once held. `ToIssue` takes it as `EngineMutex::lock_to_issue` does.
class GroupLock {
public:
    /// How the lock is taken.
    enum class Mode : std::uint8_t {
        /// As `EngineMutex::lock`: once no issue is open.
        Wait,
        /// As `EngineMutex::lock_to_issue`: for a launch about to open an issue of its own.
        ToIssue,
    };

    /// Locks the group of `device` among `groups`.
    GroupLock(const DeviceGroups& groups, std::uint32_t device, Mode mode = Mode::Wait)
        : GroupLock(groups.place_of(device), mode) {}
    /// Locks the group kept at `place` (`DeviceGroups::place_of`).
    explicit GroupLock(const std::atomic<DeviceGroup*>& place, Mode mode = Mode::Wait)
        : group_(place.load(std::memory_order_acquire)) {
        for (;;) {
            if (mode == Mode::Wait) {
                group_->mutex.lock();
            } else {
                group_->mutex.lock_to_issue();
            }
            DeviceGroup* now = place.load(std::memory_order_acquire);
            if (now == group_) [[likely]] {
                return;
            }
            group_->mutex.unlock();
            group_ = now;
        }
    }
    ~GroupLock() { group_->mutex.unlock(); }
    GroupLock(const GroupLock&) = delete;
    GroupLock& operator=(const GroupLock&) = delete;

    /// The group locked.
    [[nodiscard]] DeviceGroup& group() const { return *group_; }

private:
    DeviceGroup* group_;
};

}  // namespace tandem
