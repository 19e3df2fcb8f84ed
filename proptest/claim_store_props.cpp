// Property: one device's claim store, with work settled through the settle pipeline every
// backend calls, agrees with the byte model after every step.
//
// Oracle: a read returns bytes iff every byte it returns was last written by work that succeeded;
// otherwise it fails naming why. The model holds a failure id per byte; the store must hold
// exactly the same claims (C2, C3, C5, C8, C9), keep its ranges sorted, disjoint and fused (C1),
// count carriers exactly and hold no failure nothing carries (C4), name every distinct failure of
// a read once in order of discovery with its root (C6, C7), and be empty once everything is freed.

#include "byte_model.hpp"

#include "../core/tests/one_device.hpp"
#include "tandem/backend/claim_store.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <rapidcheck/state.h>

#include <set>

namespace tandem {
namespace {

using model::ByteModel;
using model::ModelRange;

constexpr ServiceId device0{1, 0};

struct StoreModel {
    ByteModel model;
    /// The id the store will give its next failure: ids come from one counter, never reused.
    std::uint64_t next_failure = 1;
    /// Failures whose root is `TornDown` (the work threw); every other root is `KernelFailed`.
    std::set<std::uint64_t> torn_down;
};

struct StoreUnderTest {
    testing::OneDevice device{device0};
    ClaimStore& store = device.store;
    SettlePipeline pipeline{device};
    std::vector<MemoryId> allocations;

