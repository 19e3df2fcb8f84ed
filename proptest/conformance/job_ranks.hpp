#pragma once

// The ranks of a job simulated in this process (`Job::join_in_process`), as the collectives of a
// job need them: every rank a `Job` with a simulated runtime of one device, and a collective a
// call of every rank, each on a thread of its own. The kinds (`JobRanksKinds`) are the number of
// ranks (two and three) and the simulator's scheduler (deterministic and threads), so a rule that
// holds for two ranks but not three, or under one schedule but not the other, fails by name.
//
// One seed drives the runtimes (a rank's is the seed plus its rank, as `Job::join` makes it);
// the fixture prints it first, so a failure under the deterministic scheduler replays.

#include "job_test_support.hpp"
#include "support.hpp"

#include "tandem/job.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <future>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tandem::conformance {

/// A job of `Ranks` ranks in this process, each with one simulated device scheduled as
/// `Scheduler::name` says.
template <std::uint32_t Ranks, typename Scheduler>
struct JobOf {
    /// The number of ranks.
    static constexpr std::uint32_t ranks = Ranks;
    /// The instantiation's name: "ranks2_deterministic".
    static std::string name() { return "ranks" + std::to_string(Ranks) + "_" + Scheduler::name; }
    /// The simulator's scheduler the ranks run.
    static std::string scheduler() { return Scheduler::name; }
};

/// The simulator's deterministic scheduler.
struct Deterministic {
    static constexpr const char* name = "deterministic";
};
/// The simulator's worker threads.
struct Threads {
    static constexpr const char* name = "threads";
};

/// How long a collective call of these tests may wait for another rank. Never reached by a test
/// that passes: a call that ends on it fails with `PeerUnreachable`, which the tests tell apart
/// from the `DeviceLost` a lost rank gives.
inline constexpr std::chrono::milliseconds call_timeout{std::chrono::seconds(30)};

/// The seed every test's runtimes derive from (rank r's is this plus r).
inline constexpr std::uint64_t job_seed = 37;

/// The fixture: the ranks of one job, joined fresh for every test and left after it.
template <typename Kind>
class JobRanks : public ::testing::Test {
protected:
    void SetUp() override {
        JoinOptions options = tandem::testing::sim_ranks_in_one_process(Kind::scheduler());
        options.runtime.seed = job_seed;
        options.event_wait_timeout = call_timeout;
        std::cout << "job of " << Kind::ranks << " ranks, scheduler " << Kind::scheduler()
                  << ", seed " << job_seed << "\n";
        Result<std::vector<Job>> joined = Job::join_in_process(Kind::ranks, options);
        // The suite is built only with the simulator: a job that cannot join is a failure.
        ASSERT_TRUE(joined) << "no job in this process: " << joined.error().report();
        ranks_ = std::move(*joined);
        for (Job& job : ranks_) {
            devices_.push_back(job.runtime()->client(0));
        }
    }
    void TearDown() override {
        devices_.clear();
        ranks_.clear();
    }

public:
    /// The number of ranks.
    static constexpr std::uint32_t world_size() { return Kind::ranks; }
    /// The last rank: the one the fault tests fail, delay or end (not the root of a reduction).
    static constexpr std::uint32_t last_rank() { return Kind::ranks - 1; }
    /// Rank `rank`'s membership.
    Job& job(std::uint32_t rank) { return ranks_.at(rank); }
    /// Rank `rank`'s device.
    Client& device(std::uint32_t rank) { return devices_.at(rank); }

    /// Runs `call` for every rank in `ranks` (all of them when empty), each on a thread of its
    /// own, and returns each rank's outcome in rank order (a default `Status` for ranks left out).
    std::vector<Status> on_every_rank(const std::function<Status(std::uint32_t rank)>& call,
                                      const std::vector<std::uint32_t>& ranks = {}) {
        std::vector<std::future<Status>> calls(world_size());
        for (std::uint32_t rank = 0; rank < world_size(); ++rank) {
            if (ranks.empty() || std::find(ranks.begin(), ranks.end(), rank) != ranks.end()) {
                calls[rank] = std::async(std::launch::async, call, rank);
            }
        }
        std::vector<Status> outcomes(world_size());
        for (std::uint32_t rank = 0; rank < world_size(); ++rank) {
            if (calls[rank].valid()) {
                outcomes[rank] = calls[rank].get();
            }
        }
        return outcomes;
    }

    /// `size` bytes of `value` on rank `rank`'s device, written and settled.
    Handle bytes_on(std::uint32_t rank, std::uint64_t size, std::uint8_t value) {
        Result<Handle> buffer = device(rank).allocate(size);
        EXPECT_TRUE(buffer) << buffer.error().report();
        EXPECT_TRUE(device(rank).write(*buffer, filled(size, value)));
        EXPECT_TRUE(device(rank).sync());
        return *buffer;
    }
    /// `values` on rank `rank`'s device, written and settled.
    template <typename T>
    Handle values_on(std::uint32_t rank, const std::vector<T>& values) {
        std::vector<std::byte> bytes(values.size() * sizeof(T));
        std::memcpy(bytes.data(), values.data(), bytes.size());
        Result<Handle> buffer = device(rank).allocate(bytes.size());
        EXPECT_TRUE(buffer) << buffer.error().report();
        EXPECT_TRUE(device(rank).write(*buffer, bytes));
        EXPECT_TRUE(device(rank).sync());
        return *buffer;
    }
    /// The values of `buffer` of rank `rank`, failing the test when the read fails.
    template <typename T>
    std::vector<T> read_values(std::uint32_t rank, const Handle& buffer) {
        Result<std::vector<std::byte>> read = device(rank).read(buffer);
        EXPECT_TRUE(read) << "rank " << rank << ": " << read.error().report();
        if (!read) {
            return {};
        }
        std::vector<T> values(read->size() / sizeof(T));
        std::memcpy(values.data(), read->data(), values.size() * sizeof(T));
        return values;
    }
    /// The bytes of `buffer` of rank `rank`, failing the test when the read fails.
    std::vector<std::byte> read_bytes(std::uint32_t rank, const Handle& buffer) {
        Result<std::vector<std::byte>> read = device(rank).read(buffer);
        EXPECT_TRUE(read) << "rank " << rank << ": " << read.error().report();
        return read ? *read : std::vector<std::byte>{};
    }
    /// The error a read of `buffer` of rank `rank` fails with, or none when it reads.
    std::optional<Error> read_error(std::uint32_t rank, const Handle& buffer) {
        Result<std::vector<std::byte>> read = device(rank).read(buffer);
        return read ? std::nullopt : std::optional<Error>(read.error());
    }
    /// Claims all of `buffer` of rank `rank` with the fail kernel's `code`, settled: a rank's
    /// part that failed.
    void claim(std::uint32_t rank, const Handle& buffer, std::uint32_t code) {
        ASSERT_TRUE(device(rank).launch("fail", LaunchConfig::linear(1), {out(buffer)},
                                        KernelArgs().u64(code)));
        (void)device(rank).sync();
    }

protected:
    std::vector<Job> ranks_;
    std::vector<Client> devices_;
};

/// The kinds the job collectives run on.
using JobRanksKinds = ::testing::Types<JobOf<2, Deterministic>, JobOf<2, Threads>,
                                       JobOf<3, Deterministic>, JobOf<3, Threads>>;

/// Names the typed instantiations after their kind: `JobCollectives/ranks3_threads.<test>`.
struct JobRanksNames {
    template <typename Kind>
    static std::string GetName(int) {
        return Kind::name();
    }
};

}  // namespace tandem::conformance
