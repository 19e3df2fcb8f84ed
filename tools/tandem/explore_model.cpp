// The byte-level model behind `tandem explore`: it runs a program's steps in program order (the
// generator orders every cross-device access so that this is the order they run in) and writes
// the oracle's expectation into every read.

#include "explore_program.hpp"

#include <algorithm>
#include <map>
#include <span>

namespace tandem::tool {
namespace {

/// One byte as the model sees it: its value, and the failure claiming it (-1: clean).
struct Cell {
    std::uint8_t value = 0;
    int failure = -1;
};

struct ModelRegion {
    std::string allocation;
    std::uint32_t device = 0;
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
};

/// An injected fault that hits a launch: its code, and its number on its device.
struct DueFault {
    std::uint32_t code = 0;
    std::uint32_t entry = 0;
};

struct PendingFault {
    KernelFault fault;
    /// Its number among the faults injected into its device, as reports give it.
    std::uint32_t entry = 0;
    std::uint64_t launches = 0;
};

class Model {
public:
    Model(std::uint32_t devices, std::uint32_t ranks)
        : devices_per_rank_(devices / ranks), lost_(ranks, -1) {}

    /// Writes the oracle's expectation into `step`; false when the step does not run (it is of
    /// a rank abandoned earlier, or waits on an event such a rank was to record).
    bool apply(Step& step) {
        if (!runs(step.action)) {
            return false;
        }
        std::visit([this, &step](auto& action) { on(action, step); }, step.action);
        return true;
    }

private:
    std::uint32_t rank_of(std::uint32_t device) const { return device / devices_per_rank_; }
    bool lost(std::uint32_t device) const { return lost_[rank_of(device)] >= 0; }
    /// Whether `action` runs: not when its device's rank was abandoned, nor when it waits on an
    /// event that such a device was to record (the record did not run).
    bool runs(const Action& action) {
        if (const auto* wait = std::get_if<WaitStep>(&action)) {
            const auto recorder = recorded_by_.find(wait->event);
            if (recorder != recorded_by_.end() && lost(recorder->second)) {
                return false;
            }
        }
        if (const auto* record = std::get_if<RecordStep>(&action)) {
            recorded_by_[record->event] = record->device;
        }
        const std::optional<std::uint32_t> device = device_of(action);
        return !device || !lost(*device);
    }
    /// The device whose rank runs `action` (explore's step kinds), if one does.
    std::optional<std::uint32_t> device_of(const Action& action) const {
        if (const auto* sync = std::get_if<SyncStep>(&action)) {
            return sync->device;
        }
        if (const auto* grant = std::get_if<GrantStep>(&action)) {
            return grant->owner;
        }
        if (const auto* slice = std::get_if<SliceStep>(&action)) {
            return regions_.at(slice->of).device;
        }
        if (const auto* share = std::get_if<ShareStep>(&action)) {
            return regions_.at(share->buffer).device;
        }
        return std::visit(
            [](const auto& step) -> std::optional<std::uint32_t> {
                if constexpr (requires { std::uint32_t{step.device}; }) {
                    return step.device;
                } else {
                    return std::nullopt;
                }
            },
            action);
    }

    /// A new failure, whose report must contain each of `texts`: its root's code or refused
    /// kernel, or the words of a rank's loss.
    int token(std::string text, std::vector<std::string> more = {}) {
        more.insert(more.begin(), std::move(text));
        tokens_.push_back(std::move(more));
        return static_cast<int>(tokens_.size() - 1);
    }
    std::span<Cell> cells(const std::string& name) {
        const ModelRegion& region = regions_.at(name);
        return std::span<Cell>(bytes_.at(region.allocation)).subspan(region.offset, region.length);
    }
    void claim(const std::string& name, int failure) {
        for (Cell& cell : cells(name)) {
            cell.failure = failure;
        }
    }
    void store(const std::string& name, const std::vector<std::uint8_t>& values) {
        std::span<Cell> target = cells(name);
        for (std::size_t index = 0; index < target.size(); ++index) {
            target[index] = Cell{values[index % values.size()], -1};
        }
    }
    /// The failure a launch reading `name` is skipped with, if any (C9, P3): the first claimed
    /// byte, byte-precise on every device.
    std::optional<int> input_failure(const std::string& name) {
        if (const std::uint32_t device = regions_.at(name).device; lost(device)) {
            return lost_[rank_of(device)];  // D1: its rank is lost, whatever its bytes held.
        }
        for (const Cell& cell : cells(name)) {
            if (cell.failure >= 0) {
                return cell.failure;
            }
        }
        return std::nullopt;
    }
    /// Whether an injected fault hits this launch, as every backend counts: each armed fault on
    /// the kernel counts every launch, and the first due, in the order they were armed, wins.
    std::optional<DueFault> fault_due(std::uint32_t device, const std::string& kernel) {
        std::optional<DueFault> due;
        for (PendingFault& pending : faults_[device]) {
            if (pending.fault.kernel != kernel) {
                continue;
            }
            ++pending.launches;
            if (!due && (pending.fault.nth == 0 || pending.launches == pending.fault.nth)) {
                due = DueFault{pending.fault.code, pending.entry};
            }
        }
        return due;
    }
    /// How a report gives a kernel's code: an injected one says so, and which fault it was (the
    /// kernel did not run).
    std::string code_text(std::uint64_t code) { return "code " + std::to_string(code) + " on"; }
    std::string code_text(const DueFault& injected) {
        return "code " + std::to_string(injected.code) + " (an injected fault: fault #" +
               std::to_string(injected.entry) + " injected into the device) on";
    }

