// The peer rules (P1, P3, P4, P5, P7, D1, C6) on every kind of pair of devices: two devices of
// one runtime, the devices of two ranks of a job simulated in this process, and the devices of
// two ranks that are processes of their own (peer_pairs.hpp). One body a rule, a script of the
// owner's and the peer's parts and their meetings: what holds between the devices of a runtime
// holds between ranks and between processes, with the same error kinds and the same words in
// the reports.
//
// On the kinds of processes, the test's own process plays neither role: its body passes over
// every part, and the fixture then runs the test again as two rank processes, one a role, and
// takes their verdicts as its own (rank_processes.hpp).

#include "peer_pairs.hpp"

#include <gmock/gmock.h>

namespace tandem::conformance {
namespace {

using ::testing::HasSubstr;

template <typename Kind>
class PeerRules : public Conformance<Kind> {
protected:
    void SetUp() override {
        if constexpr (!Kind::one_process) {
            if (!is_a_rank_of_this_test()) {
                if (const std::optional<std::string> why = Kind::why_not_here()) {
                    GTEST_SKIP() << "no ranks of this kind here: " << *why;
                }
                return;  // This process launches the ranks: TearDown, once the body passed over.
            }
        }
        pair_ = Kind::make(this->why_not);
        if (!pair_) {
            GTEST_SKIP() << "no pair of devices here: " << this->why_not;
        }
    }
    void TearDown() override {
        if (pair_) {
            pair_->finish(this->HasFailure());
            pair_.reset();
            return;
        }
        if constexpr (!Kind::one_process) {
            if (!this->IsSkipped()) {
                run_this_test_as_ranks(2, Kind::variables());
            }
        }
    }

    /// Runs `part` with the owner's device where this process plays the owner. A fatal failure
    /// stops the script, as an `ASSERT` ends a test: no later part or meeting runs.
    template <typename Part>
    void as_owner(Part&& part) {
        if (playing(Role::owner)) {
            part(pair_->owner());
        }
    }
    /// Runs `part` with the peer's device where this process plays the peer (as `as_owner`).
    template <typename Part>
    void as_peer(Part&& part) {
        if (playing(Role::peer)) {
            part(pair_->peer());
        }
    }

    /// The peer's handle of `memory` (the owner's), which the owner grants the peer first (P7),
    /// so the grant is there whenever the peer's work binds the handle.
    std::optional<Handle> share_granted(const std::optional<Handle>& memory) {
        as_owner(
            [&](Client& owner) { EXPECT_TRUE(owner.grant_peer_access(this->peer_service())); });
        return share_only(memory);
    }
    /// The peer's handle of `memory`, without a grant.
    std::optional<Handle> share_only(const std::optional<Handle>& memory) {
        return meeting() ? pair_->share(memory) : std::nullopt;
    }
    /// The peer's event of `event` (the owner's).
    std::optional<Event> pass_event(const std::optional<Event>& event) {
        return meeting() ? pair_->pass_event(event) : std::nullopt;
    }
    /// `PeerPair::settle`.
    Status settle() { return meeting() ? pair_->settle() : Status{}; }
    /// `PeerPair::meet`.
    void meet() {
        if (meeting()) {
            pair_->meet();
        }
    }
    /// `PeerPair::end_owner`.
    void end_owner() {
        if (meeting()) {
            pair_->end_owner();
        }
    }
    /// `PeerPair::end_words`.
    [[nodiscard]] std::string end_words() const { return pair_ ? pair_->end_words() : ""; }
    /// The owner's service, in either role.
    [[nodiscard]] ServiceId owner_service() const { return pair_->owner_service(); }
    /// The peer's service, in either role.
    [[nodiscard]] ServiceId peer_service() const { return pair_->peer_service(); }

