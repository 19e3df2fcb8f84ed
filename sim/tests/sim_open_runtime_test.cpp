// open_runtime in a program that links the simulator: its entry is registered, it is the
// default, and the simulator's own variable (the scheduler) reaches it.

#include "../../core/tests/environment_guard.hpp"

#include "tandem/open_runtime.hpp"
#include "tandem/sim/runtime.hpp"

#include <gtest/gtest.h>

namespace tandem::sim {
namespace {

using tandem::testing::EnvironmentGuard;

TEST(SimOpenRuntime, linking_the_simulator_makes_it_the_default_backend) {
    EnvironmentGuard env;
    env.clear_runtime_variables();
    EXPECT_EQ(available_backends(), (std::vector<std::string>{"reference", "sim"}));
    Result<std::shared_ptr<Runtime>> runtime = open_runtime();
    ASSERT_TRUE(runtime.ok()) << runtime.error().report();
    EXPECT_EQ((*runtime)->backend(), "sim");
    EXPECT_EQ((*runtime)->device_count(), 1u);
}

TEST(SimOpenRuntime, the_environment_gives_the_simulator_its_devices_seed_and_scheduler) {
    EnvironmentGuard env;
    env.clear_runtime_variables()
        .set("TANDEM_BACKEND", "sim")
        .set("TANDEM_DEVICES", "2")
        .set("TANDEM_SEED", "42")
        .set("TANDEM_SCHEDULER", "threads");
    Result<std::shared_ptr<Runtime>> runtime = open_runtime();
    ASSERT_TRUE(runtime.ok()) << runtime.error().report();
    auto* sim = dynamic_cast<SimRuntime*>(runtime->get());
    ASSERT_NE(sim, nullptr);
    EXPECT_EQ(sim->device_count(), 2u);
    EXPECT_EQ(sim->options().seed, 42u);
    EXPECT_EQ(sim->options().mode, SchedulerMode::Threads);
}

TEST(SimOpenRuntime, auto_is_the_simulator_where_cuda_is_not_linked) {
    EnvironmentGuard env;
    env.clear_runtime_variables().set("TANDEM_BACKEND", "auto");
    Result<std::shared_ptr<Runtime>> runtime = open_runtime();
    ASSERT_TRUE(runtime.ok()) << runtime.error().report();
    EXPECT_EQ((*runtime)->backend(), "sim");
}

TEST(SimOpenRuntime, the_reference_backend_is_still_there_by_name) {
    EnvironmentGuard env;
    env.clear_runtime_variables().set("TANDEM_BACKEND", "reference");
    Result<std::shared_ptr<Runtime>> runtime = open_runtime();
    ASSERT_TRUE(runtime.ok()) << runtime.error().report();
    EXPECT_EQ((*runtime)->backend(), "reference");
}

}  // namespace
}  // namespace tandem::sim
