// The collectives of a job across processes on the simulator: this test is rank 0 of a job of
// two, and rank 1 is a process of its own (sim_job_rank, two_ranks.hpp). Each collective gives
// every rank its result; a claimed byte of any rank's source moves and reduces nothing, and
// claims every rank's destination with the root named on its rank (K1); a rank or device lost
// in the middle fails the call on every rank with `DeviceLost` naming it, never a hang (K5). A
// send and its receive follow K2: a claimed source is refused by the sender, which claims
// nothing, and claims the receiver's target.

#include "two_ranks.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <future>
#include <utility>

namespace tandem {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace tandem::testing;

/// `values` on this rank's device.
Handle floats(Client& device, const std::vector<float>& values) {
    Handle buffer = *device.allocate(values.size() * sizeof(float));
    std::vector<std::byte> bytes(values.size() * sizeof(float));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    EXPECT_TRUE(device.write(buffer, bytes));
    return buffer;
}

/// `size` bytes of `value` on this rank's device.
Handle bytes_of(Client& device, std::size_t size, std::uint8_t value) {
    Handle buffer = *device.allocate(size);
    EXPECT_TRUE(device.write(buffer, std::vector<std::byte>(size, std::byte{value})));
    return buffer;
}

/// The floats of `buffer`, failing the test when the read fails.
std::vector<float> read_floats(Client& device, const Handle& buffer) {
    Result<std::vector<std::byte>> read = device.read(buffer);
    if (!read) {
        ADD_FAILURE() << read.error().report();
        return {};
    }
    std::vector<float> values(read->size() / sizeof(float));
    std::memcpy(values.data(), read->data(), values.size() * sizeof(float));
    return values;
}

/// This rank's `call` on a thread while the peer answers `command`: both outcomes.
std::pair<Status, std::string> together(RankProcess& peer, const std::function<Status()>& call,
                                        const std::string& command) {
    auto mine = std::async(std::launch::async, call);
    std::string theirs = peer.ask(command);
    return {mine.get(), std::move(theirs)};
}

/// Expects a read of `buffer` to fail on the fail kernel's `code` on rank 1's device, through the
/// hop from rank 1.
void expect_claimed_from_rank_1(Client& device, const Handle& buffer, std::uint32_t code) {
    Result<std::vector<std::byte>> read = device.read(buffer);
    ASSERT_FALSE(read.ok()) << "rank 0 took bytes of a claimed source";
    EXPECT_EQ(read.error().kind(), ErrorKind::Unwritten);
    EXPECT_THAT(read.error().report(),
                HasSubstr("code " + std::to_string(code) + " on device 0 of rank 1"));
    // The hop: this rank's copy of rank 1's memory, skipped.
    EXPECT_THAT(read.error().report(),
                HasSubstr("skipped 'peer copy from device 0' on device 0 of rank 0"));
    EXPECT_THAT(read.error().report(), HasSubstr("of rank 1 bytes"));
}

/// Expects a collective whose source on rank 1 was claimed by the fail kernel's `code` to have
/// been agreed on (`done`: the outcome is in the claims), and both ranks' destinations to read
/// as claimed with it: `theirs`, the peer's answer, and `buffer` of this rank.
void expect_claimed_on_both_ranks(const Status& done, const std::string& theirs, Client& device,
                                  const Handle& buffer, std::uint32_t code) {
    ASSERT_TRUE(done.ok()) << done.error().report();
    EXPECT_THAT(theirs, StartsWith("error Unwritten"));
    EXPECT_THAT(theirs, HasSubstr("code " + std::to_string(code) + " on device 0 of rank 1"));
    expect_claimed_from_rank_1(device, buffer, code);
}

/// Expects `call` of rank 0 to fail with `DeviceLost` naming rank 1 when rank 1 dies instead of
/// taking part: never a hang.
void expect_a_dead_rank_fails(RankProcess& peer, const std::function<Status()>& call) {
    auto mine = std::async(std::launch::async, call);
    peer.say("die");
    const Status done = mine.get();
    ASSERT_FALSE(done.ok());
    EXPECT_EQ(done.error().kind(), ErrorKind::DeviceLost);
    EXPECT_THAT(done.error().message(), HasSubstr("rank 1"));
    EXPECT_EQ(WEXITSTATUS(peer.reap()), 3);
    peer.pid = -1;
}

TEST_F(TwoRanks, an_all_reduce_across_processes_gives_every_rank_the_sum) {
    Handle mine = floats(*device, {1, 2, 3, 4});
    const auto [done, theirs] = together(
        peer, [&] { return job->all_reduce(mine, ElementType::f32, ReduceOp::sum); },
        "allreduce 10");
    ASSERT_TRUE(done.ok()) << done.error().report();
    EXPECT_EQ(theirs, "floats 11 12 13 14");
    EXPECT_EQ(read_floats(*device, mine), (std::vector<float>{11, 12, 13, 14}));
}

TEST_F(TwoRanks, a_claimed_source_on_one_rank_claims_every_ranks_buffer) {
    Handle mine = floats(*device, {1, 2, 3, 4});
    const auto [done, theirs] = together(
        peer, [&] { return job->all_reduce(mine, ElementType::f32, ReduceOp::sum); },
        "allreduce-claimed 44");
    expect_claimed_on_both_ranks(done, theirs, *device, mine, 44);
}

TEST_F(TwoRanks, a_rank_lost_before_its_part_fails_the_all_reduce_naming_it) {
    Handle mine = floats(*device, {1, 2, 3, 4});
    expect_a_dead_rank_fails(
        peer, [&] { return job->all_reduce(mine, ElementType::f32, ReduceOp::sum); });
}

TEST_F(TwoRanks, a_broadcast_gives_every_rank_the_roots_bytes_from_either_root) {
    Handle mine = bytes_of(*device, 8, 5);
    auto [done, theirs] = together(
        peer, [&] { return job->broadcast(mine, 0); }, "broadcast 0 9");
    ASSERT_TRUE(done.ok()) << done.error().report();
    EXPECT_EQ(theirs, "bytes 5 5 5 5 5 5 5 5");
    std::tie(done, theirs) = together(
        peer, [&] { return job->broadcast(mine, 1); }, "broadcast 1 9");
    ASSERT_TRUE(done.ok()) << done.error().report();
    EXPECT_EQ(theirs, "bytes 9 9 9 9 9 9 9 9");
    EXPECT_EQ(*device->read(mine), std::vector<std::byte>(8, std::byte{9}));
}

TEST_F(TwoRanks, a_broadcast_of_a_claimed_root_claims_every_ranks_buffer) {
    Handle mine = bytes_of(*device, 8, 5);
    const auto [done, theirs] = together(
        peer, [&] { return job->broadcast(mine, 1); }, "broadcast-claimed 1 45");
    expect_claimed_on_both_ranks(done, theirs, *device, mine, 45);
}

TEST_F(TwoRanks, an_all_gather_puts_rank_rs_input_at_chunk_r_of_every_output) {
    Handle input = bytes_of(*device, 8, 3);
    Handle output = bytes_of(*device, 16, 0);
    const auto [done, theirs] = together(
        peer, [&] { return job->all_gather(input, output); }, "allgather 7");
    ASSERT_TRUE(done.ok()) << done.error().report();
    EXPECT_EQ(theirs, "bytes 3 3 3 3 3 3 3 3 7 7 7 7 7 7 7 7");
    std::vector<std::byte> expected(8, std::byte{3});
    expected.resize(16, std::byte{7});
    EXPECT_EQ(*device->read(output), expected);
}

// Atomic: this rank's own chunk of its output is not gathered either.
TEST_F(TwoRanks, an_all_gather_with_a_claimed_input_on_one_rank_claims_all_of_every_output) {
    Handle input = bytes_of(*device, 8, 3);
    Handle output = bytes_of(*device, 16, 0);
    const auto [done, theirs] = together(
        peer, [&] { return job->all_gather(input, output); }, "allgather-claimed 46");
    expect_claimed_on_both_ranks(done, theirs, *device, *output.slice(0, 8), 46);
}

/// This rank's reduce-scatter (a sum) of the floats 1, 2, 3, 4 into `output`, while the peer
/// answers `command`.
std::pair<Status, std::string> reduce_scatter_1_to_4(Job& job, Client& device, RankProcess& peer,
                                                     const Handle& output,
                                                     const std::string& command) {
    Handle input = floats(device, {1, 2, 3, 4});
    return together(
        peer, [&] { return job.reduce_scatter(input, output, ElementType::f32, ReduceOp::sum); },
        command);
}

TEST_F(TwoRanks, a_reduce_scatter_gives_rank_r_chunk_r_of_the_sum) {
    Handle output = floats(*device, {0, 0});
    const auto [done, theirs] =
        reduce_scatter_1_to_4(*job, *device, peer, output, "reducescatter 10");
    ASSERT_TRUE(done.ok()) << done.error().report();
    EXPECT_EQ(theirs, "floats 15 17");
    EXPECT_EQ(read_floats(*device, output), (std::vector<float>{11, 13}));
}

// The peer claims only chunk 0 of its input, the chunk this rank's output takes: the peer's own
// output, of clean chunks, is claimed all the same.
TEST_F(TwoRanks, a_reduce_scatter_with_one_claimed_chunk_claims_every_ranks_output) {
    Handle output = floats(*device, {0, 0});
    const auto [done, theirs] =
        reduce_scatter_1_to_4(*job, *device, peer, output, "reducescatter-claimed 47");
    expect_claimed_on_both_ranks(done, theirs, *device, output, 47);
}

TEST_F(TwoRanks, a_rank_lost_before_its_part_fails_the_broadcast_naming_it) {
    Handle mine = bytes_of(*device, 8, 5);
    expect_a_dead_rank_fails(peer, [&] { return job->broadcast(mine, 0); });
}

TEST_F(TwoRanks, a_rank_lost_before_its_part_fails_the_all_gather_naming_it) {
    Handle input = bytes_of(*device, 8, 3);
    Handle output = bytes_of(*device, 16, 0);
    expect_a_dead_rank_fails(peer, [&] { return job->all_gather(input, output); });
}

TEST_F(TwoRanks, a_rank_lost_before_its_part_fails_the_reduce_scatter_naming_it) {
    Handle input = floats(*device, {1, 2, 3, 4});
    Handle output = floats(*device, {0, 0});
    expect_a_dead_rank_fails(
        peer, [&] { return job->reduce_scatter(input, output, ElementType::f32, ReduceOp::sum); });
}

// The peer's device is lost at the unit of work after its buffer's write: the copy of its part,
// after two agreements. Every rank's call fails with the loss, the rank named.
TEST_F(TwoRanks, a_device_lost_in_the_middle_of_a_collective_fails_it_on_every_rank) {
    Handle mine = bytes_of(*device, 8, 5);
    ASSERT_EQ(peer.ask("lose-after 1"), "ok");
    const auto [done, theirs] = together(
        peer, [&] { return job->broadcast(mine, 0); }, "broadcast 0 9");
    ASSERT_FALSE(done.ok());
    EXPECT_EQ(done.error().kind(), ErrorKind::DeviceLost) << done.error().report();
    EXPECT_THAT(done.error().message(), HasSubstr("rank 1"));
    EXPECT_THAT(theirs, StartsWith("error DeviceLost"));
    EXPECT_EQ(*device->read(mine), std::vector<std::byte>(8, std::byte{5}));
}

TEST_F(TwoRanks, sizes_that_differ_between_ranks_fail_the_collective_on_every_rank) {
    Handle input = bytes_of(*device, 16, 3);  // The peer's is 8 bytes.
    Handle output = bytes_of(*device, 32, 0);
    const auto [done, theirs] = together(
        peer, [&] { return job->all_gather(input, output); }, "allgather 7");
    ASSERT_FALSE(done.ok());
    EXPECT_EQ(done.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_THAT(done.error().message(), HasSubstr("rank 1's input has 8 bytes"));
    EXPECT_THAT(theirs, StartsWith("error InvalidArgument"));
    EXPECT_THAT(theirs, HasSubstr("rank 1's input has 8 bytes"));
}

// A call this rank cannot take is refused before any rank is met: it takes no place in the
// job's order of calls, so the next call meets the peer's first.
TEST_F(TwoRanks, a_collective_this_rank_cannot_take_is_refused_without_meeting_any_rank) {
    Handle mine = bytes_of(*device, 8, 5);
    Handle odd = bytes_of(*device, 6, 5);
    std::shared_ptr<Runtime> other = *open_runtime({.backend = "sim", .devices = 1});
    Handle foreign = *other->client(0).allocate(8);
    const std::vector<std::pair<const char*, std::function<Status()>>> refused{
        {"a root past the world size", [&] { return job->broadcast(mine, 2); }},
        {"an output of the input's size", [&] { return job->all_gather(mine, mine); }},
        {"no whole number of floats",
         [&] { return job->all_reduce(odd, ElementType::f32, ReduceOp::sum); }},
        {"an input not world size times the output",
         [&] { return job->reduce_scatter(mine, mine, ElementType::i32, ReduceOp::max); }},
        {"a buffer of another runtime", [&] { return job->broadcast(foreign, 0); }},
    };
    for (const auto& [why, call] : refused) {
        const Status status = call();
        ASSERT_FALSE(status.ok()) << why;
        EXPECT_EQ(status.error().kind(), ErrorKind::InvalidArgument) << why;
    }
    const auto [done, theirs] = together(
        peer, [&] { return job->broadcast(mine, 0); }, "broadcast 0 9");
    ASSERT_TRUE(done.ok()) << done.error().report();
    EXPECT_EQ(theirs, "bytes 5 5 5 5 5 5 5 5");
}

TEST_F(TwoRanks, a_send_lands_in_the_matching_receive_either_way) {
    Handle mine = bytes_of(*device, 8, 5);
    auto [done, theirs] = together(
        peer, [&] { return job->send(1, mine); }, "recv 0");
    ASSERT_TRUE(done.ok()) << done.error().report();
    EXPECT_EQ(theirs, "bytes 5 5 5 5 5 5 5 5");
    Handle target = bytes_of(*device, 8, 0);
    std::tie(done, theirs) = together(
        peer, [&] { return job->recv(1, target); }, "send 0 9");
    ASSERT_TRUE(done.ok()) << done.error().report();
    EXPECT_EQ(theirs, "ok");
    EXPECT_EQ(*device->read(target), std::vector<std::byte>(8, std::byte{9}));
}

// K2: the sender's source keeps the one failure it had (no new claim on the sender), and the
// receiver's target takes it with the hop.
TEST_F(TwoRanks, a_send_of_a_claimed_source_is_refused_and_claims_only_the_receivers_target) {
    Handle mine = bytes_of(*device, 8, 5);
    ASSERT_TRUE(device->launch("fail", LaunchConfig::linear(1), {{mine, AccessMode::Write}},
                               KernelArgs().u64(48)));
    const Result<std::vector<std::byte>> before = device->read(mine);
    const auto [done, theirs] = together(
        peer, [&] { return job->send(1, mine); }, "recv 0");
    ASSERT_FALSE(done.ok()) << "a claimed source was sent";
    EXPECT_EQ(done.error().kind(), ErrorKind::Unwritten);
    EXPECT_THAT(done.error().report(), HasSubstr("code 48 on device 0 of rank 0"));
    EXPECT_THAT(theirs, StartsWith("error Unwritten"));
    EXPECT_THAT(theirs, HasSubstr("code 48 on device 0 of rank 0"));
    const Result<std::vector<std::byte>> after = device->read(mine);
    ASSERT_FALSE(after.ok());
    const auto* had = after.error().details_as<UnwrittenDetails>();
    ASSERT_NE(had, nullptr);
    EXPECT_EQ(had->failure, before.error().details_as<UnwrittenDetails>()->failure);
    EXPECT_TRUE(had->chain.empty()) << after.error().report();
}

TEST_F(TwoRanks, a_receive_of_a_claimed_send_claims_its_target_and_one_that_lands_releases_it) {
    Handle target = bytes_of(*device, 8, 0);
    auto [done, theirs] = together(
        peer, [&] { return job->recv(1, target); }, "send-claimed 0 49");
    ASSERT_TRUE(done.ok()) << done.error().report();     // The outcome is in the claims.
    EXPECT_THAT(theirs, StartsWith("error Unwritten"));  // The sender's refusal.
    expect_claimed_from_rank_1(*device, target, 49);
    std::tie(done, theirs) = together(
        peer, [&] { return job->recv(1, target); }, "send 0 9");
    ASSERT_TRUE(done.ok()) << done.error().report();
    EXPECT_EQ(*device->read(target), std::vector<std::byte>(8, std::byte{9}));  // C3.
}

TEST_F(TwoRanks, a_rank_lost_before_its_send_fails_the_receive_naming_it) {
    Handle target = bytes_of(*device, 8, 0);
    expect_a_dead_rank_fails(peer, [&] { return job->recv(1, target); });
}

TEST_F(TwoRanks, a_send_and_a_receive_of_different_sizes_fail_on_both_ranks) {
    Handle mine = bytes_of(*device, 16, 5);  // The peer receives 8 bytes.
    const auto [done, theirs] = together(
        peer, [&] { return job->send(1, mine); }, "recv 0");
    ASSERT_FALSE(done.ok());
    EXPECT_EQ(done.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_THAT(done.error().message(), HasSubstr("rank 1: recv: rank 0's source has 16 bytes"));
    EXPECT_THAT(theirs, StartsWith("error InvalidArgument"));
}

// Refused before meeting the other end: the transfer takes no number, so the next send still
// meets the peer's first receive.
TEST_F(TwoRanks, a_transfer_this_rank_cannot_take_is_refused_without_meeting_the_other_end) {
    Handle mine = bytes_of(*device, 8, 5);
    std::shared_ptr<Runtime> other = *open_runtime({.backend = "sim", .devices = 1});
    Handle foreign = *other->client(0).allocate(8);
    const std::vector<std::pair<const char*, std::function<Status()>>> refused{
        {"a send to itself", [&] { return job->send(0, mine); }},
        {"a receive from a rank past the world size", [&] { return job->recv(2, mine); }},
        {"a buffer of another runtime", [&] { return job->send(1, foreign); }},
        {"a buffer of no bytes", [&] { return job->recv(1, *mine.slice(0, 0)); }},
    };
    for (const auto& [why, call] : refused) {
        const Status status = call();
        ASSERT_FALSE(status.ok()) << why;
        EXPECT_EQ(status.error().kind(), ErrorKind::InvalidArgument) << why;
    }
    const auto [done, theirs] = together(
        peer, [&] { return job->send(1, mine); }, "recv 0");
    ASSERT_TRUE(done.ok()) << done.error().report();
    EXPECT_EQ(theirs, "bytes 5 5 5 5 5 5 5 5");
}

}  // namespace
}  // namespace tandem
