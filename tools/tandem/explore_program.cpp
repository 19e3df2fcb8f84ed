#include "explore_program.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace tandem::tool {
namespace {

constexpr std::uint64_t buffer_bytes = 64;
constexpr std::uint64_t hash_bytes = 8;
constexpr std::uint32_t buffers_per_device = 3;
/// Failure codes start here so that no code's text is a prefix of another's in a report.
constexpr std::uint64_t first_code = 100;
/// The chance, in percent, that a unit of a program on a job abandons a rank: of programs of 100
/// units, about a third lose no rank, and those that do run on for about half their units after.
constexpr std::uint64_t abandon_percent = 1;

/// `prefix`, `number` and `suffix` as one name. Appended piece by piece: GCC 12 at -O3 warns
/// (-Wrestrict, wrongly) about `"d" + std::to_string(...)`.
std::string numbered(std::string_view prefix, std::uint64_t number, std::string_view suffix = {}) {
    std::string name(prefix);
    name += std::to_string(number);
    name += suffix;
    return name;
}
std::string buffer_name(std::uint32_t device, std::uint32_t index) {
    return numbered(numbered("d", device, "b"), index);
}
std::string hash_name(std::uint32_t device) { return numbered("d", device, "h"); }

/// A region a step may name: a whole buffer or one of its halves.
struct Region {
    std::string name;
    std::uint32_t device = 0;
    std::uint64_t length = 0;
    bool shared = false;
};

class Generator {
public:
    Generator(std::uint32_t devices, std::uint32_t ranks, std::uint64_t seed,
              std::uint32_t cut_percent)
        : devices_(devices),
          ranks_(ranks),
          cut_percent_(cut_percent),
          lost_(ranks, false),
          rng_(seed) {
        for (std::uint32_t device = 0; device < devices; ++device) {
            for (std::uint32_t index = 0; index < buffers_per_device; ++index) {
                const std::string name = buffer_name(device, index);
                const bool shared = index == 0;
                regions_.push_back({name, device, buffer_bytes, shared});
                regions_.push_back({name + ".lo", device, buffer_bytes / 2, shared});
                regions_.push_back({name + ".hi", device, buffer_bytes / 2, shared});
            }
        }
    }

    std::vector<Step> setup() {
        std::vector<Step> steps;
        for (std::uint32_t device = 0; device < devices_; ++device) {
            for (std::uint32_t other = 0; other < devices_; ++other) {
                if (other != device) {
                    add(steps, GrantStep{device, other});
                }
            }
            for (std::uint32_t index = 0; index < buffers_per_device; ++index) {
                const std::string name = buffer_name(device, index);
                add(steps, AllocateStep{name, device, buffer_bytes, "main"});
                if (index == 0) {
                    add(steps, ShareStep{name});
                }
                add(steps, SliceStep{name + ".lo", name, 0, buffer_bytes / 2});
                add(steps, SliceStep{name + ".hi", name, buffer_bytes / 2, buffer_bytes / 2});
                add(steps, WriteStep{name, device, fill_spec(byte())});
            }
            add(steps, AllocateStep{hash_name(device), device, hash_bytes, "main"});
            add(steps, WriteStep{hash_name(device), device, fill_spec(0)});
        }
        return steps;
    }

    std::vector<Step> unit() {
        if (std::optional<std::vector<Step>> lost = rank_lost()) {
            return std::move(*lost);
        }
        const std::uint64_t pick = rng_() % 100;
        const Region target = region();
        std::vector<Step> steps;
        if (pick < 18) {
            add(steps, WriteStep{target.name, target.device, fill_spec(byte())});
        } else if (pick < 38) {
            fill_unit(steps, target);
        } else if (pick < 58) {
            copy_unit(steps, target);
        } else if (pick < 66) {
            add(steps, launch("fail", target.device, 1, {{target.name, AccessMode::Write, {}}},
                              {ScalarArg{false, next_code_++, 0}}));
        } else if (pick < 71) {
            add(steps, launch("checksum", target.device, 1,
                              {{target.name, AccessMode::Read, {}},
                               {hash_name(target.device), AccessMode::Write, {}}},
                              {}));
        } else if (pick < 74) {
            add(steps, launch(numbered("missing_", next_code_++), target.device, 32,
                              {{target.name, AccessMode::Write, {}}}, {}));
        } else if (pick < 77) {
            add(steps, launch("fill", target.device, 0, {{target.name, AccessMode::Write, {}}},
                              {ScalarArg{false, byte(), 0}}));
        } else if (pick < 84) {
            KernelFault fault{rng_() % 2 == 0 ? "fill" : "copy", 1 + rng_() % 3, 1.0,
                              static_cast<std::uint32_t>(next_code_++)};
            add(steps, InjectStep{target.device, "main", fault});
        } else {
            add(steps, ReadStep{target.name, target.device, std::nullopt, std::nullopt});
        }
        return steps;
    }

