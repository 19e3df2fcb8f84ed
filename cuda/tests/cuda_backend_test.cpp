// The failure rules on real GPUs. Without a GPU every test skips, naming the reason.

#include "../../core/tests/runtime_key_for_tests.hpp"
#include "tandem/backend/server.hpp"
#include "tandem/cuda/runtime.hpp"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

namespace tandem::cuda {
namespace {

LaunchArgument in(const Handle& handle) { return {handle, AccessMode::Read, std::nullopt}; }
LaunchArgument out(const Handle& handle) { return {handle, AccessMode::Write, std::nullopt}; }
LaunchArgument inout(const Handle& handle) { return {handle, AccessMode::ReadWrite, std::nullopt}; }

class CudaBackend : public ::testing::Test {
protected:
    void SetUp() override {
        auto created = CudaRuntime::create();
        if (!created) {
            GTEST_SKIP() << "skipped: " << created.error().message();
        }
        runtime = *created;
    }
    Handle allocate(Client& client, std::uint64_t size) {
        auto handle = client.allocate(size);
        EXPECT_TRUE(handle) << handle.error().report();
        return *handle;
    }
    static const UnwrittenDetails* unwritten(const Error& error) {
        return error.details_as<UnwrittenDetails>();
    }
    /// The kernel failure at the root of `error`, through any failures skipped on the way.
    static const KernelFailedDetails* root_kernel_failure(const Error& error) {
        const Error* at = &error;
        while (const UnwrittenDetails* skipped = unwritten(*at)) {
            at = skipped->root.get();
        }
        return at->details_as<KernelFailedDetails>();
    }
    std::shared_ptr<CudaRuntime> runtime;
};

/// Tests across two devices: on two GPUs where there are, on two devices sharing GPU 0 where
/// there is one (`CudaOptions::gpus`), under the same rules.
class CudaTwoGpus : public CudaBackend {
protected:
    void SetUp() override {
        CudaBackend::SetUp();
        if (!IsSkipped() && runtime->device_count() < 2) {
            auto shared = CudaRuntime::create(CudaOptions{.gpus = {0, 0}});
            ASSERT_TRUE(shared) << shared.error().report();
            runtime = *shared;
        }
    }
    /// `size` bytes of GPU 0 shared with GPU 1, after GPU 0 granted GPU 1 access; empty, with
    /// the failure reported, when either step is refused.
    std::optional<Handle> share_from_gpu0(std::uint64_t size) {
        Client owner = runtime->client(0);
        if (Status granted = owner.grant_peer_access(runtime->client(1).service()); !granted) {
            ADD_FAILURE() << granted.error().report();
            return std::nullopt;
        }
        Result<Handle> shared = owner.share_with_peers(allocate(owner, size));
        if (!shared) {
            ADD_FAILURE() << shared.error().report();
            return std::nullopt;
        }
        return *shared;
    }
};

TEST_F(CudaBackend, a_fill_kernel_writes_bytes_the_host_reads_back) {
    Client client = runtime->client(0);
    Handle buffer = allocate(client, 1 << 20);
    ASSERT_TRUE(client.launch("fill", LaunchConfig::linear(1 << 20), {out(buffer)},
                              KernelArgs().u64(0xab)));
    auto bytes = client.read(buffer);
    ASSERT_TRUE(bytes) << bytes.error().report();
    EXPECT_TRUE(std::all_of(bytes->begin(), bytes->end(),
                            [](std::byte b) { return b == std::byte{0xab}; }));
}

// A runtime's status words start cleared before its first kernel can report into them, whatever
// the legacy stream is busy with: a late clear would erase a failure and let the read succeed.
TEST_F(CudaBackend, a_new_runtime_loses_no_failure_to_work_queued_on_the_legacy_stream) {
    const auto fail_and_read = [](CudaRuntime& of, std::uint64_t code) {
        Client client = of.client(0);
        Result<Handle> buffer = client.allocate(64);
        EXPECT_TRUE(buffer) << buffer.error().report();
        EXPECT_TRUE(
            client.launch("fail", LaunchConfig::linear(1), {out(*buffer)}, KernelArgs().u64(code)));
        return client.read(*buffer);
    };
    // A first runtime loads the kernels: a kernel's first load waits for the whole GPU, which
    // would hide the race this test is about.
    ASSERT_FALSE(fail_and_read(*runtime, 41));
    runtime.reset();
    // The legacy stream is held for a while, as a program's own work on it would hold it.
    const auto hold = [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(300)); };
    ASSERT_EQ(cudaLaunchHostFunc(cudaStreamLegacy, hold, nullptr), cudaSuccess);
    auto created = CudaRuntime::create();
    ASSERT_TRUE(created) << created.error().report();
    auto read = fail_and_read(**created, 42);
    ASSERT_FALSE(read) << "the failed kernel's report was lost";
    const KernelFailedDetails* root = root_kernel_failure(read.error());
    ASSERT_NE(root, nullptr) << read.error().report();
    EXPECT_EQ(root->code, 42u);
}

// Launch ids run out about every two billion launches, and start again at 1. The restart must
// not lose a failure still unsettled when it comes, nor let a word written before it match a
// launch after it.
TEST_F(CudaBackend, launches_on_both_sides_of_the_restart_of_launch_ids_report_what_they_did) {
    CudaOptions options;
    options.first_launch_id = CudaOptions::last_launch_id - 1;  // Two launches from the restart.
    auto created = CudaRuntime::create(options);
    ASSERT_TRUE(created) << created.error().report();
    Client client = (*created)->client(0);
    std::vector<Handle> buffers;
    for (int index = 0; index < 6; ++index) {
        Result<Handle> buffer = client.allocate(64);
        ASSERT_TRUE(buffer) << buffer.error().report();
        buffers.push_back(*buffer);
    }
    // Ids last - 1, last, then 1, 2, 3, 4: a failure on each side, unsettled as the restart comes.
    const std::uint64_t codes[] = {0, 77, 0, 78, 0, 79};
    for (int index = 0; index < 6; ++index) {
        ASSERT_TRUE(codes[index] == 0
                        ? client.launch("fill", LaunchConfig::linear(64), {out(buffers[index])},
                                        KernelArgs().u64(index))
                        : client.launch("fail", LaunchConfig::linear(1), {out(buffers[index])},
                                        KernelArgs().u64(codes[index])));
    }
    for (int index = 0; index < 6; ++index) {
        auto read = client.read(buffers[index]);
        if (codes[index] == 0) {
            ASSERT_TRUE(read) << "buffer " << index << ": " << read.error().report();
            EXPECT_EQ(read->front(), std::byte(index));
        } else {
            ASSERT_FALSE(read) << "buffer " << index << ": the failure was lost";
            const KernelFailedDetails* root = root_kernel_failure(read.error());
            ASSERT_NE(root, nullptr) << read.error().report();
            EXPECT_EQ(root->code, codes[index]);
        }
    }
}

TEST(GpusInTurn, places_devices_on_the_visible_gpus_one_after_another) {
    EXPECT_EQ(gpus_in_turn(3, 1), (std::vector<int>{0, 0, 0}));
    EXPECT_EQ(gpus_in_turn(5, 2), (std::vector<int>{0, 1, 0, 1, 0}));
    EXPECT_EQ(gpus_in_turn(2, 4), (std::vector<int>{0, 1}));
    EXPECT_TRUE(gpus_in_turn(2, 0).empty());
}

// Devices placed by `CudaOptions::gpus`: an ordinal may repeat, and what cannot be placed is
// refused, naming the figures, before any device is made.
TEST_F(CudaBackend, devices_are_placed_on_the_gpus_named_and_bad_placements_are_refused) {
    const auto visible = static_cast<int>(probe_gpus().names.size());
    const auto refusal = [](CudaOptions options) {
        Result<std::shared_ptr<CudaRuntime>> made = CudaRuntime::create(std::move(options));
        return made ? std::string("created") : made.error().message();
    };
    EXPECT_NE(refusal(CudaOptions{.gpus = {0, visible}})
                  .find("no GPU of ordinal " + std::to_string(visible)),
              std::string::npos);
    EXPECT_NE(refusal(CudaOptions{.gpus = {-1}}).find("no GPU of ordinal -1"), std::string::npos);
    EXPECT_NE(refusal(CudaOptions{.devices = 3, .gpus = {0, 0}}).find("3 devices asked for on 2"),
              std::string::npos);
    EXPECT_NE(refusal(CudaOptions{.gpus = std::vector<int>(CudaOptions::max_devices + 1, 0)})
                  .find("at most 64"),
              std::string::npos);
    Result<std::shared_ptr<CudaRuntime>> bad = CudaRuntime::create(CudaOptions{.gpus = {-1}});
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().kind(), ErrorKind::InvalidArgument);