    [[nodiscard]] ClaimKey key(const ModelRange& range) const {
        return ClaimKey{allocations[range.allocation], ByteRange{range.begin, range.end}};
    }
    [[nodiscard]] std::vector<ClaimKey> keys(const std::vector<ModelRange>& ranges) const {
        std::vector<ClaimKey> result;
        for (const ModelRange& range : ranges) {
            result.push_back(key(range));
        }
        return result;
    }
};

/// The root error of failure `id`: its code is the id, so reports can be checked against it.
Error root_error(std::uint64_t id) {
    return Error::kernel_failed({"work", device0, StreamId{1}, static_cast<std::uint32_t>(id)});
}

rc::Gen<ModelRange> gen_range(const StoreModel& state) {
    // Sizes are captured by value: generators run again, after the state is gone, when shrinking.
    std::vector<std::uint64_t> sizes;
    for (const auto& allocation : state.model.bytes) {
        sizes.push_back(allocation.size());
    }
    return rc::gen::mapcat(
        rc::gen::inRange<std::size_t>(0, sizes.size()), [sizes](std::size_t index) {
            const std::uint64_t size = sizes[index];
            return rc::gen::mapcat(
                rc::gen::inRange<std::uint64_t>(0, size + 1), [index, size](std::uint64_t begin) {
                    return rc::gen::map(rc::gen::inRange<std::uint64_t>(begin, size + 1),
                                        [index, begin](std::uint64_t end) {
                                            return ModelRange{index, begin, end};
                                        });
                });
        });
}

rc::Gen<std::vector<ModelRange>> gen_ranges(const StoreModel& state) {
    return rc::gen::container<std::vector<ModelRange>>(*rc::gen::inRange<std::size_t>(0, 4),
                                                       gen_range(state));
}

/// After every step: the store holds exactly the model's claims, and its own invariants hold.
void check_agrees(const StoreModel& expected, const StoreUnderTest& sut) {
    std::optional<std::string> broken = sut.store.check_invariants();
    RC_ASSERT(!broken.has_value());
    for (std::size_t index = 0; index < expected.model.bytes.size(); ++index) {
        std::vector<std::uint64_t> actual(expected.model.bytes[index].size(), 0);
        for (const Claim& claim : sut.store.claims_of(sut.allocations[index])) {
            RC_ASSERT(claim.range.end <= actual.size());
            for (std::uint64_t at = claim.range.begin; at < claim.range.end; ++at) {
                actual[at] = claim.failure.value;
            }
        }
        RC_ASSERT(actual == expected.model.bytes[index]);
    }
    const std::vector<std::uint64_t> live = expected.model.live_failures();
    RC_ASSERT(sut.store.failure_count() == live.size());
    for (std::uint64_t failure : live) {
        RC_ASSERT(sut.store.allocations_carrying(FailureId{failure}) ==
                  expected.model.carriers(failure));
    }
}

using Command = rc::state::Command<StoreModel, StoreUnderTest>;

/// Whether `range` names bytes of the model. Shrinking replays commands on smaller models.
bool fits(const StoreModel& state, const ModelRange& range) {
    return range.allocation < state.model.bytes.size() &&
           range.end <= state.model.bytes[range.allocation].size();
}

bool fits(const StoreModel& state, const std::vector<ModelRange>& ranges) {
    return std::all_of(ranges.begin(), ranges.end(),
                       [&state](const ModelRange& range) { return fits(state, range); });
}

/// Runs `step` on the store, then checks it against the model after `apply`.
template <typename Derived>
struct CheckedCommand : Command {
    void run(const StoreModel& before, StoreUnderTest& sut) const override {
        StoreModel after = before;
        static_cast<const Derived&>(*this).apply(after);
        static_cast<const Derived&>(*this).step(before, sut);
        check_agrees(after, sut);
    }
};

struct ClaimWithNewFailure : CheckedCommand<ClaimWithNewFailure> {
    ModelRange range;
    explicit ClaimWithNewFailure(const StoreModel& state) : range(*gen_range(state)) {}
    void checkPreconditions(const StoreModel& state) const override { RC_PRE(fits(state, range)); }
    void apply(StoreModel& state) const override { state.model.set(range, state.next_failure++); }
    void step(const StoreModel& state, StoreUnderTest& sut) const {
        ClaimKey keys[] = {sut.key(range)};
        RC_ASSERT(sut.store.fail(keys, root_error(state.next_failure)).value == state.next_failure);
    }
    void show(std::ostream& out) const override {
        out << "claim " << range << " with a new failure";
    }
};

struct ClaimWithLiveFailure : CheckedCommand<ClaimWithLiveFailure> {
    ModelRange range;
    std::uint64_t failure;
    explicit ClaimWithLiveFailure(const StoreModel& state)
        : range(*gen_range(state)),
          failure(state.model.live_failures().empty()
                      ? 0
                      : *rc::gen::elementOf(state.model.live_failures())) {}
    void checkPreconditions(const StoreModel& state) const override {
        RC_PRE(fits(state, range));
        const auto live = state.model.live_failures();
        RC_PRE(std::find(live.begin(), live.end(), failure) != live.end());
    }
    void apply(StoreModel& state) const override { state.model.set(range, failure); }
    void step(const StoreModel&, StoreUnderTest& sut) const {
        sut.store.claim(sut.key(range), FailureId{failure});
    }
    void show(std::ostream& out) const override {
        out << "claim " << range << " with live failure " << failure;
    }
};

struct Release : CheckedCommand<Release> {
    ModelRange range;
    explicit Release(const StoreModel& state) : range(*gen_range(state)) {}
    void checkPreconditions(const StoreModel& state) const override { RC_PRE(fits(state, range)); }
    void apply(StoreModel& state) const override { state.model.set(range, 0); }
    void step(const StoreModel&, StoreUnderTest& sut) const { sut.store.release(sut.key(range)); }
    void show(std::ostream& out) const override { out << "release " << range; }
};

struct Read : CheckedCommand<Read> {
    std::vector<ModelRange> ranges;
    explicit Read(const StoreModel& state) : ranges(*gen_ranges(state)) {}
    void checkPreconditions(const StoreModel& state) const override { RC_PRE(fits(state, ranges)); }
    void apply(StoreModel&) const override {}
    void step(const StoreModel& state, StoreUnderTest& sut) const {
        const std::vector<std::uint64_t> expected = state.model.read(ranges);
        const std::vector<ClaimKey> keys = sut.keys(ranges);
        Status read = sut.store.check(keys);
        RC_ASSERT(read.ok() == expected.empty());
        if (read.ok()) {
            return;
        }
        std::vector<Error> errors{read.error()};
        if (const auto* several = read.error().details_as<SeveralDetails>()) {
            errors = several->errors;
        }
        RC_ASSERT(errors.size() == expected.size());
        for (std::size_t index = 0; index < errors.size(); ++index) {
            const auto* details = errors[index].details_as<UnwrittenDetails>();
            RC_ASSERT(bool(details));
            RC_ASSERT(details->failure.value == expected[index]);
            RC_ASSERT(details->allocations == state.model.carriers(expected[index]));
            if (state.torn_down.contains(expected[index])) {
                RC_ASSERT(details->root->kind() == ErrorKind::TornDown);
                continue;
            }
            const auto* root = details->root->details_as<KernelFailedDetails>();
            RC_ASSERT(bool(root));
            RC_ASSERT(root->code == expected[index]);
        }
    }
    void show(std::ostream& out) const override { out << "read " << ranges; }
};

enum class Outcome { Succeed, Fail, Throw };

struct Scope : CheckedCommand<Scope> {
    std::vector<ModelRange> writes;
    Outcome outcome;
    explicit Scope(const StoreModel& state)
        : writes(*gen_ranges(state)),
          outcome(*rc::gen::element(Outcome::Succeed, Outcome::Fail, Outcome::Throw)) {}
    void checkPreconditions(const StoreModel& state) const override { RC_PRE(fits(state, writes)); }
    void apply(StoreModel& state) const override {
        // Work that writes nothing names no failure: the pipeline has no bytes to claim.
        const std::uint64_t failure =
            outcome == Outcome::Succeed ? 0 : (writes.empty() ? 0 : state.next_failure++);
        if (outcome == Outcome::Throw) {
            state.torn_down.insert(failure);
        }
        for (const ModelRange& range : writes) {
            state.model.set(range, failure);
        }
    }
    void step(const StoreModel& state, StoreUnderTest& sut) const {
        const std::vector<ClaimKey> keys = sut.keys(writes);
        auto work = testing::work_over("work", {}, keys);
        if (outcome == Outcome::Throw) {
            // A backend reports work whose code threw as torn down (C8).
            testing::run_through(sut.pipeline, work, Error::torn_down("work threw"));
        } else if (outcome == Outcome::Fail) {
            testing::run_through(sut.pipeline, work, root_error(state.next_failure));
        } else {
            testing::run_through(sut.pipeline, work);
        }
        RC_ASSERT(work->settled());
        RC_ASSERT(work->failed() == (outcome != Outcome::Succeed));
    }
    void show(std::ostream& out) const override {
        const char* names[] = {"succeeds", "fails", "throws"};
        out << "scope over " << writes << " " << names[static_cast<int>(outcome)];
    }
};

struct Launch : CheckedCommand<Launch> {
    std::vector<ModelRange> inputs;
    std::vector<ModelRange> outputs;
    bool kernel_fails;
    explicit Launch(const StoreModel& state)
        : inputs(*gen_ranges(state)),
          outputs(*gen_ranges(state)),
          kernel_fails(*rc::gen::arbitrary<bool>()) {}
    void checkPreconditions(const StoreModel& state) const override {
        RC_PRE(bool(fits(state, inputs) && fits(state, outputs)));
    }
    void apply(StoreModel& state) const override {
        std::uint64_t failure = state.model.first_claimed(inputs);
        if (failure == 0 && kernel_fails && !outputs.empty()) {
            failure = state.next_failure++;
        }
        for (const ModelRange& range : outputs) {
            state.model.set(range, failure);
        }
    }
    void step(const StoreModel& state, StoreUnderTest& sut) const {
        const std::vector<ClaimKey> in = sut.keys(inputs);
        const std::vector<ClaimKey> out = sut.keys(outputs);
        auto work = testing::work_over("kernel", in, out);
        const std::uint64_t claimed = state.model.first_claimed(inputs);
        std::optional<Error> failure;
        if (kernel_fails) {
            failure = root_error(state.next_failure);
        }
        testing::run_through(sut.pipeline, work, failure);
        // C9: held back exactly when an input is claimed; the outputs then carry its failure,
        // which the byte model checks after the step.
        RC_ASSERT((work->reported() == Work::Report::NotRun) == (claimed != 0));
        RC_ASSERT(work->settled());
    }
    void show(std::ostream& out) const override {
        out << "launch reading " << inputs << " writing " << outputs
            << (kernel_fails ? " (the kernel fails)" : "");
    }
};

struct Free : CheckedCommand<Free> {
    std::size_t allocation;
    explicit Free(const StoreModel& state)
        : allocation(*rc::gen::inRange<std::size_t>(0, state.model.bytes.size())) {}
    void checkPreconditions(const StoreModel& state) const override {
        RC_PRE(allocation < state.model.bytes.size());
    }
    void apply(StoreModel& state) const override {
        std::fill(state.model.bytes[allocation].begin(), state.model.bytes[allocation].end(), 0);
    }
    void step(const StoreModel&, StoreUnderTest& sut) const {
        sut.store.forget(sut.allocations[allocation]);
        // The bytes get a new occupant with a new id, which starts clean.
        sut.allocations[allocation] = MemoryId::next();
    }
    void show(std::ostream& out) const override { out << "free #" << allocation; }
};

RC_GTEST_PROP(ClaimStoreProperties, the_store_agrees_with_the_byte_model_after_every_step, ()) {
    const auto sizes = *rc::gen::container<std::vector<std::uint64_t>>(
        *rc::gen::inRange<std::size_t>(1, 5), rc::gen::inRange<std::uint64_t>(1, 48));
    StoreModel initial;
    StoreUnderTest sut;
    for (std::uint64_t size : sizes) {
        initial.model.bytes.emplace_back(size, 0);
        sut.allocations.push_back(MemoryId::next());
    }
    rc::state::check(initial, sut,
                     rc::state::gen::execOneOfWithArgs<ClaimWithNewFailure, ClaimWithLiveFailure,
                                                       Release, Read, Scope, Launch, Free>());
    // C4: once every allocation is freed, the graph is empty.
    for (MemoryId memory : sut.allocations) {
        sut.store.forget(memory);
    }
    RC_ASSERT(sut.store.drained());
}

}  // namespace
}  // namespace tandem
