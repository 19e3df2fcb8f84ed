#pragma once

// The fixture of the job tests on the simulator: a job of two ranks, where the test's process is
// rank 0 and rank 1 is a process of its own (sim_job_rank) that answers one command a line.
// Every wait is on what a rank writes, never on time.

#include "job_test_support.hpp"

#include "tandem/job.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <future>
#include <optional>
#include <random>
#include <string>

namespace tandem::testing {

inline std::string new_job_id() {
    std::random_device random;
    return "sim-job-test-" + std::to_string(random()) + std::to_string(random());
}

/// A job of two ranks: this process is rank 0 (with one simulated device), and `peer` rank 1.
class TwoRanks : public ::testing::Test {
protected:
    void SetUp() override {
        id_ = new_job_id();
        peer = start_program(
            TANDEM_SIM_JOB_RANK, rank_of(id_, 1, 2), {},
            {"TANDEM_BACKEND=sim", "TANDEM_DEVICES=1", "TANDEM_SCHEDULER=" + scheduler});
        JoinOptions options;
        options.environment = rank_of(id_, 0, 2);
        options.runtime.backend = "sim";
        options.runtime.devices = 1;
        options.runtime.scheduler = scheduler;
        options.timeout = guard_timeout;
        options.event_wait_timeout = event_wait_timeout;
        Result<Job> joined = Job::join(options);
        ASSERT_TRUE(joined.ok()) << joined.error().report();
        job.emplace(std::move(*joined));
        ASSERT_EQ(peer.first_line(), "joined");
        device.emplace(job->runtime()->client(0));
    }
    void TearDown() override {
        device.reset();
        job.reset();
        if (peer.pid > 0) {
            ::close(peer.input);  // The end of its stdin: the peer leaves.
            peer.input = -1;
            (void)peer.reap();
        }
        EXPECT_FALSE(std::filesystem::exists(job_folder_path(id_)));
    }

    /// 64 bytes of this rank's device, filled with `value`.
    Handle filled(std::uint64_t value) {
        Handle buffer = *device->allocate(64);
        EXPECT_TRUE(device->launch("fill", LaunchConfig::linear(64), {{buffer, AccessMode::Write}},
                                   KernelArgs().u64(value)));
        return buffer;
    }
    /// Both ranks pass a barrier: this one on a thread, the peer by command.
    void barrier_with_peer() {
        auto mine = std::async(std::launch::async, [this] { return job->barrier(); });
        EXPECT_EQ(peer.ask("barrier"), "ok");
        const Status passed = mine.get();
        EXPECT_TRUE(passed.ok()) << passed.error().report();
    }

    /// The simulator's scheduler of both ranks: the peer takes it from the environment.
    std::string scheduler = "deterministic";
    /// How long this rank's waits for the peer's events hold.
    std::chrono::milliseconds event_wait_timeout{std::chrono::seconds(60)};
    std::string id_;
    RankProcess peer;
    std::optional<Job> job;
    std::optional<Client> device;
};

}  // namespace tandem::testing