    // Two devices on GPU 0 split its free memory, and each is a device of its own.
    Result<std::shared_ptr<CudaRuntime>> shared = CudaRuntime::create(CudaOptions{.gpus = {0, 0}});
    ASSERT_TRUE(shared) << shared.error().report();
    ASSERT_EQ((*shared)->device_count(), 2U);
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
    for (std::size_t index = 0; index < 2; ++index) {
        const std::uint64_t capacity = (*shared)->client(index).memory_usage()->capacity_bytes;
        EXPECT_LE(capacity, total_bytes / 2) << "device " << index;
        EXPECT_GT(capacity, 0U) << "device " << index;
    }
    Client zero = (*shared)->client(0);
    Client one = (*shared)->client(1);
    Handle mine = allocate(zero, 64);
    ASSERT_TRUE(zero.launch("fill", LaunchConfig::linear(64), {out(mine)}, KernelArgs().u64(7)));
    Result<std::vector<std::byte>> read = one.read(mine);
    ASSERT_FALSE(read);  // Another device's handle, although on the same GPU (P1).
    EXPECT_EQ(read.error().kind(), ErrorKind::WrongService);
    Result<std::vector<std::byte>> own = zero.read(mine);
    ASSERT_TRUE(own) << own.error().report();
    EXPECT_EQ((*own)[63], std::byte{7});
}