    /// Reads of every buffer, one unit each, so a shrunk program keeps only the read that fails.
    std::vector<std::vector<Step>> final_reads() {
        std::vector<std::vector<Step>> units;
        for (std::uint32_t device = 0; device < devices_; ++device) {
            for (std::uint32_t index = 0; index < buffers_per_device; ++index) {
                units.push_back({});
                add(units.back(),
                    ReadStep{buffer_name(device, index), device, std::nullopt, std::nullopt});
            }
            units.push_back({});
            add(units.back(), ReadStep{hash_name(device), device, std::nullopt, std::nullopt});
        }
        return units;
    }

private:
    /// A unit that loses a rank, drawn from the seed on a job: a connection cut between two
    /// living ranks (only when cuts are on, so that a program without them draws as it always
    /// did), or a rank abandoned; none when neither is drawn or only one rank lives.
    std::optional<std::vector<Step>> rank_lost() {
        std::vector<Step> steps;
        if (ranks_ > 1 && cut_percent_ > 0 && rng_() % 100 < cut_percent_) {
            if (std::optional<std::pair<std::uint32_t, std::uint32_t>> pair = ranks_to_part()) {
                add(steps, CutStep{pair->first, pair->second});
                return steps;
            }
        }
        if (ranks_ > 1 && rng_() % 100 < abandon_percent) {
            if (std::optional<std::uint32_t> rank = rank_to_abandon()) {
                add(steps, AbandonStep{*rank});
                return steps;
            }
        }
        return std::nullopt;
    }
    /// The living ranks, in rank order.
    std::vector<std::uint32_t> living() const {
        std::vector<std::uint32_t> ranks;
        for (std::uint32_t rank = 0; rank < ranks_; ++rank) {
            if (!lost_[rank]) {
                ranks.push_back(rank);
            }
        }
        return ranks;
    }
    /// A living rank drawn from the seed, and marked lost; none when only one lives.
    std::optional<std::uint32_t> rank_to_abandon() {
        const std::vector<std::uint32_t> ranks = living();
        if (ranks.size() < 2) {
            return std::nullopt;
        }
        const std::uint32_t rank = ranks[rng_() % ranks.size()];
        lost_[rank] = true;
        return rank;
    }
    /// Two living ranks drawn from the seed, lower first, the higher marked lost (the job cuts
    /// it off); none when only one lives.
    std::optional<std::pair<std::uint32_t, std::uint32_t>> ranks_to_part() {
        const std::vector<std::uint32_t> ranks = living();
        if (ranks.size() < 2) {
            return std::nullopt;
        }
        const std::size_t first = rng_() % ranks.size();
        const std::size_t second = (first + 1 + rng_() % (ranks.size() - 1)) % ranks.size();
        const std::uint32_t lower = std::min(ranks[first], ranks[second]);
        const std::uint32_t higher = std::max(ranks[first], ranks[second]);
        lost_[higher] = true;
        return std::pair(lower, higher);
    }
    static void add(std::vector<Step>& steps, Action action) {
        steps.push_back(Step{SourceMark{}, std::move(action), std::nullopt});
    }
    static ByteSpec fill_spec(std::uint8_t value) {
        ByteSpec spec;
        spec.fill = value;
        return spec;
    }
    std::uint8_t byte() { return static_cast<std::uint8_t>(rng_()); }
    Region region() { return regions_[rng_() % regions_.size()]; }
    Region region_of_length(std::uint64_t length, std::optional<std::uint32_t> device,
                            bool shared_only) {
        for (;;) {
            Region candidate = region();
            if (candidate.length == length && (!device || candidate.device == *device) &&
                (!shared_only || candidate.shared)) {
                return candidate;
            }
        }
    }
    std::uint32_t other_device(std::uint32_t device) {
        return static_cast<std::uint32_t>((device + 1 + rng_() % (devices_ - 1)) % devices_);
    }
    static LaunchStep launch(std::string kernel, std::uint32_t device, std::uint64_t threads,
                             std::vector<LaunchResource> resources, std::vector<ScalarArg> args) {
        LaunchStep step;
        step.kernel = std::move(kernel);
        step.device = device;
        step.config = threads == 0 ? LaunchConfig{Dim3{0, 1, 1}, Dim3{32, 1, 1}}
                                   : LaunchConfig::linear(threads, 64);
        step.resources = std::move(resources);
        step.args = std::move(args);
        return step;
    }

