// The NCCL loader: what it reports for a library that is not there, one that is not NCCL, and
// NCCL itself (a stand-in built from fake_nccl.cpp in two versions, since the build machines have
// no NCCL; on a GPU machine the process's own load finds the real one); and NCCL's two version
// encodings.

#include "nccl_library.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

namespace tandem::cuda {
namespace {

/// Sets TANDEM_NCCL_LIBRARY for one test and puts the previous value back after it.
class NcclVariable {
public:
    explicit NcclVariable(const char* value) {
        if (const char* old = std::getenv(name)) {
            previous_ = old;
        }
        ::setenv(name, value, 1);
    }
    ~NcclVariable() {
        if (previous_) {
            ::setenv(name, previous_->c_str(), 1);
        } else {
            ::unsetenv(name);
        }
    }
    NcclVariable(const NcclVariable&) = delete;
    NcclVariable& operator=(const NcclVariable&) = delete;

private:
    static constexpr const char* name = "TANDEM_NCCL_LIBRARY";
    std::optional<std::string> previous_;
};

TEST(NcclLibrary, a_library_that_does_not_exist_is_not_found_and_the_report_names_its_path) {
    const NcclVariable variable("/nonexistent/libnccl.so.2");
    const NcclLoad load = load_nccl(nccl_library_name());
    EXPECT_EQ(load.library, "/nonexistent/libnccl.so.2");
    EXPECT_FALSE(load.opened);
    EXPECT_FALSE(load.usable);
    EXPECT_TRUE(load.path.empty());
    EXPECT_FALSE(load.version.has_value());
    EXPECT_NE(load.problem.find("/nonexistent/libnccl.so.2"), std::string::npos) << load.problem;
    EXPECT_NE(load.problem.find("No such file"), std::string::npos) << load.problem;
}

TEST(NcclLibrary, an_unset_or_empty_variable_loads_the_default_name) {
    {
        const NcclVariable variable("");
        EXPECT_EQ(nccl_library_name(), nccl_default_library);
    }
    const NcclVariable variable("/opt/nccl/lib/libnccl.so.2");
    EXPECT_EQ(nccl_library_name(), "/opt/nccl/lib/libnccl.so.2");
}

TEST(NcclLibrary, a_library_that_is_not_nccl_is_unusable_and_names_the_first_missing_entry) {
    const NcclLoad load = load_nccl("libm.so.6");
    EXPECT_TRUE(load.opened);
    EXPECT_FALSE(load.usable);
    EXPECT_NE(load.path.find("libm"), std::string::npos) << load.path;
    ASSERT_EQ(load.missing.size(), 15u);
    EXPECT_EQ(load.missing.front(), "ncclGetVersion");
    EXPECT_EQ(load.missing.back(), "ncclGroupEnd");
    EXPECT_NE(load.problem.find("libm.so.6 lacks ncclGetVersion"), std::string::npos)
        << load.problem;
    // Closed again: nothing of it is left to call.
    EXPECT_EQ(load.entry_points.get_version, nullptr);
    EXPECT_FALSE(load.has_comm_shrink());
}

TEST(NcclLibrary, an_nccl_with_the_newer_entry_points_is_usable_and_says_so) {
    const NcclLoad load = load_nccl(FAKE_NCCL_2_28_PATH);
    ASSERT_TRUE(load.usable) << load.problem;
    EXPECT_TRUE(load.problem.empty());
    EXPECT_TRUE(load.missing.empty());
    EXPECT_NE(load.path.find("tandem_fake_nccl_2_28"), std::string::npos) << load.path;
    ASSERT_TRUE(load.version.has_value());
    EXPECT_EQ(load.version->code, 22805);
    EXPECT_EQ(load.version->text(), "2.28.5");
    EXPECT_TRUE(load.has_comm_init_rank_config());
    EXPECT_TRUE(load.has_comm_revoke());
    EXPECT_TRUE(load.has_comm_shrink());
    EXPECT_STREQ(load.entry_points.get_error_string(nccl::Result::success), "no error");
}

TEST(NcclLibrary, an_older_nccl_is_usable_without_the_optional_entry_points) {
    const NcclLoad load = load_nccl(FAKE_NCCL_2_8_PATH);
    ASSERT_TRUE(load.usable) << load.problem;
    ASSERT_TRUE(load.version.has_value());
    EXPECT_EQ(load.version->text(), "2.8.4");
    EXPECT_FALSE(load.has_comm_init_rank_config());
    EXPECT_FALSE(load.has_comm_revoke());
    EXPECT_FALSE(load.has_comm_shrink());
    EXPECT_NE(load.entry_points.all_reduce, nullptr);
}

TEST(NcclLibrary, versions_from_2_9_on_give_the_major_version_ten_thousands) {
    EXPECT_EQ(decode_nccl_version(22805).text(), "2.28.5");
    EXPECT_EQ(decode_nccl_version(22803).text(), "2.28.3");
    EXPECT_EQ(decode_nccl_version(21803).text(), "2.18.3");
    EXPECT_EQ(decode_nccl_version(20900).text(), "2.9.0");
    const NcclVersion version = decode_nccl_version(22707);
    EXPECT_EQ(version.major, 2);
    EXPECT_EQ(version.minor, 27);
    EXPECT_EQ(version.patch, 7);
    EXPECT_EQ(version.code, 22707);
}

TEST(NcclLibrary, versions_before_2_9_gave_the_major_version_thousands) {
    EXPECT_EQ(decode_nccl_version(2804).text(), "2.8.4");
    EXPECT_EQ(decode_nccl_version(2708).text(), "2.7.8");
    EXPECT_EQ(decode_nccl_version(2304).text(), "2.3.4");
    EXPECT_EQ(decode_nccl_version(-1).text(), "0.0.0");
    EXPECT_EQ(decode_nccl_version(-1).code, -1);
}

// The process's own load: the default library (the real NCCL on a GPU machine, nothing on a build
// machine), loaded once. Either way it says what it found.
TEST(NcclLibrary, the_process_loads_nccl_once_and_says_what_it_found) {
    const NcclLoad& load = nccl_library();
    EXPECT_EQ(&load, &nccl_library());
    EXPECT_EQ(load.library, nccl_library_name());
    if (!load.usable) {
        EXPECT_FALSE(load.problem.empty());
        GTEST_SKIP() << "no usable NCCL here: " << load.problem;
    }
    ASSERT_TRUE(load.version.has_value());
    EXPECT_EQ(load.version->major, 2);
    EXPECT_FALSE(load.path.empty());
    std::printf("NCCL %s at %s\n", load.version->text().c_str(), load.path.c_str());
}

}  // namespace
}  // namespace tandem::cuda
