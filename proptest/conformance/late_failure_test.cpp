// Failures known only when work completes (C13), and work skipped because of them, on every
// backend: outcomes follow program order, and skipped work never writes a byte.

#include "support.hpp"

namespace tandem::conformance {
namespace {

template <typename Backend>
class LateFailures : public Conformance<Backend> {};
TYPED_TEST_SUITE(LateFailures, Backends, BackendNames);

TYPED_TEST(LateFailures, c13_a_consumer_enqueued_before_the_failure_was_known_takes_it) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle a = this->allocate(client, 64);
    Handle b = this->allocate(client, 64);
    Handle c = this->allocate(client, 8);
    this->fail(client, a, 21);
    this->copy_kernel(client, a, b);
    ASSERT_TRUE(client.launch("checksum", LaunchConfig::linear(1), {in(b), out(c)}));
    std::optional<Error> error = this->read_error(client, c);
    ASSERT_TRUE(error);
    EXPECT_EQ(root_code(*error), 21u) << error->report();
}

// Break g: a consumer of failed work that ran before the failure was known (another stream,
// unordered) is skipped, and a clean write enqueued after it still lands on its bytes.
TYPED_TEST(LateFailures, c13_a_late_failure_leaves_the_bytes_a_later_write_landed_on_clean) {
    for (std::uint64_t seed = 1; seed <= 16; ++seed) {
        std::shared_ptr<Runtime> runtime = this->make(1, seed);
        if (!runtime) {
            GTEST_SKIP() << this->why_not;
        }
        Client client = runtime->client(0);
        const StreamId side = *client.create_stream();
        Handle a = this->allocate(client, 64);
        Handle b = this->allocate(client, 64);
        // Many blocks: the producer ends (and reports) only after the other stream ran.
        ASSERT_TRUE(
            client.launch("fail", LaunchConfig::linear(4096, 32), {out(a)}, KernelArgs().u64(8)));
        this->copy_kernel(client, a, b, side);
        this->fill(client, b, 4, side);
        EXPECT_EQ(this->read_bytes(client, b), filled(64, 4)) << "seed " << seed;
        std::optional<Error> error = this->read_error(client, a);
        ASSERT_TRUE(error);
        EXPECT_EQ(root_code(*error), 8u);
    }
}

// Break e: the catalog's `copy` writes as many bytes as the smaller buffer holds, so a copy of 4
// bytes into a 64-byte buffer releases all 64 and leaves 60 as they were. Had the skipped work
// before it written, those 60 bytes would be the skipped work's.
struct PartialRewrite {
    Handle stale;   // 64 bytes of 7, then claimed by a failure of code 3.
    Handle target;  // 64 bytes of 5.
    Handle small;   // 4 bytes of 9.

    /// What `target` holds once `small` was copied into it by the catalog's `copy`.
    static std::vector<std::byte> expected() {
        std::vector<std::byte> bytes = filled(64, 5);
        std::fill_n(bytes.begin(), 4, std::byte{9});
        return bytes;
    }
};

template <typename Fixture>
PartialRewrite partial_rewrite(Fixture& test, Client& client) {
    PartialRewrite buffers{test.allocate(client, 64), test.allocate(client, 64),
                           test.allocate(client, 4)};
    EXPECT_TRUE(client.write(buffers.stale, filled(64, 7)));
    EXPECT_TRUE(client.write(buffers.target, filled(64, 5)));
    EXPECT_TRUE(client.write(buffers.small, filled(4, 9)));
    EXPECT_TRUE(client.sync());
    test.fail(client, buffers.stale, 3);  // Not synced: on a GPU its outcome is not known yet.
    return buffers;
}

TYPED_TEST(LateFailures, c9_skipped_work_writes_nothing_that_a_later_partial_write_leaves) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    const PartialRewrite buffers = partial_rewrite(*this, client);
    this->copy_kernel(client, buffers.stale, buffers.target);  // Skipped: must not write.
    this->copy_kernel(client, buffers.small, buffers.target);  // Releases all 64 bytes.
    EXPECT_EQ(this->read_bytes(client, buffers.target), PartialRewrite::expected());
}

TYPED_TEST(LateFailures, c9_a_skipped_copy_moves_no_byte) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    const PartialRewrite buffers = partial_rewrite(*this, client);
    ASSERT_TRUE(client.copy(buffers.stale, buffers.target));  // Skipped: must not move a byte.
    std::optional<Error> error = this->read_error(client, buffers.target);
    ASSERT_TRUE(error);
    EXPECT_EQ(root_code(*error), 3u) << error->report();
    this->copy_kernel(client, buffers.small, buffers.target);
    EXPECT_EQ(this->read_bytes(client, buffers.target), PartialRewrite::expected());
}

TYPED_TEST(LateFailures, c9_a_chain_of_skipped_launches_writes_nothing_anywhere) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle a = this->allocate(client, 64);
    Handle b = this->allocate(client, 64);
    Handle c = this->allocate(client, 64);
    Handle small = this->allocate(client, 4);
    ASSERT_TRUE(client.write(b, filled(64, 1)));
    ASSERT_TRUE(client.write(c, filled(64, 3)));
    ASSERT_TRUE(client.write(small, filled(4, 2)));
    ASSERT_TRUE(client.sync());
    ASSERT_TRUE(client.write(a, filled(64, 8)));
    this->fail(client, a, 11);
    this->copy_kernel(client, a, b);  // Skipped on the failure of `fail`.
    this->copy_kernel(client, b, c);  // Skipped on the skip before it.
    this->copy_kernel(client, small, c);
    std::vector<std::byte> expected = filled(64, 3);  // Not 8 (a's) nor 1 (b's).
    std::fill_n(expected.begin(), 4, std::byte{2});
    EXPECT_EQ(this->read_bytes(client, c), expected);
}

}  // namespace
}  // namespace tandem::conformance