TEST_F(CudaBackend, axpy_computes_on_the_gpu) {
    Client client = runtime->client(0);
    Handle x = allocate(client, 4 * 1024);
    Handle y = allocate(client, 4 * 1024);
    std::vector<float> twos(1024, 2.0f);
    std::vector<float> ones(1024, 1.0f);
    ASSERT_TRUE(client.write(x, std::as_bytes(std::span(twos))));
    ASSERT_TRUE(client.write(y, std::as_bytes(std::span(ones))));
    ASSERT_TRUE(client.launch("axpy", LaunchConfig::linear(1024), {in(x), inout(y)},
                              KernelArgs().f64(3.0)));
    auto bytes = client.read(y);
    ASSERT_TRUE(bytes) << bytes.error().report();
    std::vector<float> result(1024);
    std::memcpy(result.data(), bytes->data(), bytes->size());
    EXPECT_EQ(result, std::vector<float>(1024, 7.0f));
}

TEST_F(CudaBackend, a_failed_kernel_claims_its_outputs_and_a_consumer_does_not_compute) {
    Client client = runtime->client(0);
    Handle a = allocate(client, 256);
    Handle b = allocate(client, 256);
    Handle c = allocate(client, 8);
    ASSERT_TRUE(client.launch("fail", LaunchConfig::linear(1), {out(a)}, KernelArgs().u64(42)));
    ASSERT_TRUE(client.launch("copy", LaunchConfig::linear(256), {in(a), out(b)}));
    ASSERT_TRUE(client.launch("checksum", LaunchConfig::linear(1), {in(b), out(c)}));
    auto read = client.read(c);
    ASSERT_FALSE(read);
    const UnwrittenDetails* details = unwritten(read.error());
    ASSERT_NE(details, nullptr) << read.error().report();
    ASSERT_EQ(details->chain.size(), 2u) << read.error().report();
    EXPECT_EQ(details->chain[0].kernel, "checksum");
    EXPECT_EQ(details->chain[1].kernel, "copy");
    const auto* root = details->root->details_as<KernelFailedDetails>();
    ASSERT_NE(root, nullptr);
    EXPECT_EQ(root->code, 42u);
    // Both consumers were enqueued while their producer was pending: the GPU read the failed
    // status word and did not compute, which the host then confirmed from the claims.
    EXPECT_EQ(runtime->skipped_on_device(0), 2u);
}

TEST_F(CudaBackend, a_long_chain_of_in_place_updates_after_a_failure_is_skipped_on_the_gpu) {
    // Each axpy reads the bytes the one before it wrote: it finds that launch as its newest
    // producer, whatever older work on the buffer is still pending, and checks its word.
    constexpr int updates = 300;
    Client client = runtime->client(0);
    Handle x = allocate(client, 256);
    Handle y = allocate(client, 256);
    ASSERT_TRUE(client.write(x, std::vector<std::byte>(256)));
    ASSERT_TRUE(client.launch("fail", LaunchConfig::linear(1), {out(y)}, KernelArgs().u64(7)));
    for (int update = 0; update < updates; ++update) {
        ASSERT_TRUE(client.launch("axpy", LaunchConfig::linear(64), {in(x), inout(y)},
                                  KernelArgs().f64(2.0)));
    }
    auto read = client.read(y);
    ASSERT_FALSE(read);
    const KernelFailedDetails* root = root_kernel_failure(read.error());
    ASSERT_NE(root, nullptr) << read.error().report();
    EXPECT_EQ(root->code, 7u);
    EXPECT_EQ(runtime->skipped_on_device(0), static_cast<std::uint64_t>(updates));
}

