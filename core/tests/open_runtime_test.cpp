// open_runtime with tandem::core alone: the program's options, else the environment's, else the
// defaults; every bad value refused naming where it came from. Only the reference backend is
// linked here, so the others are refused as not linked (sim/tests checks the simulator's entry).

#include "environment_guard.hpp"

#include "tandem/open_runtime.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tandem {
namespace {

using ::testing::HasSubstr;
using testing::EnvironmentGuard;

/// The refusal `runtime_settings` gives for `options` in the environment as it is.
Error refusal(const RuntimeOptions& options = {}) {
    Result<RuntimeSettings> settings = runtime_settings(options);
    EXPECT_FALSE(settings.ok()) << "resolved to backend " << settings->backend;
    return settings.ok() ? Error::invalid_argument("resolved") : settings.error();
}

TEST(OpenRuntime, with_nothing_set_opens_one_reference_device_of_seed_1_where_the_simulator_is_not_linked) {
    EnvironmentGuard env;
    env.clear_runtime_variables();
    EXPECT_EQ(available_backends(), std::vector<std::string>{"reference"});
    Result<RuntimeSettings> settings = runtime_settings();
    ASSERT_TRUE(settings.ok()) << settings.error().report();
    EXPECT_EQ(settings->backend, "reference");
    EXPECT_EQ(settings->devices, 1u);
    EXPECT_EQ(settings->seed, 1u);
    Result<std::shared_ptr<Runtime>> runtime = open_runtime();
    ASSERT_TRUE(runtime.ok()) << runtime.error().report();
    EXPECT_EQ((*runtime)->backend(), "reference");
    EXPECT_EQ((*runtime)->device_count(), 1u);
}

TEST(OpenRuntime, the_environment_fills_what_the_program_leaves_unset) {
    EnvironmentGuard env;
    env.clear_runtime_variables()
        .set("TANDEM_BACKEND", "reference")
        .set("TANDEM_DEVICES", "3")
        .set("TANDEM_SEED", "0xff");
    Result<std::shared_ptr<Runtime>> runtime = open_runtime();
    ASSERT_TRUE(runtime.ok()) << runtime.error().report();
    EXPECT_EQ((*runtime)->device_count(), 3u);
    EXPECT_EQ(runtime_settings()->seed, 255u);
}

TEST(OpenRuntime, a_rank_names_the_devices_and_a_rank_past_a_jobs_last_is_refused) {
    EnvironmentGuard env;
    env.clear_runtime_variables();
    Result<std::shared_ptr<Runtime>> runtime = open_runtime({.devices = 2, .rank = 7});
    ASSERT_TRUE(runtime.ok()) << runtime.error().report();
    EXPECT_EQ((*runtime)->client(1).service().rank, 7u);
    EXPECT_EQ(to_string((*runtime)->client(1).service()).rfind("device 1", 0), 0u);
    EXPECT_THAT(to_string((*runtime)->client(1).service()), HasSubstr(" of rank 7"));
    Error refused = refusal({.rank = job_ranks_max});
    EXPECT_EQ(refused.kind(), ErrorKind::InvalidArgument);
    EXPECT_THAT(refused.message(), HasSubstr("rank 256 is past the last rank of a job (255)"));
    Result<std::shared_ptr<Runtime>> without = open_runtime();
    ASSERT_TRUE(without.ok()) << without.error().report();
    EXPECT_EQ((*without)->client(0).service().rank, ServiceId::no_rank);
    EXPECT_EQ(to_string((*without)->client(0).service()).find("rank"), std::string::npos);
}

TEST(OpenRuntime, what_the_program_sets_wins_over_the_environment) {
    EnvironmentGuard env;
    env.clear_runtime_variables().set("TANDEM_DEVICES", "3").set("TANDEM_SEED", "9");
    Result<RuntimeSettings> settings = runtime_settings({.devices = 2, .seed = 5});
    ASSERT_TRUE(settings.ok()) << settings.error().report();
    EXPECT_EQ(settings->devices, 2u);
    EXPECT_EQ(settings->seed, 5u);
}

TEST(OpenRuntime, the_environment_is_not_read_when_the_program_says_so) {
    EnvironmentGuard env;
    env.clear_runtime_variables().set("TANDEM_DEVICES", "not a number");
    Result<RuntimeSettings> settings = runtime_settings({.from_environment = false});
    ASSERT_TRUE(settings.ok()) << settings.error().report();
    EXPECT_EQ(settings->devices, 1u);
}

TEST(OpenRuntime, a_bad_variable_is_refused_even_where_the_program_sets_the_option) {
    EnvironmentGuard env;
    env.clear_runtime_variables().set("TANDEM_DEVICES", "two");
    const Error error = refusal({.devices = 2});
    EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument);
    EXPECT_THAT(error.message(), HasSubstr("TANDEM_DEVICES='two'"));
    EXPECT_THAT(error.message(), HasSubstr("1 to 64 devices"));
}

