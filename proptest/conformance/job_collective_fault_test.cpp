// The collectives of a job under faults, on its ranks simulated in this process (job_ranks.hpp):
// a rank's source claimed (K1, K2), a rank's part delayed, a rank's device lost during a call,
// and calls some rank cannot take (K5). The oracle (job_collective_faults.hpp): every rank ends
// the call with the same outcome, success with every destination claimed by the one root, or
// the same error kind and words. A rank ended in the middle of a call is job_rank_loss_test.cpp.
//
// The fault is always on the last rank (or rank 0, the rank that builds a reduction's result),
// so with three ranks a rank that neither failed nor built the result sees it too.

#include "job_collective_faults.hpp"

namespace tandem::conformance {
namespace {

using ::testing::HasSubstr;

template <typename Kind>
class JobCollectiveFaults : public JobFaultFixture<Kind> {};
TYPED_TEST_SUITE(JobCollectiveFaults, JobRanksKinds, JobRanksNames);

// --- A rank's source claimed: K1 and K2 ---

TYPED_TEST(JobCollectiveFaults, k1_a_claimed_all_reduce_source_on_one_rank_claims_every_rank) {
    const std::vector<Handle> buffers = this->float_buffers(4);
    this->claim(this->last_rank(), buffers[this->last_rank()], 51);
    this->expect_claimed_everywhere(this->on_every_rank(this->sum_of(buffers)), buffers, 51,
                                    this->last_rank());
}

// Rank 0 folds the inputs: its own claimed input is skipped on its own device, and the result
// it never built claims every rank's buffer.
TYPED_TEST(JobCollectiveFaults, k1_a_claimed_source_on_the_folding_rank_claims_every_rank) {
    const std::vector<Handle> buffers = this->float_buffers(4);
    this->claim(0, buffers[0], 56);
    this->expect_claimed_everywhere(this->on_every_rank(this->sum_of(buffers)), buffers, 56, 0);
}

// Sources claimed on two ranks: every rank's buffer reads with the same failures, in the same
// order, whichever rank reads it.
TYPED_TEST(JobCollectiveFaults, k1_sources_claimed_on_two_ranks_read_alike_on_every_rank) {
    const std::vector<Handle> buffers = this->float_buffers(4);
    this->claim(0, buffers[0], 57);
    this->claim(this->last_rank(), buffers[this->last_rank()], 58);
    const std::vector<Status> outcomes = this->on_every_rank(this->sum_of(buffers));
    std::vector<std::vector<std::optional<std::uint32_t>>> roots(this->world_size());
    for (std::uint32_t rank = 0; rank < this->world_size(); ++rank) {
        ASSERT_TRUE(outcomes[rank]) << outcomes[rank].error().report();
        std::optional<Error> error = this->read_error(rank, buffers[rank]);
        ASSERT_TRUE(error) << "rank " << rank << " took bytes of a claimed source";
        if (const auto* several = error->details_as<SeveralDetails>()) {
            for (const Error& each : several->errors) {
                roots[rank].push_back(root_code(each));
            }
        } else {
            roots[rank].push_back(root_code(*error));
        }
        EXPECT_EQ(roots[rank], roots[0]) << "rank " << rank << ": " << error->report();
    }
    EXPECT_THAT(roots[0], ::testing::Contains(std::optional<std::uint32_t>(57)));
}

// Four claimed bytes of one rank's source claim every rank's buffer, all of it: the clean tail
// of every buffer too.
TYPED_TEST(JobCollectiveFaults, k1_a_partly_claimed_source_claims_all_of_every_buffer) {
    const std::vector<Handle> buffers = this->float_buffers(4);
    this->claim(this->last_rank(), *buffers[this->last_rank()].slice(0, 4), 59);
    const std::vector<Status> outcomes = this->on_every_rank(this->sum_of(buffers));
    std::vector<Handle> tails;
    for (const Handle& buffer : buffers) {
        tails.push_back(*buffer.slice(8, 8));
    }
    this->expect_claimed_everywhere(outcomes, tails, 59, this->last_rank());
}

// A claimed destination that is no source (a broadcast's buffer on a rank other than the root)
// takes the root's bytes, which release it (C3), on every rank.
TYPED_TEST(JobCollectiveFaults, a_broadcast_over_a_claimed_destination_releases_it) {
    const std::vector<Handle> buffers = this->ranked_bytes_on_every_rank(16);
    this->claim(this->last_rank(), buffers[this->last_rank()], 60);
    const std::vector<Status> outcomes = this->on_every_rank(this->broadcast_of(buffers, 0));
    for (std::uint32_t rank = 0; rank < this->world_size(); ++rank) {
        ASSERT_TRUE(outcomes[rank]) << outcomes[rank].error().report();
        EXPECT_EQ(this->read_bytes(rank, buffers[rank]), filled(16, 1)) << "rank " << rank;
    }
}

TYPED_TEST(JobCollectiveFaults, k1_a_broadcast_of_a_claimed_root_claims_every_rank) {
    const std::vector<Handle> buffers = this->same_bytes_on_every_rank(16, 7);
    const std::uint32_t root = this->last_rank();
    this->claim(root, buffers[root], 52);
    const std::vector<Status> outcomes = this->on_every_rank(this->broadcast_of(buffers, root));
    // The root's buffer is the result: it keeps its own claim and gains no hop.
    for (std::uint32_t rank = 0; rank < this->world_size(); ++rank) {
        this->expect_claimed_on(rank, outcomes[rank], buffers[rank], 52, root, rank != root);
    }
}

// Atomic: every output is claimed all of it, the chunks of clean inputs too.
TYPED_TEST(JobCollectiveFaults,
           k1_an_all_gather_with_one_claimed_input_claims_all_of_every_output) {
    const auto gather = this->gather_buffers(8);
    this->claim(this->last_rank(), gather.inputs[this->last_rank()], 53);
    const std::vector<Status> outcomes = this->on_every_rank(this->all_gather_of(gather));
    std::vector<Handle> first_chunks;
    for (const Handle& output : gather.outputs) {
        first_chunks.push_back(*output.slice(0, 8));  // Rank 0's clean chunk.
    }
    this->expect_claimed_everywhere(outcomes, first_chunks, 53, this->last_rank());
    this->expect_claimed_everywhere(outcomes, gather.outputs, 53, this->last_rank());
}

// Only chunk 0 of the last rank's input is claimed, the chunk rank 0's output takes: every other
// rank's output, of clean chunks, is claimed all the same.
TYPED_TEST(JobCollectiveFaults, k1_a_reduce_scatter_with_one_claimed_chunk_claims_every_output) {
    const auto scatter = this->scatter_buffers();
    this->claim(this->last_rank(), *scatter.inputs[this->last_rank()].slice(0, 8), 54);
    const std::vector<Status> outcomes = this->on_every_rank(this->reduce_scatter_of(scatter));
    this->expect_claimed_everywhere(outcomes, scatter.outputs, 54, this->last_rank());
}

// K2: the sender refuses with its source's failure and claims nothing new; the receiver's
// target takes the failure with the hop, and its call succeeds.
TYPED_TEST(JobCollectiveFaults, k2_a_send_of_a_claimed_source_claims_only_the_receivers_target) {
    const std::uint32_t sender = this->last_rank();
    Handle source = this->bytes_on(sender, 16, 5);
    Handle target = this->bytes_on(0, 16, 0);
    this->claim(sender, source, 55);
    const std::optional<Error> before = this->read_error(sender, source);
    ASSERT_TRUE(before);
    const std::vector<Status> outcomes = this->send_and_receive(sender, source, target);
    ASSERT_FALSE(outcomes[sender]) << "a claimed source was sent";
    EXPECT_EQ(outcomes[sender].error().kind(), ErrorKind::Unwritten);
    EXPECT_EQ(root_code(outcomes[sender].error()), 55u);
    const std::optional<Error> after = this->read_error(sender, source);
    ASSERT_TRUE(after);
    EXPECT_EQ(unwritten(*after)->failure, unwritten(*before)->failure);
    EXPECT_TRUE(unwritten(*after)->chain.empty()) << after->report();
    this->expect_claimed_on(0, outcomes[0], target, 55, sender);
}

// --- A rank's part delayed ---

/// A delay of rank `rank`'s default stream: scheduler steps on the deterministic simulator,
/// microseconds on its threads. Either way the ranks wait for it; no rank relies on its length.
template <typename Fixture>
void delay(Fixture& test, std::uint32_t rank) {
    Client& device = test.device(rank);
    ASSERT_TRUE(device.inject(StreamDelay{device.default_stream(), 2'000}));
}

TYPED_TEST(JobCollectiveFaults, a_delayed_rank_still_gives_every_rank_the_right_all_reduce) {
    const std::vector<Handle> buffers = this->float_buffers(8);
    delay(*this, this->last_rank());
    const std::vector<Status> outcomes = this->on_every_rank(this->sum_of(buffers));
    for (std::uint32_t rank = 0; rank < this->world_size(); ++rank) {
        ASSERT_TRUE(outcomes[rank]) << outcomes[rank].error().report();
        EXPECT_EQ(this->template read_values<float>(rank, buffers[rank]),
                  std::vector<float>(8, this->sum_of_ranks()));
    }
}

// The delay is on rank 0, which builds the result: every rank waits for it.
TYPED_TEST(JobCollectiveFaults, a_delayed_root_still_gives_every_rank_the_right_all_gather) {
    const auto gather = this->gather_buffers(8);
    std::vector<std::byte> expected;
    for (std::uint32_t rank = 0; rank < this->world_size(); ++rank) {
        const std::vector<std::byte> mine = filled(8, static_cast<std::uint8_t>(rank + 1));
        expected.insert(expected.end(), mine.begin(), mine.end());
    }
    delay(*this, 0);
    const std::vector<Status> outcomes = this->on_every_rank(this->all_gather_of(gather));
    for (std::uint32_t rank = 0; rank < this->world_size(); ++rank) {
        ASSERT_TRUE(outcomes[rank]) << outcomes[rank].error().report();
        EXPECT_EQ(this->read_bytes(rank, gather.outputs[rank]), expected) << "rank " << rank;
    }
}

TYPED_TEST(JobCollectiveFaults, a_delayed_sender_still_lands_in_the_receive) {
    const std::uint32_t sender = this->last_rank();
    Handle source = this->bytes_on(sender, 16, 5);
    Handle target = this->bytes_on(0, 16, 0);
    delay(*this, sender);
    const std::vector<Status> outcomes = this->send_and_receive(sender, source, target);
    ASSERT_TRUE(outcomes[0]) << outcomes[0].error().report();
    ASSERT_TRUE(outcomes[sender]) << outcomes[sender].error().report();
    EXPECT_EQ(this->read_bytes(0, target), filled(16, 5));
}

// --- A rank's device lost during the call (K5) ---

// Rank 0's device is lost after one unit of work of the call: its copy of its own input into
// the result runs, its fold of rank 1's does not.
TYPED_TEST(JobCollectiveFaults, k5_the_folding_ranks_device_lost_mid_all_reduce_fails_every_rank) {
    const std::vector<Handle> buffers = this->float_buffers(4);
    ASSERT_TRUE(this->device(0).inject(DeviceLossFault{1}));
    this->expect_the_same_error(this->on_every_rank(this->sum_of(buffers)), ErrorKind::DeviceLost,
                                "rank 0");
    for (std::uint32_t rank = 1; rank < this->world_size(); ++rank) {
        EXPECT_EQ(this->template read_values<float>(rank, buffers[rank]),
                  std::vector<float>(4, static_cast<float>(rank + 1)))
            << "rank " << rank << " took a result that was never built";
    }
}

TYPED_TEST(JobCollectiveFaults, k5_a_ranks_device_lost_before_its_part_fails_every_rank) {
    const std::vector<Handle> buffers = this->float_buffers(4);
    ASSERT_TRUE(this->device(this->last_rank()).inject(DeviceLossFault{0}));
    this->expect_the_same_error(this->on_every_rank(this->sum_of(buffers)), ErrorKind::DeviceLost,
                                "rank " + std::to_string(this->last_rank()));
}

// Two ranks fail the same step: every rank reports the lower rank's failure, the failing ranks
// included.
TYPED_TEST(JobCollectiveFaults, k5_devices_lost_on_two_ranks_give_every_rank_the_lower_ranks_loss) {
    const std::vector<Handle> buffers = this->float_buffers(4);
    ASSERT_TRUE(this->device(0).inject(DeviceLossFault{0}));
    ASSERT_TRUE(this->device(this->last_rank()).inject(DeviceLossFault{0}));
    this->expect_the_same_error(this->on_every_rank(this->sum_of(buffers)), ErrorKind::DeviceLost,
                                "device 0 of rank 0");
}

// The sender's device is lost before its send: its step fails, and both ends report the loss
// in the same words.
TYPED_TEST(JobCollectiveFaults, k5_a_senders_device_lost_fails_the_send_and_the_receive_alike) {
    const std::uint32_t sender = this->last_rank();
    Handle source = this->bytes_on(sender, 16, 5);
    Handle target = this->bytes_on(0, 16, 0);
    ASSERT_TRUE(this->device(sender).inject(DeviceLossFault{0}));
    const std::vector<Status> outcomes = this->send_and_receive(sender, source, target);
    for (const std::uint32_t rank : {0U, sender}) {
        ASSERT_FALSE(outcomes[rank]) << "rank " << rank << " passed";
        EXPECT_EQ(outcomes[rank].error().kind(), ErrorKind::DeviceLost)
            << outcomes[rank].error().report();
        EXPECT_THAT(outcomes[rank].error().message(),
                    HasSubstr("device 0 of rank " + std::to_string(sender)));
        EXPECT_EQ(outcomes[rank].error().message(), outcomes[0].error().message());
    }
    EXPECT_EQ(this->read_bytes(0, target), filled(16, 0));
}

// --- Calls some rank cannot take (K5) ---

// Refused before any rank is met, on every rank: the call takes no place in the job's order, so
// the next broadcast of every rank meets the others'.
TYPED_TEST(JobCollectiveFaults, k5_a_bad_root_is_refused_on_every_rank_without_a_meeting) {
    const std::vector<Handle> buffers = this->ranked_bytes_on_every_rank(8);
    this->expect_the_same_error(
        this->on_every_rank(this->broadcast_of(buffers, this->world_size())),
        ErrorKind::InvalidArgument, "is not a rank of this job");
    const std::vector<Status> outcomes = this->on_every_rank(this->broadcast_of(buffers, 0));
    for (std::uint32_t rank = 0; rank < this->world_size(); ++rank) {
        ASSERT_TRUE(outcomes[rank]) << outcomes[rank].error().report();
        EXPECT_EQ(this->read_bytes(rank, buffers[rank]), filled(8, 1));
    }
}

// A send to no other rank is refused before meeting anyone: it takes no number, so the next
// send still meets the receiver's first receive.
TYPED_TEST(JobCollectiveFaults, k5_a_transfer_to_no_other_rank_is_refused_without_a_meeting) {
    const std::uint32_t sender = this->last_rank();
    Handle source = this->bytes_on(sender, 8, 4);
    Handle target = this->bytes_on(0, 8, 0);
    for (const std::uint32_t to : {sender, this->world_size()}) {
        const Status refused = this->job(sender).send(to, source, call_timeout);
        ASSERT_FALSE(refused) << "a send to rank " << to;
        EXPECT_EQ(refused.error().kind(), ErrorKind::InvalidArgument) << refused.error().report();
    }
    const std::vector<Status> outcomes = this->send_and_receive(sender, source, target);
    ASSERT_TRUE(outcomes[0]) << outcomes[0].error().report();
    ASSERT_TRUE(outcomes[sender]) << outcomes[sender].error().report();
    EXPECT_EQ(this->read_bytes(0, target), filled(8, 4));
}

// A receive of another size than the send fails on both ends with the receiver's words.
TYPED_TEST(JobCollectiveFaults, k5_a_send_and_a_receive_of_different_sizes_fail_on_both_alike) {
    const std::uint32_t sender = this->last_rank();
    Handle source = this->bytes_on(sender, 16, 4);
    Handle target = this->bytes_on(0, 8, 0);
    const std::vector<Status> outcomes = this->send_and_receive(sender, source, target);
    for (const std::uint32_t rank : {0U, sender}) {
        ASSERT_FALSE(outcomes[rank]) << "rank " << rank << " passed";
        EXPECT_EQ(outcomes[rank].error().kind(), ErrorKind::InvalidArgument);
        EXPECT_EQ(outcomes[rank].error().message(),
                  "rank 0: recv: rank " + std::to_string(sender) +
                      "'s source has 16 bytes, where 8 were expected");
    }
    EXPECT_EQ(this->read_bytes(0, target), filled(8, 0));
}

// The last rank's input is twice the others': the step that meets it fails on every rank.
TYPED_TEST(JobCollectiveFaults, k5_all_gather_sizes_that_differ_fail_on_every_rank_alike) {
    typename TestFixture::InputsAndOutputs gather;
    for (std::uint32_t rank = 0; rank < this->world_size(); ++rank) {
        const std::uint64_t size = rank == this->last_rank() ? 16 : 8;
        gather.inputs.push_back(this->bytes_on(rank, size, 3));
        gather.outputs.push_back(this->bytes_on(rank, size * this->world_size(), 0));
    }
    this->expect_the_same_error(this->on_every_rank(this->all_gather_of(gather)),
                                ErrorKind::InvalidArgument,
                                "rank " + std::to_string(this->last_rank()) + "'s input has");
}

// A bf16 buffer of an odd number of bytes holds no whole number of elements: refused on the rank
// that gives it before any rank is met, naming the element size, so the ranks' next all-reduce
// still meets.
TYPED_TEST(JobCollectiveFaults, k5_a_bf16_buffer_of_an_odd_count_of_bytes_is_refused_unmet) {
    const std::uint32_t rank = this->last_rank();
    Handle odd = this->bytes_on(rank, 7, 5);
    const Status refused =
        this->job(rank).all_reduce(odd, ElementType::bf16, ReduceOp::sum, call_timeout);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().kind(), ErrorKind::InvalidArgument) << refused.error().report();
    EXPECT_THAT(refused.error().message(), HasSubstr("of 2-byte elements"));
    EXPECT_EQ(this->read_bytes(rank, odd), filled(7, 5));
    const std::vector<Handle> buffers = this->float_buffers(4);
    const std::vector<Status> outcomes = this->on_every_rank(this->sum_of(buffers));
    for (std::uint32_t each = 0; each < this->world_size(); ++each) {
        ASSERT_TRUE(outcomes[each]) << outcomes[each].error().report();
        EXPECT_EQ(this->template read_values<float>(each, buffers[each]),
                  std::vector<float>(4, this->sum_of_ranks()));
    }
}

TYPED_TEST(JobCollectiveFaults, k5_all_reduce_sizes_that_differ_fail_on_every_rank_alike) {
    std::vector<Handle> buffers;
    for (std::uint32_t rank = 0; rank < this->world_size(); ++rank) {
        buffers.push_back(this->template values_on<float>(
            rank, std::vector<float>(rank == this->last_rank() ? 8 : 4, 1.0F)));
    }
    this->expect_the_same_error(this->on_every_rank(this->sum_of(buffers)),
                                ErrorKind::InvalidArgument,
                                "rank " + std::to_string(this->last_rank()) + "'s input has");
    for (std::uint32_t rank = 0; rank < this->world_size(); ++rank) {
        EXPECT_EQ(this->template read_values<float>(rank, buffers[rank]),
                  std::vector<float>(rank == this->last_rank() ? 8 : 4, 1.0F));
    }
}

// Every rank but the root holds a buffer of another size: each fails the copy of its part, and
// every rank reports the lowest failing rank's words.
TYPED_TEST(JobCollectiveFaults, k5_broadcast_sizes_that_differ_fail_on_every_rank_alike) {
    std::vector<Handle> buffers;
    for (std::uint32_t rank = 0; rank < this->world_size(); ++rank) {
        buffers.push_back(this->bytes_on(rank, rank == 0 ? 8 : 16, 2));
    }
    this->expect_the_same_error(this->on_every_rank(this->broadcast_of(buffers, 0)),
                                ErrorKind::InvalidArgument, "rank 0's result has 8 bytes");
}

}  // namespace
}  // namespace tandem::conformance