TEST_F(CudaBackend, a_write_after_a_failed_kernel_repairs_the_bytes_for_a_pending_consumer) {
    // Found by the CUDA property suite: the consumer is enqueued while the failed kernel is still
    // pending, but a host write replaced its bytes in between, so the consumer must compute.
    Client client = runtime->client(0);
    Handle a = allocate(client, 1);
    Handle b = allocate(client, 1);
    ASSERT_TRUE(client.launch("fail", LaunchConfig::linear(1), {out(a)}, KernelArgs().u64(3)));
    ASSERT_TRUE(client.write(a, std::vector<std::byte>{std::byte{1}}));
    ASSERT_TRUE(client.launch("copy", LaunchConfig::linear(1, 8), {in(a), out(b)}));
    auto read = client.read(b);
    ASSERT_TRUE(read) << read.error().report();
    EXPECT_EQ(read->front(), std::byte{1});
    EXPECT_EQ(runtime->skipped_on_device(0), 0u);
}

TEST_F(CudaBackend, a_capture_becomes_a_cuda_graph_that_replays_on_any_stream_and_fails_as_one) {
    Client client = runtime->client(0);
    Handle input = allocate(client, 4096);
    Handle middle = allocate(client, 4096);
    Handle output = allocate(client, 4096);
    ASSERT_TRUE(client.write(input, std::vector<std::byte>(4096, std::byte{1})));
    const StreamId stream = client.default_stream();
    ASSERT_TRUE(client.begin_capture(stream));
    ASSERT_TRUE(client.launch("copy", LaunchConfig::linear(4096), {in(input), out(middle)}));
    ASSERT_TRUE(client.launch("copy", LaunchConfig::linear(4096), {in(middle), out(output)}));
    auto graph = client.end_capture(stream);
    ASSERT_TRUE(graph) << graph.error().report();
    EXPECT_NE(graph->work().native, nullptr) << "the window was not built into a CUDA graph";

    ASSERT_TRUE(client.write(input, std::vector<std::byte>(4096, std::byte{5})));
    ASSERT_TRUE(client.replay(*graph, stream));
    auto read = client.read(output);
    ASSERT_TRUE(read) << read.error().report();
    EXPECT_EQ(read->back(), std::byte{5});

    Result<StreamId> other = client.create_stream();
    ASSERT_TRUE(other) << other.error().report();
    ASSERT_TRUE(client.write(input, std::vector<std::byte>(4096, std::byte{6})));
    ASSERT_TRUE(client.sync());
    ASSERT_TRUE(client.replay(*graph, *other));
    read = client.read(output);
    ASSERT_TRUE(read) << read.error().report();
    EXPECT_EQ(read->back(), std::byte{6});

    // The first launch of the next replay fails: the second does not compute, and the replay
    // claims its whole write set with that one failure.
    ASSERT_TRUE(client.inject(KernelFault{"copy", 1, 1.0, 9}));
    ASSERT_TRUE(client.replay(*graph, stream));
    for (const Handle* written : {&middle, &output}) {
        read = client.read(*written);
        ASSERT_FALSE(read);
        const KernelFailedDetails* root = root_kernel_failure(read.error());
        ASSERT_NE(root, nullptr) << read.error().report();
        EXPECT_EQ(root->code, 9u);
    }
}

TEST_F(CudaBackend,
       a_launch_over_the_limits_inside_a_capture_window_is_refused_and_the_window_replays) {
    // The limits themselves are the client's, tested on the simulator; here the refused launch
    // must leave no trace in the window that becomes a CUDA graph.
    Client client = runtime->client(0);
    Handle input = allocate(client, 64);
    Handle output = allocate(client, 64);
    ASSERT_TRUE(client.write(input, std::vector<std::byte>(64, std::byte{3})));
    const StreamId stream = client.default_stream();
    ASSERT_TRUE(client.begin_capture(stream));
    std::vector<LaunchArgument> nine(9, in(input));
    Status refused = client.launch("copy", LaunchConfig::linear(64), nine);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(refused.error().message().find("at most 8 resources; this one binds 9"),
              std::string::npos)
        << refused.error().report();
    // The window holds only the launch that was accepted, and replays it.
    ASSERT_TRUE(client.launch("copy", LaunchConfig::linear(64), {in(input), out(output)}));
    auto graph = client.end_capture(stream);
    ASSERT_TRUE(graph) << graph.error().report();
    EXPECT_EQ(graph->work().launches.size(), 1u);
    ASSERT_TRUE(client.write(input, std::vector<std::byte>(64, std::byte{4})));
    ASSERT_TRUE(client.replay(*graph, stream));
    auto read = client.read(output);
    ASSERT_TRUE(read) << read.error().report();
    EXPECT_EQ(read->front(), std::byte{4});
}

