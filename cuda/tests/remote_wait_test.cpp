// A CUDA stream's waits on events of other processes, as rules of their own (remote_wait.hpp):
// how a wait ends, what work after it follows, and what an event recorded after it tells another
// process. The host function runs here on the test's thread, against a directory that answers as
// a job's would; no GPU is needed, and nothing waits for a time.

#include "remote_wait.hpp"

#include "runtime_key_for_tests.hpp"

#include <gtest/gtest.h>

#include <map>

namespace tandem::cuda {
namespace {

const ServiceId owner{0xabc, 0, 1, 1};
const ServiceId waiter{0xdef, 0, 2, 0};

/// What the other ranks' directory says of their events: reached, or an error, by sequence; and
/// which were recorded after a wait that failed on their owner.
class OtherRanks final : public DeviceDirectory {
public:
    std::map<std::uint64_t, Result<bool>> reached;
    std::map<std::uint64_t, Error> failed_before;
    mutable int reached_asked = 0;
    mutable int failed_before_asked = 0;

    Result<bool> event_reached(const Event& event) const override {
        ++reached_asked;
        auto found = reached.find(event.sequence());
        return found != reached.end() ? found->second : Result<bool>(true);
    }
    std::optional<Error> failed_wait_before(const Event& event) const override {
        ++failed_before_asked;
        auto found = failed_before.find(event.sequence());
        return found != failed_before.end() ? std::optional<Error>(found->second) : std::nullopt;
    }
    std::chrono::milliseconds event_wait_limit() const override { return std::chrono::hours(1); }

