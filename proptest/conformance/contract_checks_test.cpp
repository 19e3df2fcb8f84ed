// Bad input and the limits every backend refuses the same way: a launch a GPU would refuse (C10),
// faults armed wrongly, allocations on streams that do not exist, and strided views.

#include "support.hpp"

#include <cmath>
#include <optional>
#include <type_traits>
#include <utility>

namespace tandem::conformance {
namespace {

// Break i: only a backend builds handles, peer memory and capture graphs (it shows a
// `RuntimeKey`, which a program cannot make), so no program can forge an address, a size or a
// write set for a backend to use.
static_assert(
    !std::is_constructible_v<Handle, ManagedMemoryHandle, ServiceId, StreamId, std::uint64_t>);
static_assert(!std::is_constructible_v<PeerMemory, ManagedMemoryBinding, std::uint64_t, ServiceId,
                                       std::weak_ptr<PeerOwner>>);
static_assert(!std::is_constructible_v<CaptureGraph, ServiceId, std::vector<ClaimKey>,
                                       std::shared_ptr<const CapturedWork>>);
static_assert(!std::is_constructible_v<Event, ServiceId, StreamId, std::uint64_t>);
static_assert(!std::is_default_constructible_v<RuntimeKey>);

template <typename Backend>
class ContractChecks : public Conformance<Backend> {};
TYPED_TEST_SUITE(ContractChecks, Backends, BackendNames);

TYPED_TEST(ContractChecks, c10_a_launch_a_gpu_would_refuse_is_refused_and_claims_its_outputs) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle input = this->allocate(client, 64);
    ASSERT_TRUE(client.write(input, filled(64, 5)));
    const std::pair<LaunchConfig, const char*> refused[] = {
        {LaunchConfig{Dim3{1, max_grid_dims.y + 1, 1}, Dim3{32, 1, 1}}, "over the limit"},
        {LaunchConfig{Dim3{1, 1, 1}, Dim3{1, 1, max_block_dims.z * 2}}, "over the limit"},
        {LaunchConfig::linear(UINT64_MAX, 256), "over the limit"},
        {LaunchConfig{Dim3{max_grid_x, 65535, 65535}, Dim3{1024, 1, 1}}, "2^64 - 1 threads"},
        {LaunchConfig{Dim3{4, 1, 1}, Dim3{0, 1, 1}}, "a block of zero threads"},
    };
    for (const auto& [config, reason] : refused) {
        Handle output = this->allocate(client, 64);
        ASSERT_TRUE(client.write(output, filled(64, 1)));
        ASSERT_TRUE(client.launch("copy", config, {in(input), out(output)}));
        EXPECT_EQ(this->read_bytes(client, input), filled(64, 5));
        std::optional<Error> error = this->read_error(client, output);
        ASSERT_TRUE(error) << reason;
        const Error& root = *root_of(*error);
        ASSERT_EQ(root.kind(), ErrorKind::LaunchRefused) << root.report();
        EXPECT_NE(root.message().find(reason), std::string::npos) << root.message();
    }
}

TYPED_TEST(ContractChecks, a_fault_probability_outside_zero_to_one_or_nan_is_invalid) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    for (double probability : {-0.5, 1.5, std::nan("")}) {
        EXPECT_EQ(client.inject(KernelFault{"fill", 0, probability, 1}).error().kind(),
                  ErrorKind::InvalidArgument);
    }
    EXPECT_TRUE(client.inject(KernelFault{"fill", 0, 0.0, 1}));
}

TYPED_TEST(ContractChecks, a_stream_delay_past_its_bound_or_on_no_stream_is_invalid) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    const StreamId side = *client.create_stream();
    EXPECT_EQ(client.inject(StreamDelay{side, UINT64_MAX}).error().kind(),
              ErrorKind::InvalidArgument);
    EXPECT_EQ(client.inject(StreamDelay{StreamId{99}, 1}).error().kind(),
              ErrorKind::InvalidArgument);
    EXPECT_TRUE(client.inject(StreamDelay{side, 10}));
}