TEST(OpenRuntime, device_counts_outside_1_to_64_are_refused) {
    EnvironmentGuard env;
    env.clear_runtime_variables();
    for (const char* text : {"0", "65", "-1", "1.5", " 2", "18446744073709551616"}) {
        env.set("TANDEM_DEVICES", text);
        const Error error = refusal();
        EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument) << text;
        EXPECT_THAT(error.message(), HasSubstr("1 to 64 devices")) << text;
    }
    env.set("TANDEM_DEVICES", std::nullopt);
    EXPECT_THAT(refusal({.devices = 0}).message(), HasSubstr("RuntimeOptions::devices='0'"));
}

TEST(OpenRuntime, a_seed_past_64_bits_or_not_a_number_is_refused) {
    EnvironmentGuard env;
    env.clear_runtime_variables();
    env.set("TANDEM_SEED", "18446744073709551615");
    EXPECT_EQ(runtime_settings()->seed, UINT64_MAX);
    for (const char* text : {"18446744073709551616", "0x1ffffffffffffffff", "0x", "seven", "-3"}) {
        env.set("TANDEM_SEED", text);
        EXPECT_THAT(refusal().message(), HasSubstr("a seed is a decimal or 0x-hexadecimal"))
            << text;
    }
}

TEST(OpenRuntime, a_misspelt_backend_is_refused_naming_the_closest) {
    EnvironmentGuard env;
    env.clear_runtime_variables().set("TANDEM_BACKEND", "refrence");
    const Error error = refusal();
    EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument);
    EXPECT_THAT(error.message(), HasSubstr("TANDEM_BACKEND='refrence'"));
    EXPECT_THAT(error.message(), HasSubstr("did you mean 'reference'?"));
    env.set("TANDEM_BACKEND", std::nullopt);
    EXPECT_THAT(refusal({.backend = "gpu"}).message(), HasSubstr("RuntimeOptions::backend='gpu'"));
}

TEST(OpenRuntime, a_backend_the_program_does_not_link_is_refused_saying_which_target_to_link) {
    EnvironmentGuard env;
    env.clear_runtime_variables();
    for (const std::string name : {"sim", "cuda"}) {
        const Error error = refusal({.backend = name});
        EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument);
        EXPECT_THAT(error.message(), HasSubstr("does not link the " + name + " backend (tandem::" +
                                               name + ")"));
    }
}

TEST(OpenRuntime, auto_is_the_reference_backend_where_nothing_else_is_linked) {
    EnvironmentGuard env;
    env.clear_runtime_variables().set("TANDEM_BACKEND", "auto");
    EXPECT_EQ(runtime_settings()->backend, "reference");
}

TEST(OpenRuntime, an_unknown_scheduler_or_a_bad_gpu_list_is_refused_on_every_backend) {
    EnvironmentGuard env;
    env.clear_runtime_variables().set("TANDEM_SCHEDULER", "fifo");
    EXPECT_THAT(refusal().message(), HasSubstr("'deterministic' or 'threads'"));
    env.set("TANDEM_SCHEDULER", "threads");
    for (const char* text : {"0,", ",0", "0;1", "-1", "2147483648"}) {
        env.set("TANDEM_GPUS", text);
        EXPECT_THAT(refusal().message(), HasSubstr("CUDA ordinals, comma-separated")) << text;
    }
    env.set("TANDEM_GPUS", "0,0,1");
    Result<RuntimeSettings> settings = runtime_settings();
    ASSERT_TRUE(settings.ok()) << settings.error().report();
    EXPECT_TRUE(settings->gpus.empty()) << "a GPU list is CUDA's alone";
}

TEST(OpenRuntime, an_empty_variable_counts_as_unset) {
    EnvironmentGuard env;
    env.clear_runtime_variables().set("TANDEM_DEVICES", "").set("TANDEM_BACKEND", "");
    Result<RuntimeSettings> settings = runtime_settings();
    ASSERT_TRUE(settings.ok()) << settings.error().report();
    EXPECT_EQ(settings->devices, 1u);
}

}  // namespace
}  // namespace tandem
