// Device groups: where devices start, what a join does to them, and that a group's lock excludes
// every other holder of the same group, joins racing with lockers included.

#include "store_directory.hpp"

#include "tandem/core/device_groups.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace tandem {
namespace {

/// The directory the groups' pipelines reach: these tests enqueue work that touches no bytes.
class OneStore final : public testing::StoreDirectory {
public:
    ClaimStore& store_of(ServiceId) const override { return store; }
    ServiceId service_of(std::uint32_t device) const override { return ServiceId{7, device}; }
    bool reaches(ServiceId) const override { return true; }
    mutable ClaimStore store{ServiceId{7, 0}};
};

/// A group that counts what a join asks of it.
class CountingGroup final : public DeviceGroup {
public:
    explicit CountingGroup(DeviceDirectory& directory) : DeviceGroup(directory) {}
    void settle_all() override {
        ++settled;
        DeviceGroup::settle_all();
    }
    void absorb(DeviceGroup& other) override {
        absorbed += 1 + static_cast<CountingGroup&>(other).absorbed;
    }
    int settled = 0;
    int absorbed = 0;
};

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
    EXPECT_EQ(static_cast<CountingGroup&>(groups->shared()).settled, 0)
        << "a join within one group waits for nothing";
}

TEST_F(DeviceGroupsTest, a_join_settles_both_groups_and_is_for_good) {
    auto groups = make(DeviceGroups::Placement::Apart, 4);
    auto& first = static_cast<CountingGroup&>(groups->of(0));
    auto& second = static_cast<CountingGroup&>(groups->of(1));
    groups->join(0, 1);
    EXPECT_TRUE(groups->together(0, 1));
    EXPECT_EQ(first.settled + second.settled, 2) << "each group settles once before a join";
    EXPECT_EQ(groups->count(), 3u);
    groups->join(2, 3);
    groups->join(3, 0);  // Joins the two joined groups: all four together, transitively.
    EXPECT_EQ(groups->count(), 1u);
    for (std::uint32_t device = 1; device < 4; ++device) {
        EXPECT_TRUE(groups->together(0, device)) << "device " << device;
    }
    const auto& stayer = static_cast<const CountingGroup&>(groups->of(0));
    EXPECT_EQ(stayer.absorbed, 3) << "every group that joined was absorbed once";
}

TEST_F(DeviceGroupsTest, a_joined_pipeline_hands_out_sequences_above_both_groups) {
    auto groups = make(DeviceGroups::Placement::Apart, 2);
    SettlePipeline& small = groups->of(1).pipeline;
    for (int work = 0; work < 5; ++work) {
        auto settled = std::make_shared<Work>();
        settled->report = Work::Report::Landed;
        small.enqueue(settled);
    }
    small.settle_ready();
    const std::uint64_t above = small.next_sequence();
    groups->join(0, 1);
    EXPECT_GE(groups->of(0).pipeline.next_sequence(), above);
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