    void on(AllocateStep& step, Step&) {
        bytes_[step.name] = std::vector<Cell>(step.size_bytes);
        regions_[step.name] = ModelRegion{step.name, step.device, 0, step.size_bytes};
    }
    void on(SliceStep& step, Step&) {
        ModelRegion region = regions_.at(step.of);
        region.offset += step.offset_bytes;
        region.length = step.length_bytes;
        regions_[step.name] = region;
    }
    void on(WriteStep& step, Step&) {
        std::vector<std::uint8_t> values;
        for (const std::byte value : step.data.materialize(regions_.at(step.buffer).length)) {
            values.push_back(std::to_integer<std::uint8_t>(value));
        }
        store(step.buffer, values);
    }
    void on(LaunchStep& step, Step& whole) {
        // The simulator draws injected faults when a launch is enqueued, so a launch that then
        // does not run (zero threads, skipped) still uses up its draw.
        const std::optional<DueFault> injected = fault_due(step.device, step.kernel);
        if (step.kernel.starts_with("missing_")) {
            // The call itself is refused (C10), however many threads it asks for.
            whole.fails = FailureExpectation{};
            whole.fails->kind = ErrorKind::LaunchRefused;
            whole.fails->report = {"no kernel of that name"};
        }
        if (step.config.runs_nothing()) {
            return;  // C10: changes no claim.
        }
        std::vector<std::string> outputs;
        std::vector<std::string> inputs;
        for (const LaunchResource& resource : step.resources) {
            (writes(resource.access) ? outputs : inputs).push_back(resource.buffer);
        }
        if (step.kernel.starts_with("missing_")) {
            const int refused = token("'" + step.kernel + "'");
            for (const std::string& output : outputs) {
                claim(output, refused);  // C10: only the declared outputs.
            }
            return;
        }
        for (const std::string& input : inputs) {
            if (std::optional<int> failure = input_failure(input)) {
                finish_failed(step, outputs, *failure);  // C9
                return;
            }
        }
        if (step.kernel == "fail") {
            finish_failed(step, outputs, token(code_text(step.args.at(0).u64)));
            return;
        }
        if (injected) {
            finish_failed(step, outputs, token(code_text(*injected)));
            return;
        }
        run_kernel(step, inputs, outputs);
    }
    void finish_failed(const LaunchStep&, const std::vector<std::string>& outputs, int failure) {
        for (const std::string& output : outputs) {
            claim(output, failure);
        }
    }
    void run_kernel(const LaunchStep& step, const std::vector<std::string>& inputs,
                    const std::vector<std::string>& outputs) {
        if (step.kernel == "fill") {
            store(outputs.at(0), {static_cast<std::uint8_t>(step.args.at(0).u64)});
        } else if (step.kernel == "copy") {
            std::vector<std::uint8_t> values;
            for (const Cell& cell : cells(inputs.at(0))) {
                values.push_back(cell.value);
            }
            store(outputs.at(0), values);
        } else if (step.kernel == "checksum") {
            std::uint64_t hash = 0xcbf29ce484222325ULL;
            for (const Cell& cell : cells(inputs.at(0))) {
                hash = (hash ^ cell.value) * 0x100000001b3ULL;
            }
            std::vector<std::uint8_t> values;
            for (int index = 0; index < 8; ++index) {
                values.push_back(static_cast<std::uint8_t>(hash >> (8 * index)));
            }
            store(outputs.at(0), values);
        }
    }
    void on(AbandonStep& step, Step&) {
        lost_[step.rank] = token("of rank " + std::to_string(step.rank) + " is lost");
    }
    /// The higher rank is cut off: to every other rank it is lost as an abandoned rank is, and
    /// the reports say which connection was lost. Its own steps are left out, as an abandoned
    /// rank's (its runtime lives on outside the job, but the program's later steps of it would
    /// be the job's calls it refuses, or work on memory of ranks lost to it).
    void on(CutStep& step, Step&) {
        lost_[step.higher] = token("of rank " + std::to_string(step.higher) + " is lost",
                                   {"was cut off from the job: its connection to rank " +
                                    std::to_string(step.lower) + " was lost"});
    }
    void on(InjectStep& step, Step&) {
        const std::uint32_t entry = ++injected_[step.device];  // Every fault takes a number.
        if (const auto* kernel = std::get_if<KernelFault>(&step.fault)) {
            faults_[step.device].push_back(PendingFault{*kernel, entry, 0});
        }
    }
    void on(ReadStep& read, Step& step) {
        std::vector<std::string> expected;
        std::vector<std::uint8_t> values;
        for (const Cell& cell : cells(read.buffer)) {
            values.push_back(cell.value);
            if (cell.failure < 0) {
                continue;
            }
            for (const std::string& text : tokens_[cell.failure]) {
                if (std::find(expected.begin(), expected.end(), text) == expected.end()) {
                    expected.push_back(text);
                }
            }
        }
        read.expect.reset();
        step.fails.reset();
        if (expected.empty()) {
            ByteSpec bytes;
            bytes.kind = ByteSpec::Kind::List;
            bytes.list = std::move(values);
            read.expect = std::move(bytes);
        } else {
            step.fails = FailureExpectation{};
            step.fails->report = std::move(expected);
        }
    }
    template <typename Other>
    void on(Other&, Step&) {}