TEST_F(CudaBackend, a_resource_a_launch_leaves_unbound_is_empty_not_the_last_launchs) {
    // The parameter block is reused from launch to launch: a copy that binds no target must not
    // write through the target of the copy before it. (The simulator stops such a kernel as a
    // fault; on the GPU the unbound resource is an empty view.)
    Client client = runtime->client(0);
    Handle input = allocate(client, 64);
    Handle output = allocate(client, 64);
    ASSERT_TRUE(client.write(input, std::vector<std::byte>(64, std::byte{7})));
    ASSERT_TRUE(client.launch("copy", LaunchConfig::linear(64), {in(input), out(output)}));
    ASSERT_TRUE(client.sync());
    ASSERT_TRUE(client.write(input, std::vector<std::byte>(64, std::byte{8})));
    ASSERT_TRUE(client.launch("copy", LaunchConfig::linear(64), {in(input)}));
    auto read = client.read(output);
    ASSERT_TRUE(read) << read.error().report();
    EXPECT_EQ(read->front(), std::byte{7});
    EXPECT_EQ(read->back(), std::byte{7});
}

/// Copies a 20x6 tensor of u32 with rows 96 bytes apart through tensor maps with boxes of
/// `box_columns` x 4, and checks every element of the target: copied inside the tensor,
/// untouched padding outside.
void expect_tiled_copy(Client& client, std::uint32_t box_columns) {
    const std::uint64_t row_bytes = 96;
    const std::uint64_t row_words = row_bytes / 4;
    const TensorMapDescriptor descriptor{{20, 6}, {row_bytes}, {box_columns, 4}, 4};
    auto source = client.allocate(row_bytes * 6);
    auto target = client.allocate(row_bytes * 6);
    ASSERT_TRUE(source && target);
    std::vector<std::uint32_t> values(row_words * 6);
    for (std::uint32_t i = 0; i < values.size(); ++i) {
        values[i] = i;
    }
    ASSERT_TRUE(client.write(*source, std::as_bytes(std::span(values))));
    ASSERT_TRUE(client.write(*target, std::vector<std::byte>(row_bytes * 6)));
    Status launched = client.launch("tiled_copy", LaunchConfig::linear(4, 2),
                                    {LaunchArgument{*source, AccessMode::Read, descriptor},
                                     LaunchArgument{*target, AccessMode::Write, descriptor}});
    ASSERT_TRUE(launched) << launched.error().report();
    auto read = client.read(*target);
    ASSERT_TRUE(read) << read.error().report();
    std::vector<std::uint32_t> copied(row_words * 6);
    std::memcpy(copied.data(), read->data(), read->size());
    for (std::uint64_t row = 0; row < 6; ++row) {
        for (std::uint64_t column = 0; column < row_words; ++column) {
            const std::uint64_t at = row * row_words + column;
            EXPECT_EQ(copied[at], column < 20 ? values[at] : 0u)
                << "row " << row << " column " << column;
        }
    }
}

TEST_F(CudaBackend, a_tiled_copy_moves_a_tensor_through_the_tma) {
    Client client = runtime->client(0);
    const std::uint64_t before = runtime->tma_launches(0);
    expect_tiled_copy(client, 8);  // Box rows of 32 bytes: the TMA takes the maps.
    EXPECT_EQ(runtime->tma_launches(0), before + 1);
}

TEST_F(CudaBackend, a_tiled_copy_the_tma_cannot_take_moves_by_elements_with_the_same_result) {
    Client client = runtime->client(0);
    const std::uint64_t before = runtime->tma_launches(0);
    expect_tiled_copy(client, 5);  // Box rows of 20 bytes, not a multiple of 16: no TMA.
    EXPECT_EQ(runtime->tma_launches(0), before);
}

