// The peer rules (P1, P3, P4, P5, P7, D1, C6) on every kind of pair of devices: two devices of
// one runtime, and the devices of two ranks of a job simulated in this process (peer_pairs.hpp).
// One body a rule: what holds between the devices of a runtime holds between ranks, with the
// same error kinds and the same words in the reports.

#include "peer_pairs.hpp"

#include <gmock/gmock.h>

namespace tandem::conformance {
namespace {

using ::testing::HasSubstr;

template <typename Kind>
class PeerRules : public Conformance<Kind> {
protected:
    void SetUp() override {
        pair_ = Kind::make(this->why_not);
        if (!pair_) {
            GTEST_SKIP() << "no pair of devices here: " << this->why_not;
        }
    }
    void TearDown() override { pair_.reset(); }

    Client& owner() { return pair_->owner(); }
    Client& peer() { return pair_->peer(); }
    /// The peer's handle of `memory` (the owner's), which the owner grants the peer (P7).
    Handle share_granted(const Handle& memory) {
        Handle shared = share_only(memory);
        EXPECT_TRUE(owner().grant_peer_access(peer().service()));
        return shared;
    }
    /// The peer's handle of `memory`, without a grant.
    Handle share_only(const Handle& memory) {
        Result<Handle> shared = pair_->share(memory);
        EXPECT_TRUE(shared) << shared.error().report();
        return *shared;
    }
    /// "failed with code C on DEVICE": the words of a kernel failure's report.
    static std::string failure_words(std::uint32_t code, const Client& device) {
        return "kernel 'fail' failed with code " + std::to_string(code) + " on " +
               to_string(device.service());
    }