    // Nothing else is asked of it by a wait.
    ServiceId service_of(std::uint32_t) const override { return waiter; }
    bool reaches(ServiceId) const override { return true; }
    void count_work(std::uint32_t) override {}
    std::optional<Error> lost(ServiceId) const override { return std::nullopt; }
    bool peer_access_granted(ServiceId, ServiceId) const override { return true; }
    bool nothing_claimed(ServiceId) const override { return true; }
    std::optional<FoundClaim> first_claimed(ServiceId, std::span<const ClaimKey>) const override {
        return std::nullopt;
    }
    Status check(ServiceId, std::span<const ClaimKey>) const override { return {}; }
    std::optional<Error> report(ServiceId, FailureId, const ClaimKey&) const override {
        return std::nullopt;
    }
    void claim_failed(ServiceId, std::span<const ClaimKey>, const Error&) override {}
    std::optional<std::string> check_invariants(ServiceId) const override { return std::nullopt; }
    std::size_t claims_size(ServiceId) const override { return 0; }
    void claim_skipped(ServiceId, std::span<const ClaimKey>, std::optional<FailureId>, const Error&,
                       SkipRecord) override {}
    void release(ServiceId, const ClaimKey&) override {}
};

Event event_of_owner(std::uint64_t sequence) {
    return Event(detail::RuntimeKeyForTests::key(), owner, StreamId{1}, sequence);
}

/// A wait of the stream whose earlier waits are `previous`, on the owner's event `sequence`,
/// enqueued when the runtime's next event was `from_event`.
std::shared_ptr<RemoteWait> wait_on(const std::shared_ptr<OtherRanks>& ranks,
                                    std::uint64_t sequence,
                                    std::shared_ptr<RemoteWait> previous = nullptr,
                                    std::uint64_t from_event = 1) {
    return remote_wait(event_of_owner(sequence), waiter, ranks, std::move(previous), from_event);
}

/// Runs `wait`'s host function here, as the stream would.
void run_host_function(const std::shared_ptr<RemoteWait>& wait) {
    RemoteWait::run(new std::shared_ptr<RemoteWait>(wait));
}

TEST(RemoteWaits, a_wait_is_over_only_once_its_host_function_returned) {
    auto ranks = std::make_shared<OtherRanks>();
    std::shared_ptr<RemoteWait> wait = wait_on(ranks, 1);
    EXPECT_FALSE(wait->over());
    EXPECT_FALSE(wait->failure());  // Not known yet, so nothing follows from it.
    run_host_function(wait);
    EXPECT_TRUE(wait->over());
    EXPECT_FALSE(wait->failure());
}

TEST(RemoteWaits, a_wait_on_a_reached_event_ends_clean_and_asks_the_owner_nothing_more) {
    auto ranks = std::make_shared<OtherRanks>();
    std::shared_ptr<RemoteWait> wait = wait_on(ranks, 1);
    run_host_function(wait);
    EXPECT_FALSE(wait->failure());
    EXPECT_FALSE(wait->failure());
    EXPECT_EQ(ranks->reached_asked, 1);
    EXPECT_EQ(ranks->failed_before_asked, 1);  // One word read, once.
}

TEST(RemoteWaits,
     a_wait_on_a_lost_owner_fails_with_the_loss_and_the_streams_later_waits_follow_it) {
    auto ranks = std::make_shared<OtherRanks>();
    ranks->reached.emplace(1, Error(ErrorKind::DeviceLost, "rank 1 was killed by signal 9"));
    std::shared_ptr<RemoteWait> first = wait_on(ranks, 1);
    std::shared_ptr<RemoteWait> second = wait_on(ranks, 2, first, 5);
    run_host_function(first);
    run_host_function(second);
    EXPECT_EQ(ranks->reached_asked,
              1);  // The second did not wait: its stream skips from the first.
    const std::optional<Error>& failed = second->failure();
    ASSERT_TRUE(failed);
    EXPECT_EQ(failed->kind(), ErrorKind::DeviceLost) << failed->report();
    EXPECT_NE(failed->report().find("killed by signal 9"), std::string::npos) << failed->report();
    EXPECT_EQ(second->depth, 2u);
}

TEST(RemoteWaits, a_reached_event_recorded_after_a_failed_wait_on_its_owner_fails_the_wait) {
    auto ranks = std::make_shared<OtherRanks>();
    ranks->failed_before.emplace(1, Error(ErrorKind::PeerUnreachable, "owner's own wait failed"));
    std::shared_ptr<RemoteWait> first = wait_on(ranks, 1);
    std::shared_ptr<RemoteWait> second = wait_on(ranks, 2, first, 5);
    run_host_function(first);
    run_host_function(second);  // Its host function saw the first end clean: it waited.
    const std::optional<Error>& failed = second->failure();
    ASSERT_TRUE(failed);
    EXPECT_EQ(failed->kind(), ErrorKind::PeerUnreachable);
    EXPECT_TRUE(first->failure());  // The first failed too: its event came after the failure.
    (void)second->failure();
    EXPECT_EQ(ranks->failed_before_asked, 1);  // Asked once, of the first; the second follows it.
}

TEST(RemoteWaits, the_waits_before_an_event_are_the_newest_enqueued_before_it_was_recorded) {
    auto ranks = std::make_shared<OtherRanks>();
    std::shared_ptr<RemoteWait> first = wait_on(ranks, 1, nullptr, 5);
    std::shared_ptr<RemoteWait> second = wait_on(ranks, 2, first, 9);
    EXPECT_EQ(wait_before_event(second, 4), nullptr);  // Recorded before any wait.
    EXPECT_EQ(wait_before_event(second, 5), first);
    EXPECT_EQ(wait_before_event(second, 8), first);
    EXPECT_EQ(wait_before_event(second, 9), second);
    EXPECT_EQ(wait_before_event(second, 1000), second);
    EXPECT_EQ(wait_before_event(nullptr, 1000), nullptr);
}

TEST(RemoteWaits, a_join_follows_the_failure_of_either_side_once_both_are_over) {
    auto ranks = std::make_shared<OtherRanks>();
    ranks->reached.emplace(1, Error(ErrorKind::DeviceLost, "the owner is gone"));
    std::shared_ptr<RemoteWait> other_stream = wait_on(ranks, 1);
    std::shared_ptr<RemoteWait> this_stream = wait_on(ranks, 2);
    std::shared_ptr<RemoteWait> join = joined_wait(this_stream, other_stream, 7);
    EXPECT_FALSE(join->over());
    run_host_function(this_stream);
    EXPECT_FALSE(join->over());  // The other stream's wait is still pending.
    run_host_function(other_stream);
    ASSERT_TRUE(join->over());
    ASSERT_TRUE(join->failure());
    EXPECT_EQ(join->failure()->kind(), ErrorKind::DeviceLost);
    EXPECT_FALSE(this_stream->failure());  // A join changes nothing of the stream before it.
    EXPECT_EQ(join->from_event, 7u);
}

TEST(RemoteWaits, a_join_of_waits_that_ended_clean_fails_nothing) {
    auto ranks = std::make_shared<OtherRanks>();
    std::shared_ptr<RemoteWait> other_stream = wait_on(ranks, 1);
    run_host_function(other_stream);
    std::shared_ptr<RemoteWait> join = joined_wait(nullptr, other_stream, 3);
    ASSERT_TRUE(join->over());
    EXPECT_FALSE(join->failure());
}

TEST(RemoteWaits, a_failed_wait_handed_on_is_over_and_fails_with_its_error) {
    std::shared_ptr<RemoteWait> failed =
        failed_wait(Error(ErrorKind::TornDown, "this rank left the job"));
    ASSERT_TRUE(failed->over());
    ASSERT_TRUE(failed->failure());
    EXPECT_EQ(failed->failure()->kind(), ErrorKind::TornDown);
    std::shared_ptr<RemoteWait> join = joined_wait(nullptr, failed, 2);
    ASSERT_TRUE(join->failure());
    EXPECT_EQ(join->failure()->kind(), ErrorKind::TornDown);
}

}  // namespace
}  // namespace tandem::cuda