/// Tests of two GPUs themselves: skipped, naming the count, where fewer are visible. The skip is
/// taken in SetUp, since a skip inside a helper would return from the helper, not end the test.
class CudaTwoPhysicalGpus : public CudaBackend {
protected:
    void SetUp() override {
        CudaBackend::SetUp();
        if (!IsSkipped() && runtime->device_count() < 2) {
            GTEST_SKIP() << "skipped: this test needs two GPUs, " << runtime->device_count()
                         << " visible";
        }
    }
};

TEST_F(CudaTwoPhysicalGpus, work_on_one_gpu_leaves_the_callers_current_device_as_it_was) {
    // Each call makes its GPU current and then the caller's again; the guard that does it skips
    // the runtime when it finds a context it knows current, so both ways round are checked.
    for (const int current : {1, 0, 1}) {
        ASSERT_EQ(cudaSetDevice(current), cudaSuccess);
        Client client = runtime->client(static_cast<std::uint32_t>(1 - current));
        Handle buffer = allocate(client, 256);
        ASSERT_TRUE(client.launch("fill", LaunchConfig::linear(256), {out(buffer)},
                                  KernelArgs().u64(static_cast<std::uint64_t>(7 + current))));
        auto read = client.read(buffer);
        ASSERT_TRUE(read) << read.error().report();
        EXPECT_EQ(read->front(), static_cast<std::byte>(7 + current));
        int after = -1;
        ASSERT_EQ(cudaGetDevice(&after), cudaSuccess);
        EXPECT_EQ(after, current);
    }
}

TEST_F(CudaTwoGpus, a_peer_kernel_reads_shared_memory_and_is_skipped_when_the_owner_failed) {
    Client owner = runtime->client(0);
    Client peer = runtime->client(1);
    std::optional<Handle> shared_memory = share_from_gpu0(4096);
    ASSERT_TRUE(shared_memory);
    Handle shared = *shared_memory;
    Handle local = allocate(peer, 4096);
    ASSERT_TRUE(
        owner.launch("fill", LaunchConfig::linear(4096), {out(shared)}, KernelArgs().u64(9)));
    ASSERT_TRUE(owner.sync());
    ASSERT_TRUE(peer.launch("copy", LaunchConfig::linear(4096), {in(shared), out(local)}));
    auto read = peer.read(local);
    ASSERT_TRUE(read) << read.error().report();
    EXPECT_EQ(read->front(), std::byte{9});

    ASSERT_TRUE(owner.launch("fail", LaunchConfig::linear(1), {out(shared)}, KernelArgs().u64(31)));
    ASSERT_TRUE(owner.sync());
    ASSERT_TRUE(peer.launch("copy", LaunchConfig::linear(4096), {in(shared), out(local)}));
    read = peer.read(local);
    ASSERT_FALSE(read);
    const UnwrittenDetails* details = unwritten(read.error());
    ASSERT_NE(details, nullptr);
    // The skip names the device that would have run the copy; the root, the failed kernel's.
    EXPECT_EQ(details->chain.at(0).device, peer.service()) << read.error().report();
    const KernelFailedDetails* root = root_kernel_failure(read.error());
    ASSERT_NE(root, nullptr) << read.error().report();
    EXPECT_EQ(root->code, 31u);
    EXPECT_EQ(root->device, owner.service());
}

TEST_F(CudaTwoGpus,
       a_consumer_on_another_gpu_reads_the_failed_producers_word_and_does_not_compute) {
    Client owner = runtime->client(0);
    Client peer = runtime->client(1);
    std::optional<Handle> shared_memory = share_from_gpu0(4096);
    ASSERT_TRUE(shared_memory);
    Handle shared = *shared_memory;
    Handle local = allocate(peer, 4096);
    // No sync between the two: the producer is still pending when the consumer is enqueued, so
    // only the status word on GPU 0 can stop the consumer on GPU 1 before it computes.
    ASSERT_TRUE(owner.launch("fail", LaunchConfig::linear(1), {out(shared)}, KernelArgs().u64(77)));
    Result<Event> produced = owner.record_event(owner.default_stream());
    ASSERT_TRUE(produced) << produced.error().report();
    ASSERT_TRUE(peer.wait_event(peer.default_stream(), *produced));
    ASSERT_TRUE(peer.launch("copy", LaunchConfig::linear(4096), {in(shared), out(local)}));
    auto read = peer.read(local);
    ASSERT_FALSE(read);
    const UnwrittenDetails* details = unwritten(read.error());
    ASSERT_NE(details, nullptr) << read.error().report();
    EXPECT_EQ(details->chain.at(0).kernel, "copy");
    const KernelFailedDetails* root = root_kernel_failure(read.error());
    ASSERT_NE(root, nullptr) << read.error().report();
    EXPECT_EQ(root->code, 77u);
    EXPECT_EQ(runtime->skipped_on_device(1), 1u);
    EXPECT_EQ(runtime->skipped_on_device(0), 0u);
}