    std::unique_ptr<PeerPair> pair_;
};
TYPED_TEST_SUITE(PeerRules, PeerPairKinds, PeerPairNames);

TYPED_TEST(PeerRules, p1_owner_memory_never_shared_is_refused_with_wrong_service) {
    Client& owner = this->owner();
    Client& peer = this->peer();
    Handle theirs = this->allocate(owner, 64);
    Handle mine = this->allocate(peer, 64);
    Result<std::vector<std::byte>> read = peer.read(theirs);
    ASSERT_FALSE(read);
    ASSERT_EQ(read.error().kind(), ErrorKind::WrongService) << read.error().report();
    EXPECT_EQ(read.error().details_as<WrongServiceDetails>()->expected, peer.service());
    EXPECT_EQ(read.error().details_as<WrongServiceDetails>()->actual, owner.service());
    EXPECT_THAT(read.error().message(), HasSubstr(to_string(owner.service())));
    EXPECT_EQ(peer.write(theirs, filled(64, 1)).error().kind(), ErrorKind::WrongService);
    EXPECT_EQ(peer.copy(mine, theirs).error().kind(), ErrorKind::WrongService);
    EXPECT_EQ(peer.launch("copy", LaunchConfig::linear(64), {in(theirs), out(mine)}).error().kind(),
              ErrorKind::WrongService);
}

TYPED_TEST(PeerRules, p3_a_peer_kernel_reading_claimed_owner_bytes_is_skipped_with_its_report) {
    Client& owner = this->owner();
    Client& peer = this->peer();
    Handle source = this->allocate(owner, 64);
    this->fail(owner, source, 31);
    (void)owner.sync();  // The failure is on the owner's claims before it is shared.
    Handle shared = this->share_granted(source);
    Handle local = this->allocate(peer, 64);
    this->copy_kernel(peer, shared, local);
    std::optional<Error> error = this->read_error(peer, local);
    ASSERT_TRUE(error);
    ASSERT_EQ(error->kind(), ErrorKind::Unwritten) << error->report();
    const UnwrittenDetails* details = unwritten(*error);
    ASSERT_EQ(details->chain.size(), 1u) << error->report();
    EXPECT_EQ(details->chain[0].device, peer.service()) << error->report();
    const auto* root = root_of(*error)->details_as<KernelFailedDetails>();
    ASSERT_NE(root, nullptr) << error->report();
    EXPECT_EQ(root->code, 31u);
    EXPECT_EQ(root->device, owner.service());
    EXPECT_THAT(error->report(), HasSubstr("root: " + this->failure_words(31, owner)));
    EXPECT_THAT(error->report(), HasSubstr("skipped 'copy' on " + to_string(peer.service())));
}

TYPED_TEST(PeerRules, p3_a_peer_kernel_reading_only_clean_bytes_of_a_failed_allocation_runs) {
    Client& owner = this->owner();
    Client& peer = this->peer();
    Handle source = this->allocate(owner, 64);
    this->fill(owner, source, 6);
    this->fail(owner, *source.slice(32, 32), 2);
    (void)owner.sync();  // Nothing orders a peer after the owner but the program (P6).
    Handle shared = this->share_granted(source);
    Handle local = this->allocate(peer, 32);
    this->copy_kernel(peer, *shared.slice(0, 32), local);
    EXPECT_EQ(this->read_bytes(peer, local), filled(32, 6));
}

TYPED_TEST(PeerRules, p4_a_failing_peer_write_claims_the_owner_bytes_with_its_error) {
    Client& owner = this->owner();
    Client& peer = this->peer();
    Handle target = this->allocate(owner, 64);
    ASSERT_TRUE(owner.write(target, filled(64, 0)));
    ASSERT_TRUE(owner.sync());
    Handle shared = this->share_granted(target);
    this->fail(peer, shared, 12);
    ASSERT_TRUE(this->pair_->order_owner_after_peer());
    std::optional<Error> error = this->read_error(owner, target);
    ASSERT_TRUE(error);
    ASSERT_EQ(error->kind(), ErrorKind::Unwritten) << error->report();
    const auto* root = root_of(*error)->details_as<KernelFailedDetails>();
    ASSERT_NE(root, nullptr) << error->report();
    EXPECT_EQ(root->device, peer.service());
    EXPECT_EQ(root->code, 12u);
    EXPECT_THAT(error->report(), HasSubstr("root: " + this->failure_words(12, peer)));
    ASSERT_TRUE(owner.write(target, filled(64, 1)));  // C3: a landed write releases them.
    EXPECT_EQ(this->read_bytes(owner, target), filled(64, 1));
}

// P5 in the peer's program order: a rewrite the peer enqueued after its failed write repairs
// the owner's bytes, and the peer's own later read of them sees the rewrite.
TYPED_TEST(PeerRules, p5_a_peer_rewrite_after_its_failed_write_repairs_the_owner_bytes) {
    Client& owner = this->owner();
    Client& peer = this->peer();
    Handle a = this->allocate(owner, 64);
    ASSERT_TRUE(owner.write(a, filled(64, 0)));
    ASSERT_TRUE(owner.sync());
    Handle shared = this->share_granted(a);
    Handle b = this->allocate(peer, 64);
    this->fail(peer, shared, 13);
    this->fill(peer, shared, 7);
    this->copy_kernel(peer, shared, b);
    ASSERT_TRUE(this->pair_->order_owner_after_peer());
    EXPECT_EQ(this->read_bytes(owner, a), filled(64, 7));
    EXPECT_EQ(this->read_bytes(peer, b), filled(64, 7));
}

// P5 across devices by an event: the peer's write, ordered after the owner's failed write by an
// event of the owner's stream and enqueued before that failure is known, repairs the bytes.
TYPED_TEST(PeerRules, p5_a_peer_write_ordered_by_an_event_after_a_failed_owner_write_repairs_it) {
    Client& owner = this->owner();
    Client& peer = this->peer();
    Handle a = this->allocate(owner, 64);
    this->fill(owner, a, 5);
    Handle shared = this->share_granted(a);
    this->fail(owner, a, 9);
    Result<Event> failed = owner.record_event(owner.default_stream());
    ASSERT_TRUE(failed) << failed.error().report();
    Result<Event> theirs = this->pair_->pass_event(*failed);
    ASSERT_TRUE(theirs) << theirs.error().report();
    ASSERT_TRUE(peer.wait_event(peer.default_stream(), *theirs));
    this->fill(peer, shared, 3);
    (void)owner.sync();  // Runs the failing write: its claim is on the bytes first.
    ASSERT_TRUE(peer.sync());
    EXPECT_EQ(this->read_bytes(owner, a), filled(64, 3));
}

// P7 as a refusal before the launch runs (C10), naming the missing grant; a copy needs none.
TYPED_TEST(PeerRules, p7_a_peer_launch_binding_memory_the_owner_never_granted_is_refused) {
    Client& owner = this->owner();
    Client& peer = this->peer();
    Handle source = this->allocate(owner, 64);
    ASSERT_TRUE(owner.write(source, filled(64, 4)));
    ASSERT_TRUE(owner.sync());
    Handle shared = this->share_only(source);
    Handle local = this->allocate(peer, 64);
    this->copy_kernel(peer, shared, local);
    ASSERT_TRUE(peer.sync());  // Refused, not a fault: the device is not lost.
    std::optional<Error> error = this->read_error(peer, local);
    ASSERT_TRUE(error);
    const Error& root = *root_of(*error);
    ASSERT_EQ(root.kind(), ErrorKind::LaunchRefused) << error->report();
    EXPECT_THAT(root.message(), HasSubstr("never granted"));
    EXPECT_THAT(root.message(), HasSubstr(to_string(peer.service())));
    EXPECT_EQ(this->read_bytes(owner, source), filled(64, 4));
    Handle copied = this->allocate(peer, 64);
    ASSERT_TRUE(peer.copy(shared, copied));
    EXPECT_EQ(this->read_bytes(peer, copied), filled(64, 4));
}

// D1: once the owner is lost (a device of a runtime lost, a rank ended), peer work reading its
// memory is skipped with `DeviceLost` naming it, and the peer keeps working.
TYPED_TEST(PeerRules, d1_peer_work_reading_memory_of_an_owner_that_ended_is_skipped_as_lost) {
    Client& owner = this->owner();
    Client& peer = this->peer();
    Handle source = this->allocate(owner, 64);
    this->fill(owner, source, 1);
    ASSERT_TRUE(owner.sync());
    Handle shared = this->share_granted(source);
    const ServiceId owner_service = owner.service();
    this->pair_->end_owner();
    Handle local = this->allocate(peer, 64);
    this->copy_kernel(peer, shared, local);
    std::optional<Error> error = this->read_error(peer, local);
    ASSERT_TRUE(error);
    ASSERT_EQ(error->kind(), ErrorKind::Unwritten) << error->report();
    const Error& root = *root_of(*error);
    ASSERT_EQ(root.kind(), ErrorKind::DeviceLost) << error->report();
    EXPECT_THAT(root.message(), HasSubstr(to_string(owner_service)));
    EXPECT_THAT(error->report(), HasSubstr(this->pair_->end_words()));
    Handle fresh = this->allocate(peer, 64);
    this->fill(peer, fresh, 5);
    EXPECT_EQ(this->read_bytes(peer, fresh), filled(64, 5));
}

// D1 with the owner's device lost while whatever holds it lives on.
TYPED_TEST(PeerRules, d1_peer_work_reading_memory_of_a_lost_owner_device_is_skipped_as_lost) {
    Client& owner = this->owner();
    Client& peer = this->peer();
    Handle source = this->allocate(owner, 64);
    this->fill(owner, source, 1);
    ASSERT_TRUE(owner.sync());
    Handle shared = this->share_granted(source);
    ASSERT_TRUE(owner.inject(DeviceLossFault{0}));
    Handle local = this->allocate(peer, 64);
    ASSERT_TRUE(peer.copy(shared, local));
    std::optional<Error> error = this->read_error(peer, local);
    ASSERT_TRUE(error);
    ASSERT_EQ(error->kind(), ErrorKind::Unwritten) << error->report();
    const Error& root = *root_of(*error);
    ASSERT_EQ(root.kind(), ErrorKind::DeviceLost) << error->report();
    EXPECT_THAT(root.message(), HasSubstr(to_string(owner.service())));
}

// C6 across devices: a read of owner bytes two peer failures claimed names each failure once,
// in the order the read found them; a read of one failure's bytes names it with its root, and a
// read of the bytes between them reads.
TYPED_TEST(PeerRules, c6_a_read_of_owner_bytes_names_every_peer_failure_once_in_order) {
    Client& owner = this->owner();
    Client& peer = this->peer();
    Handle a = this->allocate(owner, 64);
    ASSERT_TRUE(owner.write(a, filled(64, 0)));
    ASSERT_TRUE(owner.sync());
    Handle shared = this->share_granted(a);
    this->fail(peer, *shared.slice(0, 8), 14);
    this->fail(peer, *shared.slice(32, 8), 15);
    ASSERT_TRUE(this->pair_->order_owner_after_peer());
    std::optional<Error> both = this->read_error(owner, a);
    ASSERT_TRUE(both);
    ASSERT_EQ(both->kind(), ErrorKind::Several) << both->report();
    const auto& errors = both->details_as<SeveralDetails>()->errors;
    ASSERT_EQ(errors.size(), 2u) << both->report();
    EXPECT_EQ(root_code(errors[0]), 14u);
    EXPECT_EQ(root_code(errors[1]), 15u);
    std::optional<Error> front = this->read_error(owner, *a.slice(0, 8));
    ASSERT_TRUE(front);
    ASSERT_EQ(front->kind(), ErrorKind::Unwritten) << front->report();
    EXPECT_THAT(front->report(), HasSubstr("root: " + this->failure_words(14, peer)));
    EXPECT_EQ(this->read_bytes(owner, *a.slice(8, 24)), filled(24, 0));
}

}  // namespace
}  // namespace tandem::conformance