    /// "failed with code C on DEVICE": the words of a kernel failure's report.
    static std::string failure_words(std::uint32_t code, ServiceId device) {
        return "kernel 'fail' failed with code " + std::to_string(code) + " on " +
               to_string(device);
    }
    /// Expects the peer's host calls with `theirs`, memory of the owner, to be refused with
    /// `WrongService` naming both devices, before anything reaches a device (P1).
    void expect_host_calls_refused(Client& peer, const Handle& theirs) {
        Handle mine = this->allocate(peer, theirs.size_in_use());
        Result<std::vector<std::byte>> read = peer.read(theirs);
        ASSERT_FALSE(read);
        ASSERT_EQ(read.error().kind(), ErrorKind::WrongService) << read.error().report();
        EXPECT_EQ(read.error().details_as<WrongServiceDetails>()->expected, peer_service());
        EXPECT_EQ(read.error().details_as<WrongServiceDetails>()->actual, owner_service());
        EXPECT_THAT(read.error().message(), HasSubstr(to_string(owner_service())));
        EXPECT_EQ(peer.write(theirs, filled(theirs.size_in_use(), 1)).error().kind(),
                  ErrorKind::WrongService);
        EXPECT_EQ(peer.copy(mine, theirs).error().kind(), ErrorKind::WrongService);
    }
    /// Expects `error`, of a read of what a peer's launch without the owner's grant was to
    /// write, to have the launch's refusal at its root, naming the grant and `peer` (P7, C10).
    static void expect_refused_for_want_of_a_grant(const std::optional<Error>& error,
                                                   const Client& peer) {
        ASSERT_TRUE(error) << "the launch ran without the owner's grant";
        const Error& refusal = *root_of(*error);
        ASSERT_EQ(refusal.kind(), ErrorKind::LaunchRefused) << error->report();
        EXPECT_THAT(refusal.message(), HasSubstr("never granted"));
        EXPECT_THAT(refusal.message(), HasSubstr(to_string(peer.service())));
    }
    /// 64 bytes of `value` on `device`, written and settled: memory no claim holds.
    Handle written(Client& device, std::uint8_t value) {
        Handle buffer = this->allocate(device, 64);
        EXPECT_TRUE(device.write(buffer, filled(64, value)));
        EXPECT_TRUE(device.sync());
        return buffer;
    }
    /// Expects a read of `buffer`, which work reading the owner's memory wrote, to fail as lost:
    /// skipped (`Unwritten`) with the owner's `DeviceLost` naming its device at the root, and
    /// `words` in the report (D1).
    void expect_read_as_lost(Client& peer, const Handle& buffer, const std::string& words = "") {
        std::optional<Error> error = this->read_error(peer, buffer);
        ASSERT_TRUE(error) << "work read the memory of an owner that is lost";
        ASSERT_EQ(error->kind(), ErrorKind::Unwritten) << error->report();
        const Error& root = *root_of(*error);
        ASSERT_EQ(root.kind(), ErrorKind::DeviceLost) << error->report();
        EXPECT_THAT(root.message(), HasSubstr(to_string(owner_service())));
        EXPECT_THAT(error->report(), HasSubstr(words));
    }

