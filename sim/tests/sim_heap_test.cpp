// Rule C12 on the simulator: once warm, a launch on its success path allocates nothing, with
// resources or without (what a sync costs is shared among the round's launches). Counted by
// replacing the global operator new, so this executable runs on its own.

#include "heap_counter.hpp"

#include "tandem/sim/runtime.hpp"

#include <gtest/gtest.h>

using tandem::testing::heap_allocations;

namespace tandem::sim {
namespace {

/// Heap allocations per launch of `kernel` over `arguments`, `launches` of them a sync, once
/// warm.
double allocations_per_launch(Client& client, const char* kernel,
                              const std::vector<LaunchArgument>& arguments) {
    constexpr int launches = 64;
    const auto round = [&] {
        for (int index = 0; index < launches; ++index) {
            EXPECT_TRUE(client.launch(kernel, LaunchConfig::linear(256), arguments));
        }
        EXPECT_TRUE(client.sync());
    };
    for (int warm = 0; warm < 20; ++warm) {
        round();
    }
    constexpr int rounds = 20;
    const long before = heap_allocations.load();
    for (int index = 0; index < rounds; ++index) {
        round();
    }
    return static_cast<double>(heap_allocations.load() - before) / (rounds * launches);
}

TEST(SimHeap, a_launch_on_the_success_path_allocates_nothing) {
    auto runtime = SimRuntime::create(SimOptions{.devices = 1, .seed = 1, .capacity_bytes = 8 << 20});
    ASSERT_TRUE(runtime);
    Client client = (*runtime)->client(0);
    Result<Handle> input = client.allocate(256);
    Result<Handle> output = client.allocate(256);
    ASSERT_TRUE(input && output);
    const std::vector<LaunchArgument> copy{{*input, AccessMode::Read, std::nullopt},
                                           {*output, AccessMode::Write, std::nullopt}};
    // What a sync costs, shared among the round's launches; the bound resources are kept.
    EXPECT_LE(allocations_per_launch(client, "copy", copy), 0.1);
    EXPECT_LE(allocations_per_launch(client, "empty", {}), 0.1);
}

}  // namespace
}  // namespace tandem::sim