TYPED_TEST(ContractChecks, an_armed_allocation_fault_hits_the_nth_allocation_with_its_figures) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    ASSERT_TRUE(client.inject(AllocationFault{2}));
    // A request the manager refuses as wrong is not an allocation: it does not count.
    EXPECT_EQ(client.allocate(0).error().kind(), ErrorKind::InvalidArgument);
    EXPECT_EQ(client.allocate(UINT64_MAX).error().kind(), ErrorKind::InvalidArgument);
    EXPECT_TRUE(client.allocate(64));
    Result<Handle> failed = client.allocate(64);
    ASSERT_FALSE(failed);
    ASSERT_EQ(failed.error().kind(), ErrorKind::OutOfMemory);
    EXPECT_EQ(failed.error().details_as<OutOfMemoryDetails>()->requested_bytes, 64u);
    EXPECT_TRUE(client.allocate(64));
}

// A client is a way to its device: kept past the runtime that made it, it still reads, allocates,
// launches, records and waits, and the devices go with the last client.
TYPED_TEST(ContractChecks, a_client_kept_past_its_runtime_still_works) {
    std::optional<Client> kept;
    std::optional<Handle> handle;
    {
        TANDEM_RUNTIME(runtime, 1);
        kept = runtime->client(0);
        handle = this->allocate(*kept, 64);
        this->fill(*kept, *handle, 9);  // Still pending when the runtime goes.
    }
    EXPECT_EQ(this->read_bytes(*kept, *handle), filled(64, 9));
    Handle more = this->allocate(*kept, 32);
    this->fill(*kept, more, 2);
    EXPECT_EQ(this->read_bytes(*kept, more), filled(32, 2));
    Result<Event> event = kept->record_event(kept->default_stream());
    ASSERT_TRUE(event) << event.error().report();
    EXPECT_TRUE(kept->wait(*event));
    EXPECT_TRUE(kept->sync());
    kept.reset();    // The last client: the devices go, and their work with them.
    handle.reset();  // A handle outliving every client lets go of its bytes as ever.
}

// A copy whose source and target share bytes is refused on every backend (a GPU's copy gives
// them no order), and changes nothing; a copy between disjoint halves of one buffer runs.
TYPED_TEST(ContractChecks, a_copy_onto_its_own_bytes_is_refused_and_changes_nothing) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle buffer = this->allocate(client, 64);
    this->fill(client, buffer, 5);
    for (const auto& [from, to] : {std::pair{0, 16}, std::pair{16, 0}, std::pair{0, 0}}) {
        Status copied = client.copy(*buffer.slice(from, 32), *buffer.slice(to, 32));
        ASSERT_FALSE(copied) << from << " to " << to;
        EXPECT_EQ(copied.error().kind(), ErrorKind::InvalidArgument) << copied.error().report();
    }
    EXPECT_EQ(this->read_bytes(client, buffer), filled(64, 5));
    this->fill(client, *buffer.slice(0, 32), 7);
    ASSERT_TRUE(client.copy(*buffer.slice(0, 32), *buffer.slice(32, 32)));
    EXPECT_EQ(this->read_bytes(client, buffer), filled(64, 7));
}

// A launch carries at most `KernelArgs::max_words` scalars: one given more is refused at once and
// changes nothing, where the extra ones used to be dropped without a word.
TYPED_TEST(ContractChecks, a_launch_given_more_scalars_than_it_carries_is_refused) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle buffer = this->allocate(client, 16);
    this->fill(client, buffer, 1);
    KernelArgs args;
    for (std::size_t word = 0; word <= KernelArgs::max_words; ++word) {
        args.u64(2);
    }
    ASSERT_TRUE(args.overflowed());
    Status launched = client.launch("fill", LaunchConfig::linear(16), {out(buffer)}, args);
    ASSERT_FALSE(launched);
    EXPECT_EQ(launched.error().kind(), ErrorKind::InvalidArgument) << launched.error().report();
    EXPECT_EQ(this->read_bytes(client, buffer), filled(16, 1));
}

