#include "tandem/core/error.hpp"
#include "tandem/core/result.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace tandem {
namespace {

TEST(Error, carries_typed_details_of_its_kind) {
    Error error = Error::out_of_memory("no room", {1000, 10, 512, 8});
    EXPECT_EQ(error.kind(), ErrorKind::OutOfMemory);
    const auto* details = error.details_as<OutOfMemoryDetails>();
    ASSERT_NE(details, nullptr);
    EXPECT_EQ(details->requested_bytes, 1000u);
    EXPECT_EQ(details->largest_free_block_bytes, 8u);
    EXPECT_EQ(error.details_as<WrongServiceDetails>(), nullptr);
}

TEST(Error, the_cause_chain_is_kept_in_order) {
    Error root = Error::invalid_argument("root");
    Error middle = Error::torn_down("middle");
    Error top = Error::launch_refused("k", "top").caused_by(middle).caused_by(root);
    ASSERT_NE(top.cause(), nullptr);
    EXPECT_EQ(top.cause()->message(), "middle");
    ASSERT_NE(top.cause()->cause(), nullptr);
    EXPECT_EQ(top.cause()->cause()->message(), "root");
    EXPECT_EQ(top.cause()->cause()->cause(), nullptr);
}

TEST(Error, the_report_names_kind_details_advice_and_causes) {
    Error error = Error::out_of_memory("cannot allocate", {1000, 10, 512, 8})
                      .caused_by(Error::invalid_argument("storage said no"));
    std::string report = error.report();
    EXPECT_NE(report.find("OutOfMemory: cannot allocate"), std::string::npos) << report;
    EXPECT_NE(report.find("requested 1000 bytes, free 10, reserved 512, largest free block 8"),
              std::string::npos)
        << report;
    EXPECT_NE(report.find("caused by:"), std::string::npos) << report;
    EXPECT_NE(report.find("InvalidArgument: storage said no"), std::string::npos) << report;
    EXPECT_NE(report.find("what to do: drop handles you no longer need"), std::string::npos)
        << report;
}

// "What to do" names a call that does it: a lost device asks for a new runtime, and a device of
// another rank of a job says what a job does about a rank that is gone.
TEST(Error, what_to_do_names_a_call_and_a_lost_rank_is_advised_as_a_rank) {
    const std::string local = Error::device_lost(ServiceId{7, 1}, "trapped").report();
    EXPECT_NE(local.find("what to do: nothing more runs on this device: drop its runtime and open "
                         "a new one (`tandem::open_runtime`)"),
              std::string::npos)
        << local;
    const std::string ranked =
        Error::device_lost(ServiceId{7, 0, 1, 2}, "its process was killed").report();
    EXPECT_NE(ranked.find("what to do: rank 2 is gone or its device is lost"), std::string::npos)
        << ranked;
    EXPECT_NE(ranked.find("(`tandem launch`)"), std::string::npos) << ranked;
    const std::string unwritten = Error::invalid_argument("x").report();
    EXPECT_NE(unwritten.find("what to do: fix the call"), std::string::npos) << unwritten;
}

// A peer device that cannot be reached asks for a grant; a rank or a process that did not
// answer (a join, a lookup, a wait past its limit) carries no devices, and a grant would not help.
TEST(Error, what_to_do_for_an_unreachable_peer_depends_on_whether_devices_or_ranks_failed) {
    const std::string devices =
        Error::peer_unreachable(ServiceId{7, 0}, ServiceId{7, 1}, "no access path").report();
    EXPECT_NE(devices.find("what to do: grant the access (`Client::grant_peer_access`)"),
              std::string::npos)
        << devices;
    const std::string ranks =
        Error(ErrorKind::PeerUnreachable, "rank 1 never came").report();
    EXPECT_NE(ranks.find("what to do: check that the other side runs and takes part: every rank "
                         "of the job started on this host"),
              std::string::npos)
        << ranks;
    EXPECT_EQ(ranks.find("grant"), std::string::npos) << ranks;
}

TEST(Error, thrown_by_names_the_work_and_what_it_threw_whatever_its_type) {
    try {
        throw std::runtime_error("out of workspace");
    } catch (...) {
        const Error error = Error::thrown_by("'gemm'");
        EXPECT_EQ(error.kind(), ErrorKind::TornDown);
        EXPECT_EQ(error.message(), "'gemm' threw: out of workspace");
    }
    try {
        throw 42;
    } catch (...) {
        EXPECT_EQ(Error::thrown_by("'gemm'").message(),
                  "'gemm' threw: an exception that is not a std::exception");
    }
}

TEST(Error, several_of_one_is_that_one) {
    Error only = Error::torn_down("only");
    EXPECT_EQ(Error::several({only}).kind(), ErrorKind::TornDown);
    Error both = Error::several({only, Error::invalid_argument("other")});
    EXPECT_EQ(both.kind(), ErrorKind::Several);
    EXPECT_EQ(both.details_as<SeveralDetails>()->errors.size(), 2u);
}

TEST(Error, wrong_service_names_both_services) {
    Error error = Error::wrong_service(ServiceId{1, 0, 1}, ServiceId{2, 1, 2});
    const auto* details = error.details_as<WrongServiceDetails>();
    ASSERT_NE(details, nullptr);
    EXPECT_EQ(details->expected, (ServiceId{1, 0}));
    EXPECT_EQ(details->actual, (ServiceId{2, 1}));
    // The process's first runtime goes unnamed; another is named by its number, never its id.
    EXPECT_NE(error.message().find("client of device 0"), std::string::npos) << error.message();
    EXPECT_NE(error.message().find("device 1 of runtime 2"), std::string::npos) << error.message();
}

TEST(ErrorKind, every_kind_has_a_name_and_advice) {
    for (int kind = 0; kind <= static_cast<int>(ErrorKind::TornDown); ++kind) {
        EXPECT_NE(to_string(static_cast<ErrorKind>(kind)), "Unknown");
        EXPECT_FALSE(advice(static_cast<ErrorKind>(kind)).empty());
    }
}

// Asking a failed result for its value, or a successful one for its error, is a programming
// error: a debug build asserts, a release build throws `BadResultAccess` carrying the report.
TEST(Result, asking_for_what_a_result_does_not_hold_names_what_it_holds) {
    Result<int> failed = Error::invalid_argument("no such stream");
    Status succeeded;
    Result<int> value = 3;
#ifdef NDEBUG
    try {
        (void)failed.value();
        ADD_FAILURE() << "no throw";
    } catch (const BadResultAccess& thrown) {
        EXPECT_NE(std::string(thrown.what()).find("no such stream"), std::string::npos)
            << thrown.what();
    }
    EXPECT_THROW((void)succeeded.error(), BadResultAccess);
    EXPECT_THROW((void)value.error(), BadResultAccess);
#else
    EXPECT_DEATH((void)failed.value(), "Result::value\\(\\) on an error");
    EXPECT_DEATH((void)succeeded.error(), "Result::error\\(\\) on success");
    EXPECT_DEATH((void)value.error(), "Result::error\\(\\) on a value");
#endif
    EXPECT_EQ(*value, 3);
}

}  // namespace
}  // namespace tandem