TEST_F(CudaTwoGpus, the_handoff_completes_across_two_gpus) {
    Client producer = runtime->client(0);
    Client consumer = runtime->client(1);
    ASSERT_TRUE(consumer.grant_peer_access(producer.service()));
    Handle data = *consumer.share_with_peers(allocate(consumer, 4096));
    Handle flag = *consumer.share_with_peers(allocate(consumer, 4));
    Handle source = allocate(producer, 4096);
    Handle result = allocate(consumer, 4096);
    ASSERT_TRUE(consumer.write(flag, std::vector<std::byte>(4)));
    ASSERT_TRUE(producer.write(source, std::vector<std::byte>(4096, std::byte{0x5a})));
    ASSERT_TRUE(runtime->sync_all());
    ASSERT_TRUE(consumer.launch("handoff_consume", LaunchConfig::linear(256),
                                {in(flag), in(data), out(result)}));
    ASSERT_TRUE(producer.launch("handoff_produce", LaunchConfig::linear(1),
                                {in(source), out(data), inout(flag)}));
    auto read = consumer.read(result);
    ASSERT_TRUE(read) << read.error().report();
    EXPECT_EQ(*read, std::vector<std::byte>(4096, std::byte{0x5a}));
}

// With lazy loading, a kernel's first launch loads it, and loading waits for the kernels
// running on the GPU: a producer launched for the first time after its consumer began to wait
// for it never ran. Every kernel is loaded when a device starts. ctest runs each test in a
// process of its own, so the handoff kernels are launched here for the first time.
TEST_F(CudaBackend, a_handoff_between_two_streams_completes_on_the_first_launch_of_its_kernels) {
    Client client = runtime->client(0);
    const StreamId side = *client.create_stream();
    Handle data = allocate(client, 4096);
    Handle flag = allocate(client, 4);
    Handle source = allocate(client, 4096);
    Handle result = allocate(client, 4096);
    ASSERT_TRUE(client.write(flag, std::vector<std::byte>(4)));
    ASSERT_TRUE(client.write(source, std::vector<std::byte>(4096, std::byte{0x5a})));
    ASSERT_TRUE(client.sync());
    ASSERT_TRUE(client.launch("handoff_consume", LaunchConfig::linear(256),
                              {in(flag), in(data), out(result)}));
    const Event consumed = *client.record_event(client.default_stream());
    ASSERT_TRUE(client.launch("handoff_produce", LaunchConfig::linear(1),
                              {in(source), out(data), inout(flag)}, {}, side));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!*client.event_complete(consumed) && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (!*client.event_complete(consumed)) {
        ADD_FAILURE() << "the consumer still waits after 20 s: its producer never ran";
        // Lets the consumer go (a copy engine's write, which needs no kernel), so the test ends.
        cudaStream_t rescue = nullptr;
        cudaStreamCreateWithFlags(&rescue, cudaStreamNonBlocking);
        const std::uint32_t one = 1;
        cudaMemcpyAsync(client.native(flag)->pointer, &one, sizeof one, cudaMemcpyHostToDevice,
                        rescue);
        cudaStreamSynchronize(rescue);
        cudaStreamDestroy(rescue);
    }
    auto read = client.read(result);
    ASSERT_TRUE(read) << read.error().report();
    EXPECT_EQ(*read, std::vector<std::byte>(4096, std::byte{0x5a}));
}

TEST_F(CudaTwoGpus, an_injected_device_loss_fails_later_work_and_peers_skip_its_memory) {
    Client owner = runtime->client(0);
    Client peer = runtime->client(1);
    std::optional<Handle> shared_memory = share_from_gpu0(64);
    ASSERT_TRUE(shared_memory);
    Handle shared = *shared_memory;
    ASSERT_TRUE(owner.write(shared, std::vector<std::byte>(64)));
    ASSERT_TRUE(owner.sync());
    ASSERT_TRUE(owner.inject(DeviceLossFault{0}));
    EXPECT_EQ(owner.allocate(64).error().kind(), ErrorKind::DeviceLost);
    Handle local = allocate(peer, 64);
    ASSERT_TRUE(peer.launch("copy", LaunchConfig::linear(64), {in(shared), out(local)}));
    auto read = peer.read(local);
    ASSERT_FALSE(read);
    EXPECT_EQ(unwritten(read.error())->root->kind(), ErrorKind::DeviceLost);
}

