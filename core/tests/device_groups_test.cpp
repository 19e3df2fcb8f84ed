// Device groups: where devices start, what a join does to them, and that a group's lock excludes
// every other holder of the same group, joins racing with lockers included.

#include "store_directory.hpp"

#include "tandem/backend/device_groups.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <thread>
#include <vector>

namespace tandem {
namespace {

/// The directory the groups' pipelines reach: these tests enqueue work that touches no bytes. It
/// counts the units of work each device enqueued, as a device counts them against a loss.
class OneStore final : public testing::StoreDirectory {
public:
    void count_work(std::uint32_t device) override { ++counted[device]; }
    std::map<std::uint32_t, int> counted;
    ClaimStore& store_of(ServiceId) const override { return store; }
    ServiceId service_of(std::uint32_t device) const override { return ServiceId{7, device}; }
    bool reaches(ServiceId) const override { return true; }
    mutable ClaimStore store{ServiceId{7, 0}};
};

/// A group that records what a join hands it.
class CountingGroup final : public DeviceGroup {
public:
    explicit CountingGroup(DeviceDirectory& directory) : DeviceGroup(directory) {}
    void absorb(DeviceGroup& other, const MovedSequences& moved) override {
        absorbed += 1 + static_cast<CountingGroup&>(other).absorbed;
        last_moved = moved;
    }
    int absorbed = 0;
    MovedSequences last_moved;
};

/// Work of `device` writing `size` bytes of `memory`, not ended yet.
std::shared_ptr<Work> pending_write(std::uint32_t device, MemoryId memory, std::uint64_t size) {
    auto work = std::make_shared<Work>();
    work->device = device;
    work->outputs.push_back(Target{ServiceId{7, device}, ClaimKey{memory, {0, size}}});
    return work;
}

class DeviceGroupsTest : public ::testing::Test {
protected:
    std::unique_ptr<DeviceGroups> make(DeviceGroups::Placement placement, std::uint32_t devices) {
        auto groups = std::make_unique<DeviceGroups>(
            placement, [this] { return std::make_unique<CountingGroup>(directory_); });
        for (std::uint32_t device = 0; device < devices; ++device) {
            groups->add_device();
        }
        return groups;
    }
    OneStore directory_;
};

TEST_F(DeviceGroupsTest, devices_placed_apart_start_in_groups_of_their_own) {
    auto groups = make(DeviceGroups::Placement::Apart, 3);
    EXPECT_EQ(groups->count(), 3u);
    EXPECT_FALSE(groups->together(0, 1));
    EXPECT_FALSE(groups->together(1, 2));
    EXPECT_TRUE(groups->together(2, 2));
}

TEST_F(DeviceGroupsTest, devices_placed_together_share_one_group_and_a_join_changes_nothing) {
    auto groups = make(DeviceGroups::Placement::Together, 3);
    EXPECT_EQ(groups->count(), 1u);
    EXPECT_TRUE(groups->together(0, 2));
    groups->join(0, 2);
    EXPECT_EQ(&groups->of(1), &groups->shared());
    EXPECT_EQ(static_cast<CountingGroup&>(groups->shared()).absorbed, 0);
}

TEST_F(DeviceGroupsTest, a_join_is_for_good_and_the_larger_group_stays) {
    auto groups = make(DeviceGroups::Placement::Apart, 4);
    DeviceGroup* first = &groups->of(0);
    groups->join(0, 1);
    EXPECT_TRUE(groups->together(0, 1));
    EXPECT_EQ(&groups->of(1), first) << "with groups of one device each, the first stays";
    EXPECT_EQ(groups->count(), 3u);
    groups->join(2, 3);
    groups->join(3, 0);  // Joins the two joined groups: all four together, transitively.
    EXPECT_EQ(groups->count(), 1u);
    for (std::uint32_t device = 1; device < 4; ++device) {
        EXPECT_TRUE(groups->together(0, device)) << "device " << device;
    }
    EXPECT_EQ(static_cast<const CountingGroup&>(groups->of(0)).absorbed, 3)
        << "every group that joined was absorbed once";
}

// A join waits for no work: the joining group's unsettled work moves behind the stayer's, in
// its order, with new sequences the backend can translate its own records by.
TEST_F(DeviceGroupsTest, a_join_moves_unsettled_work_behind_the_stayers_in_its_order) {
    auto groups = make(DeviceGroups::Placement::Apart, 2);
    const MemoryId stayer_memory = MemoryId::next();
    const MemoryId leaver_memory = MemoryId::next();
    SettlePipeline& stayer = groups->of(0).pipeline;
    SettlePipeline& leaver = groups->of(1).pipeline;
    const std::vector<std::shared_ptr<Work>> works = {
        pending_write(0, stayer_memory, 8), pending_write(0, stayer_memory, 8),
        pending_write(1, leaver_memory, 16), pending_write(1, leaver_memory, 16)};
    auto landed = pending_write(1, MemoryId::next(), 4);
    landed->ran(Status{});
    leaver.enqueue(landed);
    leaver.settle_ready();  // Settled before the join: not moved.
    for (const auto& work : works) {
        (work->device == 0 ? stayer : leaver).enqueue(work);
    }
    const std::uint64_t leaver_last = works[3]->sequence();  // As a backend would keep one.
    groups->join(0, 1);
    // Each unit was counted (against an injected loss) once, where it was enqueued: moved, it is
    // the same unit.
    EXPECT_EQ(directory_.counted, (std::map<std::uint32_t, int>{{0, 2}, {1, 3}}));
    EXPECT_TRUE(leaver.empty());
    EXPECT_EQ(stayer.size(), 4u);
    std::vector<const Work*> order;
    stayer.for_each_pending([&](const Work& work) { order.push_back(&work); });
    ASSERT_EQ(order.size(), 4u);
    for (std::size_t index = 0; index < 4; ++index) {
        EXPECT_EQ(order[index], works[index].get()) << "position " << index;
    }
    const ClaimKey leaver_key{leaver_memory, {0, 16}};
    EXPECT_TRUE(stayer.writes_unsettled(ServiceId{7, 1}, std::span(&leaver_key, 1)));
    const MovedSequences& moved = static_cast<const CountingGroup&>(groups->of(0)).last_moved;
    EXPECT_EQ(moved.translate(leaver_last), works[3]->sequence());
    EXPECT_EQ(moved.translate(leaver_last + 1), stayer.next_sequence());
    for (const auto& work : works) {
        work->ran(Status{});
    }
    stayer.settle_ready();
    EXPECT_TRUE(stayer.empty());
    EXPECT_FALSE(stayer.writes_unsettled(ServiceId{7, 1}, std::span(&leaver_key, 1)));
    EXPECT_EQ(stayer.check_invariants(), std::nullopt);
}

// A holder waiting for the GPU with its group's lock let go comes back to its group's state:
// no join moves the group meanwhile.
TEST_F(DeviceGroupsTest, a_join_waits_for_a_wait_with_the_lock_let_go) {
    auto groups = make(DeviceGroups::Placement::Apart, 2);
    std::promise<void> waiting;
    std::promise<void> finish;
    std::thread waiter([&, done = finish.get_future()] {
        const GroupLock lock(*groups, 1);
        const DeviceGroup::Released released(lock.group());
        waiting.set_value();
        done.wait();
    });
    waiting.get_future().wait();
    std::atomic<bool> joined{false};
    std::thread joiner([&] {
        groups->join(0, 1);
        joined = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_FALSE(joined.load()) << "the join moved a group while a holder waited with it let go";
    finish.set_value();
    waiter.join();
    joiner.join();
    EXPECT_TRUE(groups->together(0, 1));
}

TEST_F(DeviceGroupsTest, a_group_lock_follows_its_device_into_the_group_it_joined) {
    auto groups = make(DeviceGroups::Placement::Apart, 2);
    groups->join(1, 0);
    const GroupLock lock(*groups, 1);
    EXPECT_EQ(&lock.group(), &groups->of(0));
}

// Threads lock devices and bump a per-device count that only the holder of the device's group
// lock may touch, while another thread joins the groups one by one. A lock that held a group the
// device had left would race with the holder of its new one: the counts would come out short
// (and the tsan build reports the race).
TEST_F(DeviceGroupsTest, a_lock_taken_while_groups_join_excludes_every_other_holder) {
    constexpr std::uint32_t devices = 6;
    constexpr int rounds = 20'000;
    constexpr int threads = 3;
    auto groups = make(DeviceGroups::Placement::Apart, devices);
    std::vector<long> counts(devices, 0);
    std::atomic<bool> go{false};
    std::vector<std::thread> lockers;
    for (int thread = 0; thread < threads; ++thread) {
        lockers.emplace_back([&, thread] {
            while (!go.load()) {
            }
            for (int round = 0; round < rounds; ++round) {
                const auto device = static_cast<std::uint32_t>((round + thread) % devices);
                const GroupLock lock(*groups, device);
                ++counts[device];
            }
        });
    }
    go = true;
    for (std::uint32_t device = 1; device < devices; ++device) {
        groups->join(device - 1, device);
        std::this_thread::yield();
    }
    for (std::thread& locker : lockers) {
        locker.join();
    }
    long total = 0;
    for (long count : counts) {
        total += count;
    }
    EXPECT_EQ(total, long{threads} * rounds);
    EXPECT_EQ(groups->count(), 1u);
}

}  // namespace
}  // namespace tandem
