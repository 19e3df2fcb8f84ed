// A rank of a job ended (`Job::abandon`, as its death would) in the middle of a collective or
// before its send, on ranks simulated in this process (job_ranks.hpp), two and three ranks under
// both schedulers: every other rank's call fails with `DeviceLost` naming it, and so does its
// next call, never a hang (K5). No test waits for a time: the dying rank waits at a gate the test
// opens once the others are inside their calls (they published what the protocol publishes
// first, which the dying rank looks up), or once they began them where nothing tells more.

#include "job_collective_faults.hpp"

namespace tandem::conformance {
namespace {

template <typename Kind>
class JobRankLoss : public JobFaultFixture<Kind> {};
TYPED_TEST_SUITE(JobRankLoss, JobRanksKinds, JobRanksNames);

TYPED_TEST(JobRankLoss, k5_a_rank_ended_mid_all_reduce_fails_every_other_rank_naming_it) {
    const std::vector<Handle> buffers = this->float_buffers(4);
    this->expect_a_rank_ended_mid_call_fails_the_others(this->last_rank(), this->sum_of(buffers),
                                                        this->inputs_but(this->last_rank()));
}

// Rank 0 builds the result: the others have published and wait for it, and it never comes.
TYPED_TEST(JobRankLoss, k5_the_folding_rank_ended_mid_all_reduce_fails_every_other_rank) {
    const std::vector<Handle> buffers = this->float_buffers(4);
    this->expect_a_rank_ended_mid_call_fails_the_others(0, this->sum_of(buffers),
                                                        this->inputs_but(0));
}

TYPED_TEST(JobRankLoss, k5_a_rank_ended_mid_all_gather_fails_every_other_rank_naming_it) {
    const auto gather = this->gather_buffers(8);
    this->expect_a_rank_ended_mid_call_fails_the_others(
        this->last_rank(), this->all_gather_of(gather), this->inputs_but(this->last_rank()));
}

TYPED_TEST(JobRankLoss, k5_a_rank_ended_mid_reduce_scatter_fails_every_other_rank) {
    const auto scatter = this->scatter_buffers();
    this->expect_a_rank_ended_mid_call_fails_the_others(
        this->last_rank(), this->reduce_scatter_of(scatter), this->inputs_but(this->last_rank()));
}

// The last rank takes part in the first step, then ends while rank 0 has built and published
// the result: the others are in the second step's agreement or copying their part.
TYPED_TEST(JobRankLoss, k5_a_rank_ended_after_the_first_step_fails_every_other_rank) {
    const std::vector<Handle> buffers = this->float_buffers(4);
    this->expect_a_rank_ended_after_step_one_fails_the_others(
        this->last_rank(), buffers[this->last_rank()], this->sum_of(buffers));
}

TYPED_TEST(JobRankLoss, k5_a_rank_ended_after_the_first_step_of_a_reduce_scatter_fails) {
    const auto scatter = this->scatter_buffers();
    this->expect_a_rank_ended_after_step_one_fails_the_others(
        this->last_rank(), scatter.inputs[this->last_rank()], this->reduce_scatter_of(scatter));
}

// A broadcast publishes nothing before its first agreement, so the gate opens once the others'
// calls have begun, inside the call or before it: either way, the same outcome.
TYPED_TEST(JobRankLoss, k5_a_rank_ended_during_a_broadcast_fails_every_other_rank) {
    const std::vector<Handle> buffers = this->same_bytes_on_every_rank(8, 1);
    this->expect_a_rank_ended_mid_call_fails_the_others(this->last_rank(),
                                                        this->broadcast_of(buffers, 0), {});
}

// The receiver waits for a sender that ends instead of sending.
TYPED_TEST(JobRankLoss, k5_a_sender_ended_before_its_send_fails_the_receive_naming_it) {
    const std::uint32_t sender = this->last_rank();
    Handle target = this->bytes_on(0, 16, 0);
    std::promise<void> gate;
    auto death = std::async(std::launch::async, [&, opened = gate.get_future()]() mutable {
        opened.wait();
        this->job(sender).abandon();
    });
    auto received = std::async(std::launch::async,
                               [&] { return this->job(0).recv(sender, target, call_timeout); });
    gate.set_value();
    death.get();
    this->expect_survivors_lost({received.get()}, sender, {0});
}
}  // namespace
}  // namespace tandem::conformance
