#pragma once

// The fixture of the job tests on the simulator: a job of two ranks, where the test's process is
// rank 0 and rank 1 is a process of its own (sim_job_rank) that answers one command a line.
// Every wait is on what a rank writes, never on time.

#include "job_test_support.hpp"

#include "tandem/job.hpp"

#include <gtest/gtest.h>

#include <csignal>
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

/// A job of two ranks: this process is rank 0 (with one simulated device), and `peer` rank 1
/// (or the other way round, where a fixture sets `peer_rank` to 0).
class TwoRanks : public ::testing::Test {
protected:
    void SetUp() override {
        id_ = new_job_id();
        peer = start_program(
            TANDEM_SIM_JOB_RANK, rank_of(id_, peer_rank, 2), {},
            {"TANDEM_BACKEND=sim", "TANDEM_DEVICES=1", "TANDEM_SCHEDULER=" + scheduler});
        JoinOptions options;
        options.environment = rank_of(id_, 1 - peer_rank, 2);
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
        if (peer_killed) {  // Reaped only now: until then this rank could still ask how it ended.
            EXPECT_TRUE(WIFSIGNALED(peer.reap()));
            peer.pid = -1;
        }
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
        EXPECT_TRUE(fill(buffer, value));
        return buffer;
    }
    /// Enqueues the catalog's fill kernel writing all of `buffer` (64 bytes) with `value`.
    Status fill(const Handle& buffer, std::uint64_t value) {
        return device->launch("fill", LaunchConfig::linear(64), {{buffer, AccessMode::Write}},
                              KernelArgs().u64(value));
    }
    /// Enqueues the catalog's fail kernel writing `buffer`: its bytes are claimed by `code`.
    Status fail(const Handle& buffer, std::uint64_t code) {
        return device->launch("fail", LaunchConfig::linear(1), {{buffer, AccessMode::Write}},
                              KernelArgs().u64(code));
    }
    /// Publishes `memory` as `name`, granted first to the peer's device unless `granted` is
    /// false, and has the peer look it up.
    void share_with_peer(const std::string& name, const Handle& memory, bool granted = true) {
        if (granted) {
            ASSERT_TRUE(device->grant_peer_access(*job->service(peer_rank)));
        }
        ASSERT_TRUE(job->publish(name, memory));
        ASSERT_EQ(peer.ask("lookup " + name), "ok");
    }
    /// An event after the work enqueued so far on this rank's default stream, published as
    /// `name` and looked up by the peer; none when it could not be recorded.
    std::optional<Event> event_for_peer(const std::string& name) {
        Result<Event> event = device->record_event(device->default_stream());
        EXPECT_TRUE(event.ok()) << event.error().report();
        if (!event.ok()) {
            return std::nullopt;
        }
        EXPECT_TRUE(job->publish(name, *event));
        EXPECT_EQ(peer.ask("lookup-event " + name), "ok");
        return *event;
    }
    /// 64 bytes of the peer's device filled with `value`, which the peer publishes as `name`,
    /// looked up here; none when the lookup fails.
    std::optional<Handle> peers_memory(const std::string& name, std::uint64_t value) {
        EXPECT_EQ(peer.ask("publish " + name + " " + std::to_string(value)), "ok");
        Result<Handle> theirs = job->lookup(name, guard_timeout);
        EXPECT_TRUE(theirs.ok()) << theirs.error().report();
        return theirs.ok() ? std::optional(*theirs) : std::nullopt;
    }
    /// The peer's event "gate", after a fill it runs only once told to `sync`, looked up here;
    /// none when the lookup fails.
    std::optional<Event> peers_gate() {
        EXPECT_EQ(peer.ask("event gate 4"), "ok");
        Result<Event> gate = job->lookup_event("gate", guard_timeout);
        EXPECT_TRUE(gate.ok()) << gate.error().report();
        return gate.ok() ? std::optional(*gate) : std::nullopt;
    }
    /// Kills the peer (SIGKILL) and waits until this rank has noticed. It stays unreaped until
    /// TearDown, so this rank's reports can say how it ended.
    void kill_peer() {
        ASSERT_EQ(::kill(peer.pid, SIGKILL), 0);
        peer_killed = true;
        ASSERT_TRUE(job->wait_for_loss_of(peer_rank, guard_timeout).has_value());
    }
    /// Both ranks pass a barrier: this one on a thread, the peer by command.
    void barrier_with_peer() {
        auto mine = std::async(std::launch::async, [this] { return job->barrier(); });
        EXPECT_EQ(peer.ask("barrier"), "ok");
        const Status passed = mine.get();
        EXPECT_TRUE(passed.ok()) << passed.error().report();
    }

    /// The rank of the peer's process (0 or 1); this process is the other.
    std::uint32_t peer_rank = 1;
    /// The simulator's scheduler of both ranks: the peer takes it from the environment.
    std::string scheduler = "deterministic";
    /// How long this rank's waits for the peer's events hold.
    std::chrono::milliseconds event_wait_timeout{std::chrono::seconds(60)};
    std::string id_;
    RankProcess peer;
    /// Whether the test killed the peer (`kill_peer`).
    bool peer_killed = false;
    std::optional<Job> job;
    std::optional<Client> device;
};

}  // namespace tandem::testing