    std::map<std::string, std::vector<Cell>> bytes_;
    std::map<std::string, ModelRegion> regions_;
    std::map<std::uint32_t, std::vector<PendingFault>> faults_;
    std::map<std::uint32_t, std::uint32_t> injected_;
    /// Per failure, the texts its report must contain.
    std::vector<std::vector<std::string>> tokens_;
    std::uint32_t devices_per_rank_;
    /// Per rank, the failure its loss is read as (its token), or -1 while it lives.
    std::vector<int> lost_;
    /// The device that recorded each event last.
    std::map<std::string, std::uint32_t> recorded_by_;
};

/// The last read of `scenario` that expects a rank's loss, if any.
std::string* last_loss_expected(Scenario& scenario) {
    for (auto step = scenario.steps.rbegin(); step != scenario.steps.rend(); ++step) {
        if (std::holds_alternative<ReadStep>(step->action) && step->fails) {
            for (std::string& token : step->fails->report) {
                if (token.ends_with(" is lost")) {
                    return &token;
                }
            }
        }
    }
    return nullptr;
}

/// Makes the program a violation of the kind `planted` (`ExploreProgram::planted_violation`).
void plant_violation(Scenario& scenario, PlantedViolation planted) {
    if (planted == PlantedViolation::loss_denied) {
        if (std::string* loss = last_loss_expected(scenario)) {
            loss->replace(loss->size() - std::string_view(" is lost").size(), std::string::npos,
                          " is not lost");
        }
        return;
    }
    for (auto step = scenario.steps.rbegin(); step != scenario.steps.rend(); ++step) {
        auto* read = std::get_if<ReadStep>(&step->action);
        if (read != nullptr && read->expect && read->expect->kind == ByteSpec::Kind::List &&
            !read->expect->list.empty()) {
            read->expect->list.front() ^= 0xff;
            return;
        }
    }
}

}  // namespace

Scenario annotate(const ExploreProgram& program) {
    Scenario scenario;
    scenario.name = "explore seed " + std::to_string(program.seed);
    scenario.description = "A random program from tandem explore, with the model's expectations.";
    scenario.devices = program.devices;
    scenario.ranks = program.ranks;
    scenario.seed = program.seed;
    scenario.capacity_bytes = std::uint64_t{4} << 20;
    scenario.path = "explore-" + std::to_string(program.seed);
    Model model(program.devices, program.ranks);
    const auto add = [&](const Step& original) {
        Step step = original;
        step.mark = SourceMark{scenario.path, static_cast<int>(scenario.steps.size() + 1), 1};
        if (model.apply(step)) {
            scenario.steps.push_back(std::move(step));
        }
    };
    for (const Step& step : program.setup) {
        add(step);
    }
    for (const std::vector<Step>& unit : program.units) {
        for (const Step& step : unit) {
            add(step);
        }
    }
    if (program.planted_violation != PlantedViolation::none) {
        plant_violation(scenario, program.planted_violation);
    }
    return scenario;
}

}  // namespace tandem::tool
