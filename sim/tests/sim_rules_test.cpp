// What the simulator adds to the contract's rules, which the conformance suite checks on every
// backend (proptest/conformance): a stream's delays add up to a bound, since a sync waits them out.

#include "sim_test_support.hpp"

namespace tandem::sim {
namespace {

using namespace testing;

// Found by the client-calls fuzzer: a delay of 2^64 - 1 steps hung the next sync.
TEST(SimRules, a_stream_delay_past_its_bound_is_invalid) {
    std::shared_ptr<SimRuntime> runtime = make_runtime();
    Client client = runtime->client(0);
    const StreamId side = *client.create_stream();
    EXPECT_EQ(client.inject(StreamDelay{side, UINT64_MAX}).error().kind(),
              ErrorKind::InvalidArgument);
    ASSERT_TRUE(client.inject(StreamDelay{side, StreamDelay::max_steps}));
    EXPECT_EQ(client.inject(StreamDelay{side, 1}).error().kind(), ErrorKind::InvalidArgument);
}

}  // namespace
}  // namespace tandem::sim