TYPED_TEST(ContractChecks, an_allocation_names_a_stream_that_exists) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    EXPECT_EQ(client.allocate(64, StreamId{0}).error().kind(), ErrorKind::InvalidArgument);
    EXPECT_EQ(client.allocate(64, StreamId{99}).error().kind(), ErrorKind::InvalidArgument);
    Result<StreamId> created = client.create_stream();
    ASSERT_TRUE(created);
    EXPECT_TRUE(client.allocate(64, *created));
}

TYPED_TEST(ContractChecks, c6_a_strided_read_returns_the_view_in_order_and_checks_its_bytes) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle matrix = this->allocate(client, 16 * 4);
    std::vector<std::uint32_t> values(16);
    for (std::uint32_t i = 0; i < 16; ++i) {
        values[i] = i;
    }
    ASSERT_TRUE(client.write(matrix, std::as_bytes(std::span(values))));
    Result<std::vector<std::byte>> column = client.read_strided(matrix, {4}, {4}, 4);
    ASSERT_TRUE(column) << column.error().report();
    std::vector<std::uint32_t> got(4);
    std::memcpy(got.data(), column->data(), column->size());
    EXPECT_EQ(got, (std::vector<std::uint32_t>{0, 4, 8, 12}));
    // A claimed byte outside the view leaves it readable; one inside fails it.
    this->fail(client, *matrix.slice(4, 4), 3);
    EXPECT_TRUE(client.read_strided(matrix, {4}, {4}, 4));
    this->fail(client, *matrix.slice(16, 4), 4);
    Result<std::vector<std::byte>> failed = client.read_strided(matrix, {4}, {4}, 4);
    ASSERT_FALSE(failed);
    EXPECT_EQ(root_code(failed.error()), 4u) << failed.error().report();
}

// C6 on a view inside a slice: the view's bytes come from where the slice starts, not from the
// allocation's first byte.
TYPED_TEST(ContractChecks, c6_a_strided_read_of_a_slice_reads_the_slices_bytes) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle whole = this->allocate(client, 4096);
    std::vector<std::byte> pattern(4096);
    for (std::size_t i = 0; i < pattern.size(); ++i) {
        pattern[i] = std::byte(i * 7 + 1);
    }
    ASSERT_TRUE(client.write(whole, pattern));
    Result<Handle> slice = whole.slice(1000, 2000);
    ASSERT_TRUE(slice);
    Result<std::vector<std::byte>> view = client.read_strided(*slice, {3, 2}, {100, 10}, 4);
    ASSERT_TRUE(view) << view.error().report();
    std::vector<std::byte> expected;
    for (std::uint64_t row = 0; row < 3; ++row) {
        for (std::uint64_t column = 0; column < 2; ++column) {
            const std::size_t at = 1000 + (row * 100 + column * 10) * 4;
            expected.insert(expected.end(), pattern.begin() + static_cast<std::ptrdiff_t>(at),
                            pattern.begin() + static_cast<std::ptrdiff_t>(at + 4));
        }
    }
    EXPECT_EQ(*view, expected);
}

