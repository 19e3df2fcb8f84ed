// Rule C12 on a GPU: once warm, a launch through the client, the CUDA device and the settle
// pipeline makes no heap allocation of tandem's on the success path (the driver's own host
// allocations are not C++ allocations and are not counted). This executable replaces the global
// operator new to count, so it runs on its own.

#include "../../core/tests/heap_counter.hpp"
#include "tandem/cuda/runtime.hpp"

#include <gtest/gtest.h>

using tandem::testing::heap_allocations;

namespace tandem::cuda {
namespace {

TEST(CudaHeapAllocations, a_warm_launch_of_bound_buffers_allocates_nothing) {
    auto runtime = CudaRuntime::create(CudaOptions{.devices = 1, .capacity_bytes = 64 << 20});
    if (!runtime) {
        GTEST_SKIP() << "no GPU: " << runtime.error().message();
    }
    Client client = (*runtime)->client(0);
    Handle input = *client.allocate(4096);
    Handle output = *client.allocate(4096);
    ASSERT_TRUE(client.write(input, std::vector<std::byte>(4096, std::byte{1})));
    const std::vector<LaunchArgument> arguments = {{input, AccessMode::Read, std::nullopt},
                                                   {output, AccessMode::Write, std::nullopt}};
    const LaunchConfig config = LaunchConfig::linear(4096);
    constexpr int launches = 1000;
    // Warm up with as many pending launches as are measured: the pipeline's ring, its writer
    // lists and the device's spare work records reach their sizes.
    for (int round = 0; round < 2; ++round) {
        for (int index = 0; index < launches; ++index) {
            ASSERT_TRUE(client.launch("copy", config, arguments));
        }
        ASSERT_TRUE(client.sync());
    }
    const long before = heap_allocations.load();
    for (int index = 0; index < launches; ++index) {
        (void)client.launch("copy", config, arguments);
    }
    const long after = heap_allocations.load();
    ASSERT_TRUE(client.sync());
    std::printf("heap allocations on %d warm CUDA launches: %ld\n", launches, after - before);
    EXPECT_EQ(after - before, 0);
    EXPECT_EQ(*client.read(output), std::vector<std::byte>(4096, std::byte{1}));
}

}  // namespace
}  // namespace tandem::cuda
