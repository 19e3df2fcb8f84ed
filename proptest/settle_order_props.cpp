// Property: settling work out of enqueue order where the pipeline allows it (`settle_known`, and
// the work `for_each_needed` names for a read) gives the claims of settling in enqueue order.
//
// Oracle: the same program settled in enqueue order once every outcome is known. A program is
// up to 24 works over four allocations, each reading and writing random ranges and ending in a
// random outcome; the outcomes are then learned in a random order. After learning only what
// `for_each_needed` names for a random read and a random set of works it is seeded with (what a
// sync of one device picks), that read's bytes have no unsettled writer and read as they do in
// the oracle, and every seeded work is settled; after learning everything, every byte does, with
// the same root failure and the same skipped work on its way.

#include "../core/tests/one_device.hpp"
#include "tandem/backend/claim_store.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>

namespace tandem {
namespace {

constexpr ServiceId device0{1, 0};
constexpr std::size_t allocations = 4;
constexpr std::uint64_t allocation_bytes = 16;

struct RangeSpec;
struct WorkSpec;
void showValue(const RangeSpec& range, std::ostream& os);
void showValue(const WorkSpec& work, std::ostream& os);

struct RangeSpec {
    std::size_t allocation = 0;
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
};

struct WorkSpec {
    std::vector<RangeSpec> inputs;
    std::vector<RangeSpec> outputs;
    /// Zero: lands; otherwise fails with this code.
    std::uint32_t code = 0;
};

void showValue(const RangeSpec& range, std::ostream& os) {
    os << "m" << range.allocation << "[" << range.begin << "," << range.end << ")";
}

void showValue(const WorkSpec& work, std::ostream& os) {
    os << "reads";
    for (const RangeSpec& range : work.inputs) {
        os << ' ';
        showValue(range, os);
    }
    os << " writes";
    for (const RangeSpec& range : work.outputs) {
        os << ' ';
        showValue(range, os);
    }
    os << (work.code == 0 ? " lands" : " fails " + std::to_string(work.code));
}

rc::Gen<RangeSpec> gen_range() {
    return rc::gen::apply(
        [](std::size_t allocation, std::uint64_t a, std::uint64_t b) {
            return RangeSpec{allocation, std::min(a, b), std::max(a, b) + 1};
        },
        rc::gen::inRange<std::size_t>(0, allocations),
        rc::gen::inRange<std::uint64_t>(0, allocation_bytes),
        rc::gen::inRange<std::uint64_t>(0, allocation_bytes));
}

rc::Gen<std::vector<RangeSpec>> gen_ranges() {
    return rc::gen::mapcat(rc::gen::inRange<std::size_t>(0, 3), [](std::size_t count) {
        return rc::gen::container<std::vector<RangeSpec>>(count, gen_range());
    });
}

rc::Gen<WorkSpec> gen_work() {
    return rc::gen::apply(
        [](std::vector<RangeSpec> inputs, std::vector<RangeSpec> outputs, bool fails,
           std::uint32_t code) {
            return WorkSpec{std::move(inputs), std::move(outputs), fails ? code : 0};
        },
        gen_ranges(), gen_ranges(),
        rc::gen::weightedOneOf<bool>({{1, rc::gen::just(true)}, {3, rc::gen::just(false)}}),
        rc::gen::inRange<std::uint32_t>(1, 1000));
}

/// One program run through one pipeline.
struct Run {
    testing::OneDevice device{device0};
    SettlePipeline pipeline{device};
    std::vector<MemoryId> memory;
    std::vector<std::shared_ptr<Work>> works;