// C3 for a strided write: it lands the view's elements in view order and releases the claims of
// exactly the bytes the view covers; the bytes between its elements keep theirs.
TYPED_TEST(ContractChecks, c3_a_strided_write_releases_exactly_the_bytes_its_view_covers) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle matrix = this->allocate(client, 16 * 4);
    this->fail(client, matrix, 7);
    const std::vector<std::uint32_t> column{10, 11, 12, 13};
    ASSERT_TRUE(client.write_strided(matrix, {4}, {4}, 4, std::as_bytes(std::span(column))));
    Result<std::vector<std::byte>> back = client.read_strided(matrix, {4}, {4}, 4);
    ASSERT_TRUE(back) << back.error().report();
    std::vector<std::uint32_t> got(4);
    std::memcpy(got.data(), back->data(), back->size());
    EXPECT_EQ(got, column);
    for (std::uint64_t row = 0; row < 4; ++row) {
        EXPECT_TRUE(client.read(*matrix.slice(row * 16, 4))) << "row " << row;
        std::optional<Error> between = this->read_error(client, *matrix.slice(row * 16 + 4, 12));
        ASSERT_TRUE(between) << "a strided write released bytes it did not write, row " << row;
        EXPECT_EQ(root_code(*between), 7u) << between->report();
    }
}

// A strided write the caller got wrong is refused with InvalidArgument and changes nothing:
// elements that share bytes (their order would be undefined), a size that is not the view's, a
// view past the handle.
TYPED_TEST(ContractChecks, a_strided_write_that_is_wrong_is_refused_and_changes_nothing) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle buffer = this->allocate(client, 64);
    this->fail(client, buffer, 5);
    const std::vector<std::byte> eight = filled(8, 1);
    const std::vector<std::byte> sixteen = filled(16, 1);
    const Status repeated = client.write_strided(buffer, {2}, {0}, 4, eight);
    const Status short_bytes = client.write_strided(buffer, {4}, {2}, 4, eight);
    const Status past = client.write_strided(buffer, {4}, {8}, 4, sixteen);
    for (const Status* refused : {&repeated, &short_bytes, &past}) {
        ASSERT_FALSE(*refused);
        EXPECT_EQ(refused->error().kind(), ErrorKind::InvalidArgument) << refused->error().report();
    }
    std::optional<Error> error = this->read_error(client, *buffer.slice(0, 4));
    ASSERT_TRUE(error) << "a refused strided write released bytes";
    EXPECT_EQ(root_code(*error), 5u) << error->report();
}

// A handle that was moved from holds no memory: every call given one refuses it with
// `InvalidArgument` and changes nothing, rather than following it.
TYPED_TEST(ContractChecks, a_moved_from_handle_is_refused_by_every_call) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle kept = this->allocate(client, 16);
    ASSERT_TRUE(client.write(kept, filled(16, 8)));
    Handle moved = this->allocate(client, 16);
    const Handle taken = std::move(moved);
    ASSERT_TRUE(moved.empty());  // NOLINT(bugprone-use-after-move): what the test is about.
    ASSERT_FALSE(taken.empty());
    const auto expect_refused = [](const Status& status, const char* call) {
        ASSERT_FALSE(status) << call;
        EXPECT_EQ(status.error().kind(), ErrorKind::InvalidArgument) << call;
        EXPECT_NE(status.error().message().find("moved from"), std::string::npos)
            << status.error().report();
    };
    const auto status_of = [](const auto& result) {
        return result ? Status{} : Status{result.error()};
    };
    expect_refused(client.write(moved, filled(16, 1)), "write");
    expect_refused(status_of(client.read(moved)), "read");
    std::vector<std::byte> into(16);
    expect_refused(status_of(client.read_async(moved, into)), "read_async");
    expect_refused(client.copy(moved, kept), "copy from");
    expect_refused(client.copy(kept, moved), "copy into");
    expect_refused(
        client.launch("fill", LaunchConfig::linear(16), {out(moved)}, KernelArgs().u64(1)),
        "launch");
    expect_refused(client.enqueue(ExternalWork{"reads_nothing", {in(moved)}, {}}), "enqueue");
    expect_refused(client.sync(std::vector<Handle>{moved}), "sync");
    expect_refused(status_of(client.share_with_peers(moved)), "share_with_peers");
    expect_refused(status_of(client.native(moved)), "native");
    EXPECT_EQ(this->read_bytes(client, kept), filled(16, 8));  // Nothing changed.
}

}  // namespace
}  // namespace tandem::conformance
