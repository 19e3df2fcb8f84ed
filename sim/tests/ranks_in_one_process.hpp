#pragma once

// The fixture of a job simulated in one process (`Job::join_in_process`): two ranks of this
// process, each with a runtime of one simulated device, driven by the test directly. A rank's
// work runs when that rank syncs or waits (the deterministic scheduler), and another rank's
// questions are answered by its watcher thread, so one test thread drives both ranks; only
// calls that meet every rank (a barrier, a collective) run on a thread per rank.

#include "job_test_support.hpp"

#include "tandem/job.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <future>
#include <optional>
#include <vector>

namespace tandem::testing {

/// A job of two ranks in this process, each with one simulated device.
class RanksInOneProcess : public ::testing::Test {
protected:
    void SetUp() override {
        Result<std::vector<Job>> joined = Job::join_in_process(2, sim_ranks_in_one_process());
        ASSERT_TRUE(joined.ok()) << joined.error().report();
        ranks = std::move(*joined);
        for (Job& rank : ranks) {
            devices.push_back(rank.runtime()->client(0));
        }
        folder = ranks[0].folder();
    }
    void TearDown() override {
        devices.clear();
        ranks.clear();
        EXPECT_FALSE(std::filesystem::exists(folder));
    }

    /// 64 bytes of rank `rank`'s device, filled with `value`.
    Handle filled(std::uint32_t rank, std::uint64_t value) {
        Handle buffer = *devices[rank].allocate(64);
        EXPECT_TRUE(devices[rank].launch("fill", LaunchConfig::linear(64),
                                         {{buffer, AccessMode::Write}}, KernelArgs().u64(value)));
        return buffer;
    }
    /// Runs `call` for every rank at once, a thread each: the calls that meet every rank.
    std::vector<Status> on_every_rank(const std::function<Status(std::uint32_t)>& call) {
        std::vector<std::future<Status>> running;
        for (std::uint32_t rank = 0; rank < ranks.size(); ++rank) {
            running.push_back(std::async(std::launch::async, [&call, rank] { return call(rank); }));
        }
        std::vector<Status> results;
        for (auto& each : running) {
            results.push_back(each.get());
        }
        return results;
    }
    /// Every rank passes a barrier.
    void barrier() {
        for (const Status& passed :
             on_every_rank([this](std::uint32_t rank) { return ranks[rank].barrier(); })) {
            EXPECT_TRUE(passed.ok()) << passed.error().report();
        }
    }

    std::vector<Job> ranks;
    std::vector<Client> devices;
    std::string folder;
};

}  // namespace tandem::testing
