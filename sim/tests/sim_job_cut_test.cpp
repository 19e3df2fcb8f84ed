// A connection lost between two ranks that both live (`Job::cut_connection`): the job parts the
// pair by cutting off the higher rank (job.hpp). On jobs of two and three ranks simulated in this
// process, and on two ranks that are processes of their own: which rank is lost to which and how,
// the cut-off rank's job calls refused with why while its device works on, the other ranks'
// work going on and their reads of its memory failing with `DeviceLost` naming it (D1). A death
// is never taken for a lost connection, a rank is reported lost once, and a bad cut changes
// nothing. No test waits for a time: each waits until the ranks have read the ends of their
// connections (`wait_for_loss_of`), or on what a rank process answers.

#include "job_test_support.hpp"
#include "two_ranks.hpp"

#include "tandem/job.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <future>
#include <map>

namespace tandem {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using namespace tandem::testing;

/// The words of a rank cut off for its connection to `rank`.
std::string cut_off_words(std::uint32_t rank) {
    return "this rank was cut off from the job: its connection to rank " + std::to_string(rank) +
           " was lost while both ranks lived";
}

/// The words a rank's peers describe it with once it is cut off for its connection to `rank`.
std::string was_cut_off(std::uint32_t cut, std::uint32_t rank) {
    return "rank " + std::to_string(cut) + " (pid " + std::to_string(::getpid()) +
           ") was cut off from the job: its connection to rank " + std::to_string(rank) +
           " was lost while both ranks lived";
}

/// The loss of `rank` as `job` reported it, once it has, expected to be `how` with `code`.
RankLoss expect_loss(const Job& job, std::uint32_t rank, RankEnd how, int code) {
    const std::optional<RankLoss> seen = job.wait_for_loss_of(rank, guard_timeout);
    EXPECT_TRUE(seen.has_value()) << "rank " << job.rank() << " did not lose rank " << rank;
    EXPECT_EQ(seen.value_or(RankLoss{}).how, how);
    EXPECT_EQ(seen.value_or(RankLoss{}).code, code);
    return seen.value_or(RankLoss{});
}

/// `result`'s error, or success: a call's outcome as a status.
template <typename T>
Status status_of(const Result<T>& result) {
    return result ? Status{} : Status(result.error());
}

/// A job of some ranks simulated in this process, each with one simulated device, whose every
/// rank shares 64 bytes of its device with every other.
class CutRanks : public ::testing::Test {
protected:
    /// Joins `world_size` ranks; each shares "memory-R", filled with 10 + R, granted to every
    /// other rank's device, and every other rank looks it up (`theirs`).
    void join(std::uint32_t world_size) {
        Result<std::vector<Job>> joined =
            Job::join_in_process(world_size, sim_ranks_in_one_process());
        ASSERT_TRUE(joined.ok()) << joined.error().report();
        ranks = std::move(*joined);
        folder = ranks[0].folder();
        for (Job& rank : ranks) {
            devices.push_back(rank.runtime()->client(0));
        }
        for (std::uint32_t owner = 0; owner < world_size; ++owner) {
            own.push_back(filled(owner, 10 + owner));
            for (std::uint32_t other = 0; other < world_size; ++other) {
                if (other != owner) {
                    ASSERT_TRUE(devices[owner].grant_peer_access(*ranks[owner].service(other)));
                }
            }
            ASSERT_TRUE(ranks[owner].publish(name_of(owner), own.back()));
        }
        for (std::uint32_t rank = 0; rank < world_size; ++rank) {
            for (std::uint32_t owner = 0; owner < world_size; ++owner) {
                if (owner != rank) {
                    Result<Handle> found = ranks[rank].lookup(name_of(owner), guard_timeout);
                    ASSERT_TRUE(found.ok()) << found.error().report();
                    theirs.emplace(std::pair(rank, owner), *found);
                }
            }
        }
    }
    void TearDown() override {
        theirs.clear();
        own.clear();
        devices.clear();
        ranks.clear();
        if (!folder.empty()) {
            EXPECT_FALSE(std::filesystem::exists(folder));
        }
    }