    std::unique_ptr<PeerPair> pair_;

private:
    /// Whether the script goes on here: this process has a pair and no fatal failure.
    [[nodiscard]] bool meeting() const { return pair_ && !this->HasFatalFailure(); }
    [[nodiscard]] bool playing(Role role) const { return meeting() && pair_->plays(role); }
};
TYPED_TEST_SUITE(PeerRules, PeerPairKinds, PeerPairNames);

TYPED_TEST(PeerRules, p1_a_peers_host_calls_on_owner_memory_are_refused_with_wrong_service) {
    std::optional<Handle> theirs;
    this->as_owner([&](Client& owner) { theirs = this->allocate(owner, 64); });
    const std::optional<Handle> shared = this->share_only(theirs);
    this->as_peer([&](Client& peer) { this->expect_host_calls_refused(peer, *shared); });
}

// Only a process that holds both devices can hand the peer a handle of memory never shared: a
// rank of its own process reaches another rank's memory only by looking it up, which shares it.
// So this rule runs on the kinds of one process alone.
template <typename Kind>
class PeerRulesInOneProcess : public PeerRules<Kind> {};
TYPED_TEST_SUITE(PeerRulesInOneProcess, OneProcessPeerPairKinds, PeerPairNames);

TYPED_TEST(PeerRulesInOneProcess, p1_owner_memory_never_shared_is_refused_with_wrong_service) {
    std::optional<Handle> theirs;
    this->as_owner([&](Client& owner) { theirs = this->allocate(owner, 64); });
    this->as_peer([&](Client& peer) {
        this->expect_host_calls_refused(peer, *theirs);
        Handle mine = this->allocate(peer, 64);
        Status launched = peer.launch("copy", LaunchConfig::linear(64), {in(*theirs), out(mine)});
        ASSERT_FALSE(launched);
        EXPECT_EQ(launched.error().kind(), ErrorKind::WrongService) << launched.error().report();
    });
}

TYPED_TEST(PeerRules, p3_a_peer_kernel_reading_claimed_owner_bytes_is_skipped_with_its_report) {
    std::optional<Handle> source;
    this->as_owner([&](Client& owner) {
        source = this->allocate(owner, 64);
        this->fail(owner, *source, 31);
        (void)owner.sync();  // The failure is on the owner's claims before it is shared.
    });
    const std::optional<Handle> shared = this->share_granted(source);
    this->as_peer([&](Client& peer) {
        Handle local = this->allocate(peer, 64);
        this->copy_kernel(peer, *shared, local);
        std::optional<Error> error = this->read_error(peer, local);
        ASSERT_TRUE(error);
        ASSERT_EQ(error->kind(), ErrorKind::Unwritten) << error->report();
        const UnwrittenDetails* details = unwritten(*error);
        ASSERT_EQ(details->chain.size(), 1u) << error->report();
        EXPECT_EQ(details->chain[0].device, peer.service()) << error->report();
        const auto* root = root_of(*error)->details_as<KernelFailedDetails>();
        ASSERT_NE(root, nullptr) << error->report();
        EXPECT_EQ(root->code, 31u);
        EXPECT_EQ(root->device, this->owner_service());
        EXPECT_THAT(error->report(),
                    HasSubstr("root: " + this->failure_words(31, this->owner_service())));
        EXPECT_THAT(error->report(), HasSubstr("skipped 'copy' on " + to_string(peer.service())));
    });
}

TYPED_TEST(PeerRules, p3_a_peer_kernel_reading_only_clean_bytes_of_a_failed_allocation_runs) {
    std::optional<Handle> source;
    this->as_owner([&](Client& owner) {
        source = this->allocate(owner, 64);
        this->fill(owner, *source, 6);
        this->fail(owner, *source->slice(32, 32), 2);
        (void)owner.sync();  // Nothing orders a peer after the owner but the program (P6).
    });
    const std::optional<Handle> shared = this->share_granted(source);
    this->as_peer([&](Client& peer) {
        Handle local = this->allocate(peer, 32);
        this->copy_kernel(peer, *shared->slice(0, 32), local);
        EXPECT_EQ(this->read_bytes(peer, local), filled(32, 6));
    });
}

TYPED_TEST(PeerRules, p4_a_failing_peer_write_claims_the_owner_bytes_with_its_error) {
    std::optional<Handle> target;
    this->as_owner([&](Client& owner) { target = this->written(owner, 0); });
    const std::optional<Handle> shared = this->share_granted(target);
    this->as_peer([&](Client& peer) { this->fail(peer, *shared, 12); });
    ASSERT_TRUE(this->settle());
    this->as_owner([&](Client& owner) {
        std::optional<Error> error = this->read_error(owner, *target);
        ASSERT_TRUE(error);
        ASSERT_EQ(error->kind(), ErrorKind::Unwritten) << error->report();
        const auto* root = root_of(*error)->details_as<KernelFailedDetails>();
        ASSERT_NE(root, nullptr) << error->report();
        EXPECT_EQ(root->device, this->peer_service());
        EXPECT_EQ(root->code, 12u);
        EXPECT_THAT(error->report(),
                    HasSubstr("root: " + this->failure_words(12, this->peer_service())));
        ASSERT_TRUE(owner.write(*target, filled(64, 1)));  // C3: a landed write releases them.
        EXPECT_EQ(this->read_bytes(owner, *target), filled(64, 1));
    });
}

// P5 in the peer's program order: a rewrite the peer enqueued after its failed write repairs
// the owner's bytes, and the peer's own later read of them sees the rewrite.
TYPED_TEST(PeerRules, p5_a_peer_rewrite_after_its_failed_write_repairs_the_owner_bytes) {
    std::optional<Handle> a;
    this->as_owner([&](Client& owner) { a = this->written(owner, 0); });
    const std::optional<Handle> shared = this->share_granted(a);
    std::optional<Handle> b;
    this->as_peer([&](Client& peer) {
        b = this->allocate(peer, 64);
        this->fail(peer, *shared, 13);
        this->fill(peer, *shared, 7);
        this->copy_kernel(peer, *shared, *b);
    });
    ASSERT_TRUE(this->settle());
    this->as_owner([&](Client& owner) { EXPECT_EQ(this->read_bytes(owner, *a), filled(64, 7)); });
    this->as_peer([&](Client& peer) { EXPECT_EQ(this->read_bytes(peer, *b), filled(64, 7)); });
}

// P5 across devices by an event: the peer's write, ordered after the owner's failed write by an
// event of the owner's stream and enqueued before that failure is known, repairs the bytes.
TYPED_TEST(PeerRules, p5_a_peer_write_ordered_by_an_event_after_a_failed_owner_write_repairs_it) {
    std::optional<Handle> a;
    this->as_owner([&](Client& owner) {
        a = this->allocate(owner, 64);
        this->fill(owner, *a, 5);
    });
    const std::optional<Handle> shared = this->share_granted(a);
    std::optional<Event> failed;
    this->as_owner([&](Client& owner) {
        this->fail(owner, *a, 9);
        Result<Event> recorded = owner.record_event(owner.default_stream());
        ASSERT_TRUE(recorded) << recorded.error().report();
        failed = *recorded;
    });
    const std::optional<Event> theirs = this->pass_event(failed);
    this->as_peer([&](Client& peer) {
        ASSERT_TRUE(peer.wait_event(peer.default_stream(), *theirs));
        this->fill(peer, *shared, 3);
    });
    this->meet();
    // Runs the failing write: its claim is on the bytes first, after the peer's write was
    // enqueued.
    this->as_owner([&](Client& owner) { (void)owner.sync(); });
    ASSERT_TRUE(this->settle());
    this->as_owner([&](Client& owner) { EXPECT_EQ(this->read_bytes(owner, *a), filled(64, 3)); });
}

// P7 as a refusal before the launch runs (C10), naming the missing grant; a copy needs none.
TYPED_TEST(PeerRules, p7_a_peer_launch_binding_memory_the_owner_never_granted_is_refused) {
    std::optional<Handle> source;
    this->as_owner([&](Client& owner) { source = this->written(owner, 4); });
    const std::optional<Handle> shared = this->share_only(source);
    this->as_peer([&](Client& peer) {
        Handle local = this->allocate(peer, 64);
        this->copy_kernel(peer, *shared, local);
        ASSERT_TRUE(peer.sync());  // Refused, not a fault: the device is not lost.
        this->expect_refused_for_want_of_a_grant(this->read_error(peer, local), peer);
        Handle copied = this->allocate(peer, 64);
        ASSERT_TRUE(peer.copy(*shared, copied));
        EXPECT_EQ(this->read_bytes(peer, copied), filled(64, 4));
    });
    ASSERT_TRUE(this->settle());  // The refused launch is behind the owner's read.
    this->as_owner(
        [&](Client& owner) { EXPECT_EQ(this->read_bytes(owner, *source), filled(64, 4)); });
}

// D1: once the owner is ended (a device of a runtime lost, a rank abandoned, a rank's process
// killed), peer work reading its memory is skipped with `DeviceLost` naming it, and the peer
// keeps working.
TYPED_TEST(PeerRules, d1_peer_work_reading_memory_of_an_owner_that_ended_is_skipped_as_lost) {
    std::optional<Handle> source;
    this->as_owner([&](Client& owner) { source = this->written(owner, 1); });
    const std::optional<Handle> shared = this->share_granted(source);
    this->end_owner();
    this->as_peer([&](Client& peer) {
        Handle local = this->allocate(peer, 64);
        this->copy_kernel(peer, *shared, local);
        this->expect_read_as_lost(peer, local, this->end_words());
        Handle copied = this->allocate(peer, 64);
        ASSERT_TRUE(peer.copy(*shared, copied));
        this->expect_read_as_lost(peer, copied, this->end_words());
        Handle fresh = this->allocate(peer, 64);
        this->fill(peer, fresh, 5);
        EXPECT_EQ(this->read_bytes(peer, fresh), filled(64, 5));
    });
}

// D1 with the owner's device lost while whatever holds it lives on.
TYPED_TEST(PeerRules, d1_peer_work_reading_memory_of_a_lost_owner_device_is_skipped_as_lost) {
    std::optional<Handle> source;
    this->as_owner([&](Client& owner) { source = this->written(owner, 1); });
    const std::optional<Handle> shared = this->share_granted(source);
    this->as_owner([&](Client& owner) { ASSERT_TRUE(owner.inject(DeviceLossFault{0})); });
    this->meet();  // The peer goes on once the owner's device is lost.
    this->as_peer([&](Client& peer) {
        Handle local = this->allocate(peer, 64);
        ASSERT_TRUE(peer.copy(*shared, local));
        this->expect_read_as_lost(peer, local);
    });
}

// D1 with a real fault: a kernel that traps loses the owner's device (on a GPU, its process's
// context), and the peer works on: its work reading the owner's memory is skipped as lost, its
// own work runs. On a GPU this holds only between processes, since a trap loses every GPU of its
// process: it is why a job runs one process per device.
TYPED_TEST(PeerRules, d1_a_kernel_that_traps_on_the_owner_leaves_the_peer_working) {
    if constexpr (!TypeParam::traps_apart) {
        GTEST_SKIP() << "here a trap loses both devices: they are GPUs of one process";
    }
    std::optional<Handle> source;
    this->as_owner([&](Client& owner) { source = this->written(owner, 1); });
    const std::optional<Handle> shared = this->share_granted(source);
    this->as_owner([&](Client& owner) {
        Handle trapped = this->allocate(owner, 64);
        ASSERT_TRUE(owner.launch("trap", LaunchConfig::linear(1), {out(trapped)}));
        const Status synced = owner.sync();
        ASSERT_FALSE(synced) << "a kernel that traps left its device working";
        EXPECT_EQ(synced.error().kind(), ErrorKind::DeviceLost) << synced.error().report();
    });
    this->meet();  // The peer goes on once the owner's device is lost.
    this->as_peer([&](Client& peer) {
        Handle local = this->allocate(peer, 64);
        ASSERT_TRUE(peer.copy(*shared, local));
        this->expect_read_as_lost(peer, local);
        Handle fresh = this->allocate(peer, 64);
        this->fill(peer, fresh, 5);
        EXPECT_EQ(this->read_bytes(peer, fresh), filled(64, 5));
    });
}

// C6 across devices: a read of owner bytes two peer failures claimed names each failure once,
// in the order the read found them; a read of one failure's bytes names it with its root, and a
// read of the bytes between them reads.
TYPED_TEST(PeerRules, c6_a_read_of_owner_bytes_names_every_peer_failure_once_in_order) {
    std::optional<Handle> a;
    this->as_owner([&](Client& owner) { a = this->written(owner, 0); });
    const std::optional<Handle> shared = this->share_granted(a);
    this->as_peer([&](Client& peer) {
        this->fail(peer, *shared->slice(0, 8), 14);
        this->fail(peer, *shared->slice(32, 8), 15);
    });
    ASSERT_TRUE(this->settle());
    this->as_owner([&](Client& owner) {
        std::optional<Error> both = this->read_error(owner, *a);
        ASSERT_TRUE(both);
        ASSERT_EQ(both->kind(), ErrorKind::Several) << both->report();
        const auto& errors = both->details_as<SeveralDetails>()->errors;
        ASSERT_EQ(errors.size(), 2u) << both->report();
        EXPECT_EQ(root_code(errors[0]), 14u);
        EXPECT_EQ(root_code(errors[1]), 15u);
        std::optional<Error> front = this->read_error(owner, *a->slice(0, 8));
        ASSERT_TRUE(front);
        ASSERT_EQ(front->kind(), ErrorKind::Unwritten) << front->report();
        EXPECT_THAT(front->report(),
                    HasSubstr("root: " + this->failure_words(14, this->peer_service())));
        EXPECT_EQ(this->read_bytes(owner, *a->slice(8, 24)), filled(24, 0));
    });
}

}  // namespace
}  // namespace tandem::conformance