    /// A peer step runs between an event from the owner and a sync of the launching device, so
    /// the model's program order is the order in which it runs.
    void bracket_peer(std::vector<Step>& steps, std::uint32_t owner, std::uint32_t device,
                      LaunchStep launched) {
        const std::string event = numbered("e", next_event_++);
        add(steps, RecordStep{event, owner, "main"});
        add(steps, WaitStep{event, device, "main"});
        add(steps, std::move(launched));
        add(steps, SyncStep{device, {}});
    }

    void fill_unit(std::vector<Step>& steps, const Region& target) {
        const std::vector<ScalarArg> args{ScalarArg{false, byte(), 0}};
        if (devices_ > 1 && rng_() % 4 == 0) {
            const Region shared = region_of_length(target.length, std::nullopt, true);
            const std::uint32_t device = other_device(shared.device);
            bracket_peer(steps, shared.device, device,
                         launch("fill", device, target.length,
                                {{shared.name, AccessMode::Write, {}}}, args));
            return;
        }
        add(steps, launch("fill", target.device, target.length,
                          {{target.name, AccessMode::Write, {}}}, args));
    }

    void copy_unit(std::vector<Step>& steps, const Region& target) {
        if (devices_ > 1 && rng_() % 3 == 0) {
            const Region source =
                region_of_length(target.length, other_device(target.device), true);
            bracket_peer(
                steps, source.device, target.device,
                launch("copy", target.device, target.length,
                       {{source.name, AccessMode::Read, {}}, {target.name, AccessMode::Write, {}}},
                       {}));
            return;
        }
        const Region source = region_of_length(target.length, target.device, false);
        add(steps,
            launch("copy", target.device, target.length,
                   {{source.name, AccessMode::Read, {}}, {target.name, AccessMode::Write, {}}},
                   {}));
    }

    std::uint32_t devices_;
    std::uint32_t ranks_;
    /// The chance, in percent, that a unit cuts a connection between two living ranks.
    std::uint32_t cut_percent_;
    /// The ranks this program abandoned or cut off so far.
    std::vector<bool> lost_;
    std::mt19937_64 rng_;
    std::vector<Region> regions_;
    std::uint64_t next_code_ = first_code;
    std::uint64_t next_event_ = 1;
};

}  // namespace

bool loses_a_rank(const std::vector<std::vector<Step>>& units) {
    return std::any_of(units.begin(), units.end(), [](const std::vector<Step>& unit) {
        return unit.size() == 1 && (std::holds_alternative<AbandonStep>(unit.front().action) ||
                                    std::holds_alternative<CutStep>(unit.front().action));
    });
}

ExploreProgram generate_program(std::uint32_t devices, std::size_t unit_count, std::uint64_t seed,
                                std::uint32_t ranks, std::uint32_t cut_percent) {
    Generator generator(devices, ranks, seed, cut_percent);
    ExploreProgram program;
    program.devices = devices;
    program.ranks = ranks;
    program.seed = seed;
    program.setup = generator.setup();
    for (std::size_t index = 0; index < unit_count; ++index) {
        program.units.push_back(generator.unit());
    }
    for (std::vector<Step>& read : generator.final_reads()) {
        program.units.push_back(std::move(read));
    }
    return program;
}

}  // namespace tandem::tool
