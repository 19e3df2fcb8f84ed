// A job simulated in one process: two ranks of this process (`Job::join_in_process`), each with
// a simulated device, keep the rules ranks of their own processes keep, and a rank abandoned
// (`Job::abandon`) is lost to the other as a killed process would be. The peer rules across
// ranks, the same test bodies as across the devices of one runtime, are in
// proptest/conformance/job_peer_test.cpp.

#include "ranks_in_one_process.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>

namespace tandem {
namespace {

using ::testing::HasSubstr;
using namespace tandem::testing;

TEST_F(RanksInOneProcess, each_rank_names_its_memory_and_devices_by_its_own_rank) {
    std::shared_ptr<Runtime> outside = *open_runtime({.backend = "sim", .devices = 1});
    Handle stray = *outside->client(0).allocate(64);
    for (std::uint32_t rank = 0; rank < 2; ++rank) {
        Handle mine = *devices[rank].allocate(64);
        // The rank of the runtime that drew the id, whichever joined last.
        EXPECT_EQ(mine.memory().id().rank_of(), rank);
        EXPECT_EQ(to_string(devices[rank].service()), "device 0 of rank " + std::to_string(rank));
    }
    EXPECT_EQ(stray.memory().id().rank_of(), std::nullopt);  // A runtime of no job: no rank.
}

TEST_F(RanksInOneProcess, a_rank_joined_twice_in_one_process_is_refused_naming_this_process) {
    JoinOptions again;
    again.environment = rank_of(ranks[0].job_id(), 1, 2);
    again.open_runtime = false;
    again.timeout = std::chrono::milliseconds(50);
    Result<Job> twice = Job::join(again);
    ASSERT_FALSE(twice.ok());
    EXPECT_EQ(twice.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_THAT(twice.error().message(),
                HasSubstr("rank 1 of job '" + ranks[0].job_id() +
                          "' joined twice: another Job of this process " +
                          std::to_string(::getpid()) + " holds it already"));
    EXPECT_TRUE(ranks[0].rank_alive(1));  // The first rank 1 stays in the job.
}

TEST_F(RanksInOneProcess, a_peer_rank_copies_published_memory_and_binds_it_once_granted) {
    Handle data = filled(0, 5);
    ASSERT_TRUE(ranks[0].publish("data", data));
    Result<Handle> theirs = ranks[1].lookup("data", guard_timeout);
    ASSERT_TRUE(theirs.ok()) << theirs.error().report();
    Handle local = *devices[1].allocate(64);
    ASSERT_TRUE(devices[1].copy(*theirs, local));  // A copy needs no grant.
    Result<std::vector<std::byte>> read = devices[1].read(local);
    ASSERT_TRUE(read.ok()) << read.error().report();
    EXPECT_EQ((*read)[63], std::byte{5});
    ASSERT_TRUE(devices[0].grant_peer_access(*ranks[0].service(1)));
    ASSERT_TRUE(devices[1].launch("fill", LaunchConfig::linear(64), {{*theirs, AccessMode::Write}},
                                  KernelArgs().u64(8)));
    ASSERT_TRUE(devices[1].sync());
    read = devices[0].read(data);
    ASSERT_TRUE(read.ok()) << read.error().report();
    EXPECT_EQ((*read)[0], std::byte{8});
}

TEST_F(RanksInOneProcess, a_peer_ranks_failed_write_claims_the_owners_bytes_until_one_lands) {
    Handle data = filled(0, 5);
    ASSERT_TRUE(devices[0].grant_peer_access(*ranks[0].service(1)));
    ASSERT_TRUE(ranks[0].publish("data", data));
    Handle theirs = *ranks[1].lookup("data", guard_timeout);
    ASSERT_TRUE(devices[1].launch("fail", LaunchConfig::linear(1), {{theirs, AccessMode::Write}},
                                  KernelArgs().u64(7)));
    barrier();
    Result<std::vector<std::byte>> read = devices[0].read(data);  // P4: claimed on the owner.
    ASSERT_FALSE(read.ok());
    EXPECT_EQ(read.error().kind(), ErrorKind::Unwritten);
    EXPECT_THAT(read.error().report(),
                HasSubstr("kernel 'fail' failed with code 7 on device 0 of rank 1, stream 1"));
    ASSERT_TRUE(devices[1].launch("fill", LaunchConfig::linear(64), {{theirs, AccessMode::Write}},
                                  KernelArgs().u64(3)));
    barrier();  // P5: the later write, ordered by the barrier, repairs it.
    read = devices[0].read(data);
    ASSERT_TRUE(read.ok()) << read.error().report();
    EXPECT_EQ((*read)[0], std::byte{3});
}

TEST_F(RanksInOneProcess, an_abandoned_rank_is_lost_to_its_peer_and_its_memory_reads_as_lost) {
    Handle data = filled(0, 4);
    ASSERT_TRUE(ranks[0].publish("data", data));
    Handle theirs = *ranks[1].lookup("data", guard_timeout);
    ranks[0].abandon();
    EXPECT_FALSE(ranks[0].rank_alive(0));
    std::optional<RankLoss> loss = ranks[1].wait_for_loss_of(0, guard_timeout);
    ASSERT_TRUE(loss.has_value());
    EXPECT_EQ(loss->how, RankEnd::abandoned);
    EXPECT_EQ(loss->pid, ::getpid());
    EXPECT_THAT(loss->describe(), HasSubstr("rank 0 (pid " + std::to_string(::getpid()) +
                                            ") was abandoned: its connections closed"));
    // D1: work reading the lost rank's memory is skipped with its loss, naming the rank.
    Handle mine = *devices[1].allocate(64);
    ASSERT_TRUE(devices[1].copy(theirs, mine));
    Result<std::vector<std::byte>> read = devices[1].read(mine);
    ASSERT_FALSE(read.ok());
    EXPECT_EQ(read.error().kind(), ErrorKind::Unwritten);
    EXPECT_THAT(read.error().report(), HasSubstr("DeviceLost: device 0 of rank 0"));
    EXPECT_THAT(read.error().report(), HasSubstr("was abandoned"));
    // The peer keeps working on its own memory.
    Handle own = filled(1, 6);
    read = devices[1].read(own);
    ASSERT_TRUE(read.ok()) << read.error().report();
    EXPECT_EQ((*read)[0], std::byte{6});
    const Status barrier = ranks[1].barrier(guard_timeout);  // Never a hang: the loss ends it.
    ASSERT_FALSE(barrier.ok());
    EXPECT_EQ(barrier.error().kind(), ErrorKind::DeviceLost);
}

TEST_F(RanksInOneProcess, a_wait_on_an_event_of_a_rank_abandoned_before_it_ran_fails_naming_it) {
    Handle gate = *devices[0].allocate(64);
    ASSERT_TRUE(devices[0].launch("fill", LaunchConfig::linear(64), {{gate, AccessMode::Write}},
                                  KernelArgs().u64(1)));
    Result<Event> event = devices[0].record_event(devices[0].default_stream());
    ASSERT_TRUE(event.ok()) << event.error().report();
    ASSERT_TRUE(ranks[0].publish("gate", *event));  // Rank 0 never syncs: it never runs the fill.
    Result<Event> theirs = ranks[1].lookup_event("gate", guard_timeout);
    ASSERT_TRUE(theirs.ok()) << theirs.error().report();
    auto waited = std::async(std::launch::async, [&] { return devices[1].wait(*theirs); });
    ranks[0].abandon();  // Before or during the wait: either way the loss ends it.
    const Status host = waited.get();
    ASSERT_FALSE(host.ok());
    EXPECT_EQ(host.error().kind(), ErrorKind::DeviceLost);
    EXPECT_THAT(host.error().message(), HasSubstr("device 0 of rank 0"));
}

TEST_F(RanksInOneProcess, an_all_reduce_of_ranks_in_one_process_gives_every_rank_the_sum) {
    std::vector<Handle> buffers;
    for (std::uint32_t rank = 0; rank < 2; ++rank) {
        buffers.push_back(*devices[rank].allocate(8));
        const std::int64_t value = 10 + rank;
        std::vector<std::byte> bytes(8);
        std::memcpy(bytes.data(), &value, 8);
        ASSERT_TRUE(devices[rank].write(buffers[rank], bytes));
    }
    for (const Status& done : on_every_rank([&](std::uint32_t rank) {
             return ranks[rank].all_reduce(buffers[rank], ElementType::i64, ReduceOp::sum);
         })) {
        ASSERT_TRUE(done.ok()) << done.error().report();
    }
    for (std::uint32_t rank = 0; rank < 2; ++rank) {
        Result<std::vector<std::byte>> read = devices[rank].read(buffers[rank]);
        ASSERT_TRUE(read.ok()) << read.error().report();
        std::int64_t sum = 0;
        std::memcpy(&sum, read->data(), 8);
        EXPECT_EQ(sum, 21);
    }
}

// A lost rank ends a meeting at once, whichever rank the meeting still waits for first: rank 1
// has not come (it is busy elsewhere) when rank 2 is lost, and rank 0's barrier fails naming
// rank 2 instead of waiting for rank 1 until its time runs out.
TEST(JobInProcess, a_rank_lost_ends_a_barrier_that_still_waits_for_a_lower_living_rank) {
    Result<std::vector<Job>> joined = Job::join_in_process(3, sim_ranks_in_one_process());
    ASSERT_TRUE(joined.ok()) << joined.error().report();
    std::vector<Job>& ranks = *joined;
    const std::string folder = ranks[0].folder();
    auto waiting = std::async(std::launch::async, [&ranks] { return ranks[0].barrier(guard_timeout); });
    ranks[2].abandon();
    const Status barrier = waiting.get();
    ASSERT_FALSE(barrier.ok());
    EXPECT_EQ(barrier.error().kind(), ErrorKind::DeviceLost) << barrier.error().report();
    EXPECT_THAT(barrier.error().message(), HasSubstr("rank 2"));
    EXPECT_THAT(barrier.error().message(), HasSubstr("was abandoned"));
    ranks.clear();
    EXPECT_FALSE(std::filesystem::exists(folder));
}

TEST(JobInProcess, a_job_of_no_ranks_or_too_many_is_refused) {
    for (std::uint32_t world_size : {0u, job_ranks_max + 1}) {
        Result<std::vector<Job>> joined = Job::join_in_process(world_size);
        ASSERT_FALSE(joined.ok());
        EXPECT_EQ(joined.error().kind(), ErrorKind::InvalidArgument);
        EXPECT_THAT(joined.error().message(), HasSubstr("a job has 1 to 256 ranks"));
    }
}

}  // namespace
}  // namespace tandem
