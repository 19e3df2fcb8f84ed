// The output of `tandem explore` (explore_report.hpp): lines for a person, or one JSON document.

#include "explore_report.hpp"

#include "json.hpp"

#include <cstdio>
#include <string>

namespace tandem::tool {
namespace {

using ull = unsigned long long;

double per_second(std::uint64_t count, double seconds) {
    return seconds > 0 ? static_cast<double>(count) / seconds : 0.0;
}

/// " --ranks N" for a run of jobs (with " --message-delay-us D" where frames are delayed and
/// " --cut-percent P" where connections are cut), else nothing.
std::string ranks_flag(const ExploreRequest& request) {
    if (request.ranks <= 1) {
        return {};
    }
    std::string flags = " --ranks " + std::to_string(request.ranks);
    if (request.message_delay_us > 0) {
        flags += " --message-delay-us " + std::to_string(request.message_delay_us);
    }
    if (request.cut_percent > 0) {
        flags += " --cut-percent " + std::to_string(request.cut_percent);
    }
    return flags;
}

/// "4 devices" or, for a run of jobs, "4 devices in 2 ranks".
std::string devices_text(const ExploreRequest& request) {
    std::string text = std::to_string(request.devices) + " devices";
    if (request.ranks > 1) {
        text += " in " + std::to_string(request.ranks) + " ranks";
    }
    if (request.message_delay_us > 0) {
        text += " (frames between them delayed up to " +
                std::to_string(request.message_delay_us) + " us)";
    }
    if (request.cut_percent > 0) {
        text += " (a unit cuts a connection between two of them with a chance of " +
                std::to_string(request.cut_percent) + "%)";
    }
    return text;
}

/// The command line that runs exactly this program again.
std::string rerun_command(const ExploreRequest& request, std::uint64_t seed) {
    return "tandem explore --runs 1 --seed " + std::to_string(seed) + " --devices " +
           std::to_string(request.devices) + ranks_flag(request) + " --steps " +
           std::to_string(request.steps);
}

Json violation_json(const ExploreRequest& request, const ExploreViolation& violation) {
    return Json{{"seed", violation.seed},
                {"rerun", rerun_command(request, violation.seed)},
                {"failure", violation.failure},
                {"units", violation.units},
                {"shrunk_units", violation.shrunk_units ? Json(*violation.shrunk_units) : Json()},
                {"file", violation.file.empty() ? Json() : Json(violation.file)}};
}

}  // namespace

void ExploreReport::start() const {
    if (json_) {
        return;
    }
    if (request_.soak()) {
        std::printf("tandem explore: programs from seed %llu for %g minutes, %s, %llu steps each\n",
                    static_cast<ull>(request_.seed), request_.minutes,
                    devices_text(request_).c_str(), static_cast<ull>(request_.steps));
    } else {
        std::printf("tandem explore: %llu programs from seed %llu, %s, %llu steps each\n",
                    static_cast<ull>(request_.runs), static_cast<ull>(request_.seed),
                    devices_text(request_).c_str(), static_cast<ull>(request_.steps));
    }
    std::fflush(stdout);
}

void ExploreReport::violation(const ExploreViolation& violation) const {
    if (json_) {
        return;
    }
    if (!violation.shrunk_units) {
        std::printf("violation: program seed %llu (not shrunk)\n",
                    static_cast<ull>(violation.seed));
    } else {
        std::printf("violation: program seed %llu (%s)\n%s\n", static_cast<ull>(violation.seed),
                    rerun_command(request_, violation.seed).c_str(), violation.failure.c_str());
        if (!violation.file.empty()) {
            std::printf("shrunk from %zu to %zu units; written to %s\n", violation.units,
                        *violation.shrunk_units, violation.file.c_str());
        }
    }
    std::fflush(stdout);
}

int ExploreReport::finish(const ExploreTally& tally, double seconds) const {
    if (json_) {
        print_json(tally, seconds);
    } else {
        print_summary(tally, seconds);
    }
    if (tally.unwritten) {
        return 2;
    }
    return tally.violations == 0 ? 0 : 1;
}

void ExploreReport::print_summary(const ExploreTally& tally, double seconds) const {
    if (!tally.kept.empty()) {
        const std::string last = tally.kept.size() == 1 ? "" : " ... " + tally.kept.back();
        std::printf("kept %zu program%s: %s%s\n", tally.kept.size(),
                    tally.kept.size() == 1 ? "" : "s", tally.kept.front().c_str(), last.c_str());
    }
    if (!request_.soak()) {
        // A run stops at its first violation, which it has printed in full.
        if (tally.violations == 0) {
            std::printf(
                "%llu programs passed in %.2f s (%.0f programs per second), %llu faults "
                "injected\n",
                static_cast<ull>(tally.programs), seconds, per_second(tally.programs, seconds),
                static_cast<ull>(tally.faults));
        }
        return;
    }
    std::printf("soak: %.1f minutes (%.0f s)\n", seconds / 60, seconds);
    std::printf("programs run:        %llu (%.0f per second)\n", static_cast<ull>(tally.programs),
                per_second(tally.programs, seconds));
    std::printf("faults injected:     %llu\n", static_cast<ull>(tally.faults));
    std::printf("rule violations:     %llu\n", static_cast<ull>(tally.violations));
    std::printf("peak resident (KiB): %llu after %llu programs, %llu at the end\n",
                static_cast<ull>(tally.peak_kib_at_start),
                static_cast<ull>(tally.peak_kib_programs), static_cast<ull>(tally.peak_kib_at_end));
}

void ExploreReport::print_json(const ExploreTally& tally, double seconds) const {
    Json document = json_document("explore");
    document["seed"] = request_.seed;
    document["devices"] = request_.devices;
    document["ranks"] = request_.ranks;
    document["message_delay_us"] = request_.message_delay_us;
    document["cut_percent"] = request_.cut_percent;
    document["steps"] = request_.steps;
    document["runs"] = request_.soak() ? Json() : Json(request_.runs);
    document["minutes"] = request_.soak() ? Json(request_.minutes) : Json();
    document["programs"] = tally.programs;
    document["faults"] = tally.faults;
    document["violations"] = tally.violations;
    Json& listed = document["violating_programs"] = Json::array();
    for (const ExploreViolation& violation : tally.listed) {
        listed.push_back(violation_json(request_, violation));
    }
    document["kept"] = tally.kept;
    document["seconds"] = seconds;
    document["programs_per_second"] = per_second(tally.programs, seconds);
    document["peak_resident_kib"] = Json{{"after_programs", tally.peak_kib_programs},
                                         {"at_start", tally.peak_kib_at_start},
                                         {"at_end", tally.peak_kib_at_end}};
    std::printf("%s\n", json_text(document, 2).c_str());
}

}  // namespace tandem::tool
