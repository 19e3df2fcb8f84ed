// The NCCL communicator (tandem/cuda/nccl.hpp). Three groups, each run by ctest in a process of
// its own, as NCCL is loaded once a process:
// - `WithoutNccl`: the library cannot be loaded; every entry point says so.
// - `HostDevice`: NCCL is a stand-in that loads (tests/fake_nccl.cpp) and the device is a host
//   backend's; the communicator refuses it, naming what it needs.
// - `OneRank`: a communicator of one rank on a GPU, through the machine's NCCL (skipped without
//   either): the agreement, the failure rules and the refusals of every call. Collectives
//   between ranks of several GPUs are checked by nccl_collectives_rank.cpp.

#include "tandem/cuda/nccl.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/open_runtime.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace tandem::cuda {
namespace {

using ::testing::HasSubstr;

TEST(WithoutNccl, unique_id_and_create_say_nccl_cannot_be_used_and_name_the_library) {
    Result<NcclUniqueId> id = NcclCommunicator::unique_id();
    ASSERT_FALSE(id);
    EXPECT_EQ(id.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_THAT(id.error().message(), HasSubstr("NCCL cannot be used"));
    EXPECT_THAT(id.error().message(), HasSubstr("TANDEM_NCCL_LIBRARY"));
    RuntimeOptions options;
    options.from_environment = false;
    options.backend = "reference";
    Result<std::shared_ptr<Runtime>> runtime = open_runtime(options);
    ASSERT_TRUE(runtime) << runtime.error().report();
    Result<NcclCommunicator> made =
        NcclCommunicator::create((*runtime)->client(0), 0, 1, NcclUniqueId{});
    ASSERT_FALSE(made);
    EXPECT_THAT(made.error().message(), HasSubstr("NCCL cannot be used"));
}

class HostDevice : public ::testing::Test {
protected:
    void SetUp() override {
        RuntimeOptions options;
        options.from_environment = false;
        options.backend = "reference";
        Result<std::shared_ptr<Runtime>> opened = open_runtime(options);
        ASSERT_TRUE(opened) << opened.error().report();
        runtime = *opened;
    }
    std::shared_ptr<Runtime> runtime;
};

TEST_F(HostDevice, a_device_of_a_host_backend_is_refused_naming_the_collectives_it_can_use) {
    Result<NcclCommunicator> made =
        NcclCommunicator::create(runtime->client(0), 0, 1, NcclUniqueId{});
    ASSERT_FALSE(made);
    EXPECT_EQ(made.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_THAT(made.error().message(), HasSubstr("takes a device of the cuda backend"));
    EXPECT_THAT(made.error().message(), HasSubstr("tandem::mpi::Communicator"));
}

TEST_F(HostDevice, a_rank_outside_the_communicator_is_refused_before_the_device_is_looked_at) {
    for (const auto& [rank, size] : {std::pair{1, 1}, std::pair{-1, 2}, std::pair{0, 0}}) {
        Result<NcclCommunicator> made =
            NcclCommunicator::create(runtime->client(0), rank, size, NcclUniqueId{});
        ASSERT_FALSE(made);
        EXPECT_EQ(made.error().kind(), ErrorKind::InvalidArgument);
        EXPECT_THAT(made.error().message(),
                    HasSubstr("rank " + std::to_string(rank) + " is no rank of a communicator of " +
                              std::to_string(size)));
    }
}

TEST_F(HostDevice, nccls_refusal_to_make_an_id_is_its_own_words) {
    Result<NcclUniqueId> id = NcclCommunicator::unique_id();
    ASSERT_FALSE(id);
    EXPECT_THAT(id.error().message(), HasSubstr("NCCL: ncclGetUniqueId failed: refused by the "
                                                "stand-in for NCCL"));
}

std::vector<std::byte> floats(std::vector<float> values) {
    std::vector<std::byte> bytes(values.size() * sizeof(float));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return bytes;
}

class OneRank : public ::testing::Test {
protected:
    void SetUp() override {
        Result<std::shared_ptr<CudaRuntime>> created = CudaRuntime::create();
        if (!created) {
            GTEST_SKIP() << "skipped: " << created.error().message();
        }
        runtime = *created;
        Result<NcclUniqueId> id = NcclCommunicator::unique_id();
        if (!id) {
            GTEST_SKIP() << "skipped: " << id.error().message();
        }
        Result<NcclCommunicator> made = NcclCommunicator::create(device(), 0, 1, *id);
        ASSERT_TRUE(made) << made.error().report();
        comm.emplace(std::move(*made));
    }
    Client device() { return runtime->client(0); }
    Handle written(std::vector<float> values) {
        Handle buffer = *device().allocate(values.size() * sizeof(float));
        EXPECT_TRUE(device().write(buffer, floats(values)));
        return buffer;
    }
    void fail(const Handle& buffer, std::uint64_t code) {
        ASSERT_TRUE(device().launch("fail", LaunchConfig::linear(1), {{buffer, AccessMode::Write}},
                                    KernelArgs().u64(code)));
    }
    std::shared_ptr<CudaRuntime> runtime;
    std::optional<NcclCommunicator> comm;
};

TEST_F(OneRank, an_all_reduce_of_one_rank_keeps_its_values_and_a_broadcast_too) {
    Handle buffer = written({1, -2, 3.5f, 4});
    ASSERT_TRUE(comm->all_reduce(buffer, ElementType::f32, ReduceOp::sum));
    EXPECT_EQ(*device().read(buffer), floats({1, -2, 3.5f, 4}));
    ASSERT_TRUE(comm->all_reduce(buffer, ElementType::f32, ReduceOp::max));
    ASSERT_TRUE(comm->broadcast(buffer, 0));
    EXPECT_EQ(*device().read(buffer), floats({1, -2, 3.5f, 4}));
}

TEST_F(OneRank, an_all_gather_and_a_reduce_scatter_of_one_rank_copy_input_to_output) {
    Handle input = written({7, 8});
    Handle output = written({0, 0});
    ASSERT_TRUE(comm->all_gather(input, output));
    EXPECT_EQ(*device().read(output), floats({7, 8}));
    Handle scattered = written({0, 0});
    ASSERT_TRUE(comm->reduce_scatter(input, scattered, ElementType::f32, ReduceOp::sum));
    EXPECT_EQ(*device().read(scattered), floats({7, 8}));
}

TEST_F(OneRank, a_claimed_source_moves_nothing_and_claims_the_output_with_the_hop) {
    Handle input = written({1, 2});
    Handle output = written({0, 0});
    fail(input, 17);
    ASSERT_TRUE(comm->all_gather(input, output));  // Taken, as a launch over claimed input is.
    Result<std::vector<std::byte>> read = device().read(output);
    ASSERT_FALSE(read);
    ASSERT_EQ(read.error().kind(), ErrorKind::Unwritten) << read.error().report();
    EXPECT_THAT(read.error().report(), HasSubstr("kernel 'fail' failed with code 17"));
    EXPECT_THAT(read.error().report(), HasSubstr("skipped 'nccl all_gather' on"));
    // An all-reduce of a claimed buffer keeps its own claim: the root, with no hop.
    ASSERT_TRUE(comm->all_reduce(input, ElementType::f32, ReduceOp::sum));
    Result<std::vector<std::byte>> again = device().read(input);
    ASSERT_FALSE(again);
    EXPECT_THAT(again.error().report(), HasSubstr("code 17"));
    // C3: a landed write repairs it, and the next collective reduces it.
    ASSERT_TRUE(device().write(input, floats({5, 6})));
    ASSERT_TRUE(comm->all_gather(input, output));
    EXPECT_EQ(*device().read(output), floats({5, 6}));
}

TEST_F(OneRank, calls_it_cannot_take_are_refused_and_change_nothing) {
    Handle input = written({1, 2});
    Handle output = written({9, 9, 9});
    const Status sizes = comm->all_gather(input, output);
    ASSERT_FALSE(sizes);
    EXPECT_EQ(sizes.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_EQ(*device().read(output), floats({9, 9, 9}));
    Handle odd = *device().allocate(6);
    EXPECT_EQ(comm->all_reduce(odd, ElementType::f32, ReduceOp::sum).error().kind(),
              ErrorKind::InvalidArgument);
    Handle moved = written({1});
    Handle taken = std::move(moved);  // `moved` is empty now.
    EXPECT_EQ(comm->all_reduce(moved, ElementType::f32, ReduceOp::sum).error().kind(),
              ErrorKind::InvalidArgument);
    EXPECT_THAT(comm->broadcast(input, 1).error().message(),
                HasSubstr("rank 1 is no rank of a communicator of 1"));
    EXPECT_THAT(comm->send(input, 0).error().message(),
                HasSubstr("rank 0 is not another rank of a communicator of 1"));
    EXPECT_THAT(comm->recv(input, 1).error().message(), HasSubstr("is not another rank"));
    // The communicator still works.
    ASSERT_TRUE(comm->all_gather(input, *device().allocate(8)));
}

TEST_F(OneRank, an_aborted_communicator_fails_every_later_call_with_the_cause_and_claims_nothing) {
    Handle buffer = written({3, 4});
    EXPECT_FALSE(comm->aborted());
    comm->abort(Error(ErrorKind::DeviceLost, "rank 1 (pid 42) was killed by signal 9 (Killed)"));
    for (int call = 0; call < 2; ++call) {
        const Status reduced = comm->all_reduce(buffer, ElementType::f32, ReduceOp::sum);
        ASSERT_FALSE(reduced);
        EXPECT_EQ(reduced.error().kind(), ErrorKind::DeviceLost);
        EXPECT_THAT(reduced.error().message(), HasSubstr("rank 1 (pid 42) was killed"));
    }
    EXPECT_EQ(*device().read(buffer), floats({3, 4}));
    ASSERT_TRUE(comm->aborted());
    EXPECT_EQ(comm->aborted()->kind(), ErrorKind::DeviceLost);
}

}  // namespace
}  // namespace tandem::cuda