    static std::string name_of(std::uint32_t owner) { return "memory-" + std::to_string(owner); }
    /// 64 bytes of rank `rank`'s device, filled with `value`.
    Handle filled(std::uint32_t rank, std::uint64_t value) {
        Handle buffer = *devices[rank].allocate(64);
        EXPECT_TRUE(devices[rank].launch("fill", LaunchConfig::linear(64),
                                         {{buffer, AccessMode::Write}}, KernelArgs().u64(value)));
        return buffer;
    }
    /// Cuts the connection between ranks `at` and `other` at `at`'s end, then waits until every
    /// rank has read what it will read of it: each rank still in the job the loss of `cut` (the
    /// higher of the two), and `cut` the loss of every other rank.
    void cut_and_wait(std::uint32_t at, std::uint32_t other) {
        const std::uint32_t cut = std::max(at, other);
        ASSERT_TRUE(ranks[at].cut_connection(other));
        for (std::uint32_t rank = 0; rank < ranks.size(); ++rank) {
            if (rank == cut) {
                continue;
            }
            if (ranks[rank].rank_alive(rank)) {  // A rank abandoned before reads nothing more.
                ASSERT_TRUE(ranks[rank].wait_for_loss_of(cut, guard_timeout)) << rank;
            }
            ASSERT_TRUE(ranks[cut].wait_for_loss_of(rank, guard_timeout)) << rank;
        }
    }
    /// What rank `reader` reads of a copy of rank `owner`'s shared memory into its own.
    Result<std::vector<std::byte>> read_copy(std::uint32_t reader, std::uint32_t owner) {
        Handle mine = *devices[reader].allocate(64);
        EXPECT_TRUE(devices[reader].copy(theirs.at({reader, owner}), mine));
        return devices[reader].read(mine);
    }
    /// Rank `from` sends 8 bytes of `value` to rank `to`, on threads of their own: what `to`
    /// received, or the first error.
    Result<std::vector<std::byte>> send_between(std::uint32_t from, std::uint32_t to,
                                                std::uint8_t value) {
        Handle source = *devices[from].allocate(8);
        EXPECT_TRUE(devices[from].write(source, std::vector<std::byte>(8, std::byte{value})));
        Handle target = *devices[to].allocate(8);
        auto sent = std::async(std::launch::async, [&] { return ranks[from].send(to, source); });
        const Status received = ranks[to].recv(from, target);
        const Status send = sent.get();
        if (!send || !received) {
            return !send ? send.error() : received.error();
        }
        return devices[to].read(target);
    }