    explicit Run(const std::vector<WorkSpec>& program) {
        for (std::size_t index = 0; index < allocations; ++index) {
            memory.push_back(MemoryId::next());
        }
        for (std::size_t index = 0; index < program.size(); ++index) {
            const std::vector<ClaimKey> in = keys(program[index].inputs);
            const std::vector<ClaimKey> out = keys(program[index].outputs);
            works.push_back(testing::work_over("w" + std::to_string(index), in, out));
            pipeline.enqueue(works.back());
        }
    }
    [[nodiscard]] ClaimKey key(const RangeSpec& range) const {
        return ClaimKey{memory[range.allocation], ByteRange{range.begin, range.end}};
    }
    [[nodiscard]] std::vector<ClaimKey> keys(const std::vector<RangeSpec>& ranges) const {
        std::vector<ClaimKey> result;
        for (const RangeSpec& range : ranges) {
            result.push_back(key(range));
        }
        return result;
    }
    /// Work `index` ends as `spec` says.
    void learn(std::size_t index, const WorkSpec& spec) {
        Work& work = *works[index];
        if (spec.code == 0) {
            work.ran(Status{});
        } else {
            work.ran(Error::kernel_failed({work.label, device0, StreamId{1}, spec.code}));
        }
    }
    /// What a read of byte `at` of `allocation` says: ok, or the root and the skipped work.
    [[nodiscard]] std::string byte(std::size_t allocation, std::uint64_t at) const {
        const ClaimKey one[] = {{memory[allocation], ByteRange{at, at + 1}}};
        Status read = device.store.check(one);
        if (read) {
            return "ok";
        }
        const auto* details = read.error().details_as<UnwrittenDetails>();
        if (details == nullptr) {
            return "not unwritten: " + read.error().report();
        }
        std::set<std::string> chain;
        for (const SkipRecord& hop : details->chain) {
            chain.insert(hop.kernel);
        }
        std::ostringstream text;
        text << "root " << details->root->message() << ", skipped";
        for (const std::string& kernel : chain) {
            text << ' ' << kernel;
        }
        return text.str();
    }
};

RC_GTEST_PROP(SettleOrder, out_of_order_settlement_gives_the_claims_of_enqueue_order, ()) {
    const auto count = *rc::gen::inRange<std::size_t>(1, 25);
    const auto program = *rc::gen::container<std::vector<WorkSpec>>(count, gen_work());
    const RangeSpec read = *gen_range();
    // The works a sync picks itself (a device's, say); the read's needs come on top of them.
    const auto seeded = *rc::gen::container<std::vector<bool>>(count, rc::gen::arbitrary<bool>());
    // The order outcomes are learned in: the works sorted by a random rank each.
    const auto ranks = *rc::gen::container<std::vector<std::uint32_t>>(
        count, rc::gen::inRange<std::uint32_t>(0, 1000));
    std::vector<std::size_t> order(count);
    for (std::size_t index = 0; index < count; ++index) {
        order[index] = index;
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return ranks[a] < ranks[b]; });

    Run oracle(program);
    for (std::size_t index = 0; index < program.size(); ++index) {
        oracle.learn(index, program[index]);
    }
    oracle.pipeline.settle_ready();
    RC_ASSERT(oracle.pipeline.empty());

    Run run(program);
    // Learn only what the read and the seeded works need: the read's bytes are then final, and
    // every seeded work settles.
    const ClaimKey read_keys[] = {run.key(read)};
    const auto index_of = [](const Work& work) { return std::stoul(work.label.substr(1)); };
    const auto seed = [&](const Work& work) { return static_cast<bool>(seeded[index_of(work)]); };
    std::vector<std::size_t> needed;
    run.pipeline.for_each_needed(read_keys, seed,
                                 [&](Work& work) { needed.push_back(index_of(work)); });
    for (std::size_t index : needed) {
        run.learn(index, program[index]);
    }
    run.pipeline.settle_known();
    RC_ASSERT(!run.pipeline.writes_unsettled(device0, read_keys));
    RC_ASSERT(run.pipeline.settled_where(seed));
    for (std::uint64_t at = read.begin; at < read.end; ++at) {
        RC_ASSERT(run.byte(read.allocation, at) == oracle.byte(read.allocation, at));
    }
    // Then the rest, one at a time in a random order, settling what can be after each.
    for (std::size_t index : order) {
        if (std::find(needed.begin(), needed.end(), index) == needed.end()) {
            run.learn(index, program[index]);
            run.pipeline.settle_known();
            if (const std::optional<std::string> broken = run.pipeline.check_invariants()) {
                RC_FAIL(*broken);
            }
        }
    }
    RC_ASSERT(run.pipeline.empty());
    for (std::size_t allocation = 0; allocation < allocations; ++allocation) {
        for (std::uint64_t at = 0; at < allocation_bytes; ++at) {
            RC_ASSERT(run.byte(allocation, at) == oracle.byte(allocation, at));
        }
    }
}

}  // namespace
}  // namespace tandem
