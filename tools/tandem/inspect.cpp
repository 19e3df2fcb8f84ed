// `tandem inspect FILE`: a scenario's devices at the end of its run, as lines or as one JSON
// document. A simulator runtime lives in one process, so inspect runs the scenario itself
// rather than attaching to another process.

#include "commands.hpp"
#include "help_footer.hpp"
#include "json.hpp"
#include "path_checks.hpp"
#include "scenario_run.hpp"

#include <cstdio>

namespace tandem::tool {
namespace {

struct InspectFlags {
    /// As given: one file, checked before anything runs.
    std::vector<std::string> files;
    std::string file;
    std::optional<std::uint64_t> seed;
    bool json = false;
};

void print_devices(const ScenarioResult& result) {
    std::printf("devices after the last step:\n");
    for (const sim::DeviceSnapshot& device : result.devices) {
        std::printf(
            "  %s%s\n    in use %llu bytes, reserved %llu, free %llu, largest free block %llu\n"
            "    allocations %zu, claimed allocations %zu, failures %zu\n",
            to_string(device.service).c_str(), device.lost ? " (LOST)" : "",
            static_cast<unsigned long long>(device.usage.in_use_bytes),
            static_cast<unsigned long long>(device.usage.reserved_bytes),
            static_cast<unsigned long long>(device.usage.free_bytes),
            static_cast<unsigned long long>(device.usage.largest_free_block_bytes),
            device.allocations, device.claimed_allocations, device.failures);
    }
}

void print_human(const InspectFlags& flags, const ScenarioResult& result) {
    std::printf("%s: %s (seed %llu, %zu steps, %llu scheduler steps)\n", flags.file.c_str(),
                result.passed ? "passed" : "FAILED", static_cast<unsigned long long>(result.seed),
                result.steps_run, static_cast<unsigned long long>(result.scheduler_steps));
    for (const std::string& outcome : result.outcomes) {
        std::printf("  %s\n", outcome.c_str());
    }
    print_devices(result);
    std::printf("races: %zu\n", result.races.size());
    for (const sim::RaceReport& race : result.races) {
        std::printf("  %s / %s on %s\n", race.first.c_str(), race.second.c_str(),
                    to_string(race.bytes).c_str());
    }
    if (!result.passed) {
        std::printf("%s\n", result.failure.c_str());
    }
}

Json device_json(const sim::DeviceSnapshot& device) {
    return Json{{"service", to_string(device.service)},
                {"lost", device.lost},
                {"in_use_bytes", device.usage.in_use_bytes},
                {"reserved_bytes", device.usage.reserved_bytes},
                {"free_bytes", device.usage.free_bytes},
                {"largest_free_block_bytes", device.usage.largest_free_block_bytes},
                {"allocations", device.allocations},
                {"claimed_allocations", device.claimed_allocations},
                {"failures", device.failures}};
}

void print_json(const InspectFlags& flags, const ScenarioResult& result) {
    Json document = json_document("inspect");
    document["file"] = flags.file;
    document["name"] = result.name;
    document["passed"] = result.passed;
    document["seed"] = result.seed;
    document["steps"] = result.steps_run;
    document["scheduler_steps"] = result.scheduler_steps;
    document["outcomes"] = result.outcomes;
    Json& devices = document["devices"] = Json::array();
    for (const sim::DeviceSnapshot& device : result.devices) {
        devices.push_back(device_json(device));
    }
    Json& races = document["races"] = Json::array();
    for (const sim::RaceReport& race : result.races) {
        races.push_back(
            {{"first", race.first}, {"second", race.second}, {"bytes", to_string(race.bytes)}});
    }
    document["failure"] = result.passed ? Json() : Json(result.failure);
    std::printf("%s\n", json_text(document, 2).c_str());
}

int inspect(InspectFlags& flags) {
    if (!one_scenario_file("inspect", flags.files)) {
        return 2;
    }
    flags.file = flags.files.front();
    auto parsed = parse_scenario_file(flags.file);
    if (const auto* error = std::get_if<ParseError>(&parsed)) {
        std::fprintf(stderr, "tandem: %s\n", error->message.c_str());
        return 2;
    }
    const ScenarioResult result =
        run_scenario(std::get<Scenario>(parsed), RunOptions{flags.seed, false, true});
    if (flags.json) {
        print_json(flags, result);
    } else {
        print_human(flags, result);
    }
    return result.passed ? 0 : 1;
}

}  // namespace

Run add_inspect(CLI::App& app) {
    auto flags = std::make_shared<InspectFlags>();
    auto* command = app.add_subcommand(
        "inspect",
        "Run a scenario and print its devices, allocations, claims and failures at the end");
    // Any count, so that a second file or a folder is refused in words of our own.
    command->add_option("file", flags->files, "The scenario file")->required();
    command->add_option("--seed", flags->seed, "Seed (overrides the file's)")
        ->check(whole_number(0));
    command->add_flag("--json", flags->json, "Print one JSON document on stdout instead of lines");
    set_help_footer(
        *command,
        "{schema, command: \"inspect\", file, name, passed, seed, steps, scheduler_steps, "
        "outcomes: [one line per step], devices: [{service, lost, in_use_bytes, reserved_bytes, "
        "free_bytes, largest_free_block_bytes, allocations, claimed_allocations, failures}], "
        "races: [{first, second, bytes}], failure (null when it passed)}",
        {{0, "the scenario did what its file expects"},
         {1, "a step did not do what the file expects"},
         {2,
          "usage or input error: an unknown option, a value out of range, a file that cannot be "
          "read or is malformed"}});
    return [flags] { return inspect(*flags); };
}

}  // namespace tandem::tool