    std::vector<Job> ranks;
    std::vector<Client> devices;
    std::string folder;
    /// Each rank's shared memory.
    std::vector<Handle> own;
    /// The other ranks' shared memory, by (the rank holding it, its owner).
    std::map<std::pair<std::uint32_t, std::uint32_t>, Handle> theirs;
};

TEST_F(CutRanks, a_cut_between_two_living_ranks_cuts_off_the_higher_and_each_sees_the_other_lost) {
    join(2);
    cut_and_wait(0, 1);
    const RankLoss seen_by_lower = expect_loss(ranks[0], 1, RankEnd::cut_off, 0);
    EXPECT_EQ(seen_by_lower.pid, ::getpid());
    EXPECT_THAT(seen_by_lower.describe(), HasSubstr(was_cut_off(1, 0)));
    const RankLoss seen_by_higher = expect_loss(ranks[1], 0, RankEnd::this_rank_cut_off, 0);
    EXPECT_THAT(seen_by_higher.describe(),
                HasSubstr("rank 0 (pid " + std::to_string(::getpid()) +
                          ") is out of this rank's reach: " + cut_off_words(0)));
    // One job on both sides: rank 0 alone is in it.
    EXPECT_TRUE(ranks[0].rank_alive(0));
    EXPECT_FALSE(ranks[0].rank_alive(1));
    EXPECT_FALSE(ranks[1].rank_alive(1));
    EXPECT_FALSE(ranks[1].rank_alive(0));
    EXPECT_EQ(ranks[0].lost_ranks().size(), 1u);
    EXPECT_EQ(ranks[1].lost_ranks().size(), 1u);
}

TEST_F(CutRanks, a_rank_cut_off_refuses_every_job_call_saying_which_connection_was_lost) {
    join(2);
    Handle eight = *devices[1].allocate(8);
    Handle sixteen = *devices[1].allocate(16);
    Result<Event> event = devices[1].record_event(devices[1].default_stream());
    ASSERT_TRUE(event.ok()) << event.error().report();
    cut_and_wait(0, 1);
    Job& cut = ranks[1];
    const std::vector<std::pair<std::string, Status>> calls = {
        {"barrier", cut.barrier(guard_timeout)},
        {"exchange", status_of(cut.exchange("value", guard_timeout))},
        {"publish", cut.publish("late", eight)},
        {"publish", cut.publish("late-event", *event)},
        {"withdraw", cut.withdraw(name_of(1))},
        {"lookup", status_of(cut.lookup(name_of(0), guard_timeout))},
        {"lookup_event", status_of(cut.lookup_event("any", guard_timeout))},
        {"all-reduce", cut.all_reduce(eight, ElementType::i64, ReduceOp::sum, guard_timeout)},
        {"broadcast", cut.broadcast(eight, 0, guard_timeout)},
        {"all-gather", cut.all_gather(eight, sixteen, guard_timeout)},
        {"reduce-scatter",
         cut.reduce_scatter(sixteen, eight, ElementType::i64, ReduceOp::sum, guard_timeout)},
        {"send", cut.send(0, eight, guard_timeout)},
        {"recv", cut.recv(0, eight, guard_timeout)},
    };
    for (const auto& [call, status] : calls) {
        ASSERT_FALSE(status.ok()) << call;
        EXPECT_EQ(status.error().kind(), ErrorKind::DeviceLost) << call;
        EXPECT_THAT(status.error().message(), HasSubstr(call + ": " + cut_off_words(0))) << call;
    }
    // Refused before anything: its own publication stands, as its own memory.
    Result<std::vector<std::byte>> read = devices[1].read(own[1]);
    ASSERT_TRUE(read.ok()) << read.error().report();
    EXPECT_EQ((*read)[0], std::byte{11});
}

TEST_F(CutRanks, a_rank_cut_off_keeps_its_device_and_reads_every_other_ranks_memory_as_lost) {
    join(2);
    cut_and_wait(1, 0);  // Cut at the higher end: the same rank goes.
    expect_loss(ranks[0], 1, RankEnd::cut_off, 0);
    Handle local = filled(1, 9);
    Result<std::vector<std::byte>> read = devices[1].read(local);
    ASSERT_TRUE(read.ok()) << read.error().report();
    EXPECT_EQ((*read)[63], std::byte{9});
    read = read_copy(1, 0);  // D1, from its side: the other ranks are lost to it.
    ASSERT_FALSE(read.ok());
    EXPECT_EQ(read.error().kind(), ErrorKind::Unwritten);
    EXPECT_THAT(read.error().report(), HasSubstr("DeviceLost: device 0 of rank 0 is lost"));
    EXPECT_THAT(read.error().report(), HasSubstr(cut_off_words(0)));
    read = read_copy(0, 1);  // D1: rank 0's work reading the cut-off rank's memory is skipped.
    ASSERT_FALSE(read.ok());
    EXPECT_EQ(read.error().kind(), ErrorKind::Unwritten);
    EXPECT_THAT(read.error().report(), HasSubstr("DeviceLost: device 0 of rank 1 is lost"));
    EXPECT_THAT(read.error().report(), HasSubstr(was_cut_off(1, 0)));
    read = devices[0].read(filled(0, 3));  // Rank 0's own work goes on.
    ASSERT_TRUE(read.ok()) << read.error().report();
    EXPECT_EQ((*read)[0], std::byte{3});
}

TEST_F(CutRanks, no_work_crosses_the_cut_to_write_the_other_sides_memory) {
    join(2);
    cut_and_wait(0, 1);
    // D1 for writes too: a kernel binding a lost device's memory is skipped, whatever it does
    // with it, so neither side's bytes change under work the other side's job no longer sees.
    for (const auto& [writer, owner] : {std::pair(0u, 1u), std::pair(1u, 0u)}) {
        ASSERT_TRUE(devices[writer].launch("fill", LaunchConfig::linear(64),
                                           {{theirs.at({writer, owner}), AccessMode::Write}},
                                           KernelArgs().u64(99)));
        ASSERT_TRUE(devices[writer].sync());
        Result<std::vector<std::byte>> read = devices[owner].read(own[owner]);
        ASSERT_TRUE(read.ok()) << read.error().report();
        EXPECT_EQ((*read)[0], std::byte{static_cast<unsigned char>(10 + owner)}) << owner;
    }
}

TEST_F(CutRanks,
       the_other_ranks_of_three_go_on_together_and_read_the_cut_off_ranks_memory_as_lost) {
    join(3);
    cut_and_wait(0, 1);
    for (std::uint32_t rank : {0u, 2u}) {
        expect_loss(ranks[rank], 1, RankEnd::cut_off, 0);
        EXPECT_TRUE(ranks[rank].rank_alive(rank == 0 ? 2 : 0)) << rank;
        EXPECT_EQ(ranks[rank].lost_ranks().size(), 1u) << rank;
        Result<std::vector<std::byte>> read = read_copy(rank, 1);
        ASSERT_FALSE(read.ok());
        EXPECT_THAT(read.error().report(), HasSubstr("DeviceLost: device 0 of rank 1 is lost"));
        EXPECT_THAT(read.error().report(), HasSubstr(was_cut_off(1, 0)));
    }
    for (std::uint32_t rank : {0u, 2u}) {
        expect_loss(ranks[1], rank, RankEnd::this_rank_cut_off, 0);
    }
    // Ranks 0 and 2 still reach each other: memory shared before, and a send between the two.
    Result<std::vector<std::byte>> read = read_copy(2, 0);
    ASSERT_TRUE(read.ok()) << read.error().report();
    EXPECT_EQ((*read)[0], std::byte{10});
    read = send_between(0, 2, 7);
    ASSERT_TRUE(read.ok()) << read.error().report();
    EXPECT_EQ((*read)[7], std::byte{7});
    // A meeting of every rank fails with the loss on each rank that meets, never a hang.
    auto other = std::async(std::launch::async, [&] { return ranks[0].barrier(guard_timeout); });
    for (const Status& barrier : {ranks[2].barrier(guard_timeout), other.get()}) {
        ASSERT_FALSE(barrier.ok());
        EXPECT_EQ(barrier.error().kind(), ErrorKind::DeviceLost);
        EXPECT_THAT(barrier.error().message(), HasSubstr(was_cut_off(1, 0)));
    }
}

TEST_F(CutRanks, a_cut_between_two_higher_ranks_cuts_off_the_higher_of_those_two) {
    join(3);
    cut_and_wait(2, 1);
    for (std::uint32_t rank : {0u, 1u}) {
        // The lost connection was rank 1's, on every rank.
        const RankLoss seen = expect_loss(ranks[rank], 2, RankEnd::cut_off, 1);
        EXPECT_THAT(seen.describe(), HasSubstr(was_cut_off(2, 1)));
        expect_loss(ranks[2], rank, RankEnd::this_rank_cut_off, 1);
    }
    EXPECT_TRUE(ranks[0].rank_alive(1));
    EXPECT_TRUE(ranks[1].rank_alive(0));
    Result<std::vector<std::byte>> read = send_between(1, 0, 5);
    ASSERT_TRUE(read.ok()) << read.error().report();
    EXPECT_EQ((*read)[0], std::byte{5});
}

TEST_F(CutRanks, a_lower_rank_abandoned_is_a_death_and_cuts_no_one_off) {
    join(3);
    ranks[0].abandon();
    for (std::uint32_t rank : {1u, 2u}) {
        expect_loss(ranks[rank], 0, RankEnd::abandoned, 0);
        EXPECT_TRUE(ranks[rank].rank_alive(rank)) << rank;
        EXPECT_EQ(ranks[rank].lost_ranks().size(), 1u) << rank;
    }
    // Ranks 1 and 2 stay in the job together, and their calls are not refused.
    Result<std::vector<std::byte>> read = send_between(2, 1, 4);
    ASSERT_TRUE(read.ok()) << read.error().report();
    EXPECT_EQ((*read)[0], std::byte{4});
    auto other = std::async(std::launch::async, [&] { return ranks[2].barrier(guard_timeout); });
    for (const Status& barrier : {ranks[1].barrier(guard_timeout), other.get()}) {
        ASSERT_FALSE(barrier.ok());
        EXPECT_THAT(barrier.error().message(), HasSubstr("was abandoned"));
        EXPECT_THAT(barrier.error().message(), Not(HasSubstr("cut off")));
    }
}

TEST_F(CutRanks, a_rank_cut_off_and_then_abandoned_is_reported_lost_once) {
    join(3);
    cut_and_wait(0, 1);
    ranks[1].abandon();
    // A meeting of ranks 0 and 2 after the abandon: anything rank 1's end could still bring
    // would have come before it (its connections were closed at the cut).
    Result<std::vector<std::byte>> read = send_between(0, 2, 6);
    ASSERT_TRUE(read.ok()) << read.error().report();
    for (std::uint32_t rank : {0u, 2u}) {
        const std::vector<RankLoss> lost = ranks[rank].lost_ranks();
        ASSERT_EQ(lost.size(), 1u) << rank;
        EXPECT_EQ(lost[0].rank, 1u);
        EXPECT_EQ(lost[0].how, RankEnd::cut_off);
    }
    EXPECT_EQ(ranks[1].lost_ranks().size(), 2u);
}

TEST_F(CutRanks, bad_cuts_are_refused_and_change_nothing) {
    join(3);
    const auto refused = [](const Status& status, const std::string& words) {
        ASSERT_FALSE(status.ok()) << words;
        EXPECT_EQ(status.error().kind(), ErrorKind::InvalidArgument);
        EXPECT_THAT(status.error().message(), HasSubstr("cut_connection: " + words));
    };
    refused(ranks[0].cut_connection(3), "rank 3 is not another rank of this job of 3 ranks");
    refused(ranks[0].cut_connection(0), "rank 0 is not another rank of this job of 3 ranks");
    ranks[2].abandon();
    ASSERT_TRUE(ranks[0].wait_for_loss_of(2, guard_timeout));
    refused(ranks[0].cut_connection(2), "rank 2 is lost to this rank already: rank 2 (pid " +
                                            std::to_string(::getpid()) + ") was abandoned");
    refused(ranks[2].cut_connection(0), "this rank left the job");
    // Nothing changed: ranks 0 and 1 are in the job, each with one loss, and meet.
    EXPECT_TRUE(ranks[0].rank_alive(1));
    EXPECT_TRUE(ranks[1].rank_alive(0));
    EXPECT_EQ(ranks[0].lost_ranks().size(), 1u);
    Result<std::vector<std::byte>> read = send_between(0, 1, 2);
    ASSERT_TRUE(read.ok()) << read.error().report();
    // Once cut, neither end can cut the connection again.
    cut_and_wait(0, 1);
    refused(ranks[0].cut_connection(1),
            "rank 1 is lost to this rank already: " + was_cut_off(1, 0));
    refused(ranks[1].cut_connection(0), "this rank has no connection to cut: " + cut_off_words(0));
}

// The same on two ranks that are processes of their own: this process is rank 0, the rank
// process (sim_job_rank) rank 1, or the other way round.

TEST_F(TwoRanks, a_connection_cut_between_two_living_processes_cuts_off_the_higher_rank) {
    const std::optional<Handle> theirs = peers_memory("theirs", 4);
    ASSERT_TRUE(theirs);
    share_with_peer("mine", filled(5));
    ASSERT_TRUE(job->cut_connection(1));
    const RankLoss seen = expect_loss(*job, 1, RankEnd::cut_off, 0);
    EXPECT_THAT(seen.describe(),
                HasSubstr("rank 1 (pid " + std::to_string(peer.pid) +
                          ") was cut off from the job: its connection to rank 0 was lost"));
    EXPECT_THAT(peer.ask("loss 0"),
                StartsWith("loss this_rank_cut_off 0: rank 0 (pid " + std::to_string(::getpid()) +
                           ") is out of this rank's reach: " + cut_off_words(0)));
    EXPECT_EQ(peer.ask("alive 1"), "false");
    EXPECT_TRUE(job->rank_alive(0));
    EXPECT_THAT(peer.ask("barrier"), StartsWith("error DeviceLost: barrier: " + cut_off_words(0)));
    EXPECT_THAT(peer.ask("lookup other"),
                StartsWith("error DeviceLost: lookup: " + cut_off_words(0)));
    // Its device works on; what it reads of rank 0's memory is lost.
    EXPECT_EQ(peer.ask("alloc own"), "ok");
    EXPECT_EQ(peer.ask("fill own 7"), "ok");
    EXPECT_THAT(peer.ask("read own"), StartsWith("bytes 7"));
    const std::string copied = peer.ask("copy mine");
    EXPECT_THAT(copied, StartsWith("error Unwritten: "));
    EXPECT_THAT(copied, HasSubstr("device 0 of rank 0"));
    // D1 here: work reading its memory is skipped with its loss.
    Handle copy = *device->allocate(64);
    ASSERT_TRUE(device->copy(*theirs, copy));
    Result<std::vector<std::byte>> read = device->read(copy);
    ASSERT_FALSE(read.ok());
    EXPECT_THAT(read.error().report(), HasSubstr("DeviceLost: device 0 of rank 1 is lost"));
    EXPECT_THAT(read.error().report(), HasSubstr("was cut off from the job"));
}

TEST_F(TwoRanks, a_connection_cut_at_the_higher_processs_end_cuts_that_process_off) {
    EXPECT_EQ(peer.ask("cut 0"), "ok");
    expect_loss(*job, 1, RankEnd::cut_off, 0);
    EXPECT_THAT(peer.ask("loss 0"), StartsWith("loss this_rank_cut_off 0: "));
    EXPECT_THAT(peer.ask("cut 0"),
                StartsWith("error InvalidArgument: cut_connection: this rank has no connection to "
                           "cut: " +
                           cut_off_words(0)));
}

TEST_F(TwoRanks, a_cut_rank_that_is_then_killed_is_reported_lost_once) {
    ASSERT_TRUE(job->cut_connection(1));
    ASSERT_TRUE(job->wait_for_loss_of(1, guard_timeout));
    EXPECT_THAT(peer.ask("loss 0"), StartsWith("loss this_rank_cut_off 0: "));
    kill_peer();  // Its connection closed at the cut: its death has nothing left to close.
    const std::vector<RankLoss> lost = job->lost_ranks();
    ASSERT_EQ(lost.size(), 1u);
    EXPECT_EQ(lost[0].how, RankEnd::cut_off);
}

/// Two ranks of their own processes where the rank process is rank 0 and this process rank 1.
class TwoRanksLowerPeer : public TwoRanks {
protected:
    TwoRanksLowerPeer() { peer_rank = 0; }
};

TEST_F(TwoRanksLowerPeer, a_lower_rank_killed_is_a_death_and_not_a_lost_connection) {
    kill_peer();
    expect_loss(*job, 0, RankEnd::killed, SIGKILL);
    EXPECT_TRUE(job->rank_alive(1));  // Not cut off: its calls meet the loss, not a refusal.
    Result<std::vector<std::string>> exchanged = job->exchange("x", guard_timeout);
    ASSERT_FALSE(exchanged.ok());
    EXPECT_EQ(exchanged.error().kind(), ErrorKind::DeviceLost);
    EXPECT_THAT(exchanged.error().message(), HasSubstr("was killed by signal 9"));
    EXPECT_THAT(exchanged.error().message(), Not(HasSubstr("cut off")));
}

TEST_F(TwoRanksLowerPeer, a_lower_process_that_cuts_its_connection_stays_and_this_one_is_cut_off) {
    EXPECT_EQ(peer.ask("cut 1"), "ok");
    expect_loss(*job, 0, RankEnd::this_rank_cut_off, 0);
    EXPECT_THAT(peer.ask("loss 1"),
                StartsWith("loss cut_off 0: rank 1 (pid " + std::to_string(::getpid()) +
                           ") was cut off from the job: its connection to rank 0 was lost"));
    EXPECT_EQ(peer.ask("alive 0"), "true");
    EXPECT_FALSE(job->rank_alive(1));
    const Status barrier = job->barrier(guard_timeout);
    ASSERT_FALSE(barrier.ok());
    EXPECT_EQ(barrier.error().kind(), ErrorKind::DeviceLost);
    EXPECT_THAT(barrier.error().message(), HasSubstr("barrier: " + cut_off_words(0)));
    Result<std::vector<std::byte>> read = device->read(filled(3));  // Its device works on.
    ASSERT_TRUE(read.ok()) << read.error().report();
    EXPECT_EQ((*read)[0], std::byte{3});
}

}  // namespace
}  // namespace tandem
