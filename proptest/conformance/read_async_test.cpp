// Asynchronous reads into the caller's buffer (C6 when waited for): a read's bytes are usable iff
// every one was written at the read's place in program order; work enqueued after it, failed or
// not, changes nothing it says; and bytes it cannot vouch for are zeroed, never handed out.

#include "support.hpp"

namespace tandem::conformance {
namespace {

template <typename Backend>
class AsyncReads : public Conformance<Backend> {};
TYPED_TEST_SUITE(AsyncReads, Backends, BackendNames);

TYPED_TEST(AsyncReads, a_read_of_written_bytes_copies_them_into_the_callers_buffer) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle handle = this->allocate(client, 256);
    this->fill(client, handle, 5);
    std::vector<std::byte> into(256, std::byte{0xaa});
    Result<PendingRead> read = client.read_async(handle, into);
    ASSERT_TRUE(read) << read.error().report();
    ASSERT_TRUE(client.wait(*read));
    EXPECT_EQ(into, filled(256, 5));
}

TYPED_TEST(AsyncReads, a_read_of_failed_bytes_fails_naming_the_root_and_zeroes_the_buffer) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle handle = this->allocate(client, 64);
    this->fill(client, handle, 1);
    this->fail(client, *handle.slice(0, 16), 17);
    std::vector<std::byte> into(64, std::byte{0xaa});
    Result<PendingRead> read = client.read_async(handle, into);
    ASSERT_TRUE(read) << read.error().report();
    Status waited = client.wait(*read);
    ASSERT_FALSE(waited);
    EXPECT_EQ(waited.error().kind(), ErrorKind::Unwritten) << waited.error().report();
    EXPECT_EQ(root_code(waited.error()), 17u) << waited.error().report();
    EXPECT_EQ(into, filled(64, 0));
}

TYPED_TEST(AsyncReads, work_enqueued_after_the_read_does_not_change_what_it_says) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle clean = this->allocate(client, 64);
    Handle failed = this->allocate(client, 64);
    this->fill(client, clean, 3);
    this->fail(client, failed, 4);
    std::vector<std::byte> clean_bytes(64);
    std::vector<std::byte> failed_bytes(64);
    Result<PendingRead> clean_read = client.read_async(clean, clean_bytes);
    Result<PendingRead> failed_read = client.read_async(failed, failed_bytes);
    ASSERT_TRUE(clean_read && failed_read);
    this->fail(client, clean, 9);    // Later in program order: the read saw the fill.
    this->fill(client, failed, 6);   // Later too: it does not repair what the read saw.
    ASSERT_TRUE(client.wait(*clean_read));
    EXPECT_EQ(clean_bytes, filled(64, 3));
    Status waited = client.wait(*failed_read);
    ASSERT_FALSE(waited);
    EXPECT_EQ(root_code(waited.error()), 4u) << waited.error().report();
    EXPECT_EQ(failed_bytes, filled(64, 0));
    EXPECT_EQ(this->read_bytes(client, failed), filled(64, 6));
}

TYPED_TEST(AsyncReads, a_read_on_a_stream_follows_that_streams_earlier_work) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Result<StreamId> side = client.create_stream();
    ASSERT_TRUE(side);
    Handle handle = this->allocate(client, 128);
    ASSERT_TRUE(client.inject(StreamDelay{*side, 1000}));
    this->fill(client, handle, 8, *side);
    std::vector<std::byte> into(128);
    Result<PendingRead> read = client.read_async(handle, into, *side);
    ASSERT_TRUE(read);
    ASSERT_TRUE(client.wait(*read));
    EXPECT_EQ(into, filled(128, 8));
}

TYPED_TEST(AsyncReads, bad_reads_are_refused_and_change_nothing) {
    TANDEM_RUNTIME(runtime, 2);
    Client first = runtime->client(0);
    Client second = runtime->client(1);
    Handle mine = this->allocate(first, 64);
    Handle theirs = this->allocate(second, 64);
    this->fill(first, mine, 2);
    std::vector<std::byte> short_buffer(63);
    std::vector<std::byte> into(64);
    EXPECT_EQ(first.read_async(mine, short_buffer).error().kind(), ErrorKind::InvalidArgument);
    EXPECT_EQ(first.read_async(mine, into, StreamId{77}).error().kind(),
              ErrorKind::InvalidArgument);
    EXPECT_EQ(first.read_async(theirs, into).error().kind(), ErrorKind::WrongService);
    Result<PendingRead> read = first.read_async(mine, into);
    ASSERT_TRUE(read);
    EXPECT_EQ(second.wait(*read).error().kind(), ErrorKind::InvalidArgument);
    ASSERT_TRUE(first.wait(*read));
    EXPECT_EQ(into, filled(64, 2));
}

}  // namespace
}  // namespace tandem::conformance