// A delay of 2^64 - 1 microseconds was enqueued as it came and hung the next sync; the simulator
// refused it. Both now bound what a stream is held back in all (`FaultPlan::check_delay`).
TEST_F(CudaBackend, a_stream_delay_past_its_bound_is_invalid_as_on_the_simulator) {
    Client client = runtime->client(0);
    const StreamId side = *client.create_stream();
    Status hostile = client.inject(StreamDelay{side, UINT64_MAX});
    ASSERT_FALSE(hostile);
    EXPECT_EQ(hostile.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_EQ(client.inject(StreamDelay{StreamId{99}, 1}).error().kind(),
              ErrorKind::InvalidArgument);  // No such stream.
    // 0.2 s on the GPU; the bound counts what was injected since the device last synchronised.
    ASSERT_TRUE(client.inject(StreamDelay{side, 200'000}));
    Status over = client.inject(StreamDelay{side, StreamDelay::max_steps - 199'999});
    ASSERT_FALSE(over);
    EXPECT_EQ(over.error().kind(), ErrorKind::InvalidArgument);
    ASSERT_TRUE(client.sync());  // The delay ran out: the stream may be held back again.
    EXPECT_TRUE(client.inject(StreamDelay{side, StreamDelay::max_steps - 199'999}));
    EXPECT_TRUE(client.inject(StreamDelay{side, 199'999}));
    Status past = client.inject(StreamDelay{side, 1});
    ASSERT_FALSE(past);
    EXPECT_EQ(past.error().kind(), ErrorKind::InvalidArgument);
}

// Every recorded event created a CUDA event that lived as long as the runtime, so a program that
// records one per iteration grew without bound.
TEST_F(CudaBackend, recorded_events_are_reused_after_a_sync_and_bounded_without_one) {
    Client client = runtime->client(0);
    const StreamId side = *client.create_stream();
    Handle buffer = allocate(client, 64);
    const Result<Event> first = client.record_event(client.default_stream());
    ASSERT_TRUE(first) << first.error().report();
    for (std::size_t round = 0; round < CudaRuntime::max_live_events + 100; ++round) {
        const Result<Event> event = client.record_event(client.default_stream());
        ASSERT_TRUE(event) << event.error().report();
        ASSERT_TRUE(client.wait_event(side, *event));
        ASSERT_LE(runtime->live_events(), CudaRuntime::max_live_events);
    }
    ASSERT_TRUE(client.sync());
    EXPECT_EQ(runtime->live_events(), 0u);
    // A completed event, its CUDA event since reused: waiting on it waits for nothing.
    EXPECT_TRUE(client.wait_event(side, *first));
    // An event of a sequence no recording reached (only a backend can make one).
    const Event unknown(detail::RuntimeKeyForTests::key(), first->device(), first->stream(),
                        first->sequence() + 1'000'000);
    EXPECT_EQ(client.wait_event(side, unknown).error().kind(), ErrorKind::InvalidArgument);
    // Reused events still order work: a fill on one stream, then a copy on another behind it.
    Handle copy = allocate(client, 64);
    ASSERT_TRUE(
        client.launch("fill", LaunchConfig::linear(64), {out(buffer)}, KernelArgs().u64(9)));
    const Result<Event> filled = client.record_event(client.default_stream());
    ASSERT_TRUE(filled);
    ASSERT_TRUE(client.wait_event(side, *filled));
    ASSERT_TRUE(client.launch("copy", LaunchConfig::linear(64), {in(buffer), out(copy)}, {}, side));
    auto read = client.read(copy);
    ASSERT_TRUE(read) << read.error().report();
    EXPECT_EQ(*read, std::vector<std::byte>(64, std::byte{9}));
}

TEST_F(CudaBackend, out_of_memory_carries_its_figures) {
    Client client = runtime->client(0);
    auto huge = client.allocate(std::uint64_t{1} << 50);
    ASSERT_FALSE(huge);
    EXPECT_EQ(huge.error().kind(), ErrorKind::OutOfMemory);
    EXPECT_NE(huge.error().details_as<OutOfMemoryDetails>(), nullptr);
    EXPECT_TRUE(client.allocate(1 << 20));
}

}  // namespace
}  // namespace tandem::cuda
