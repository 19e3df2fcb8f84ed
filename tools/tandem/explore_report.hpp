#pragma once

// What `tandem explore` prints: a line saying what it runs, each violation as it is found, and a
// summary at the end; or, under `--json`, one document at the end that holds the same. The
// command itself (explore.cpp) runs the programs and hands this what it found, so the two
// outputs cannot drift apart.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tandem::tool {

/// What an explore run was asked to do, as its output states it.
struct ExploreRequest {
    std::uint64_t seed = 1;
    std::uint32_t devices = 2;
    /// The ranks of the job each program runs on, simulated in one process; 1: no job.
    std::uint32_t ranks = 1;
    std::uint64_t steps = 100;
    /// Programs to run; ignored by a soak.
    std::uint64_t runs = 100;
    /// A soak when positive: programs run until this many minutes have passed.
    double minutes = 0;
    /// The longest delay of a frame between ranks, in microseconds; zero: none.
    std::uint64_t message_delay_us = 0;
    /// The chance, in percent, that a unit cuts a connection between two ranks; zero: none.
    std::uint32_t cut_percent = 0;

    [[nodiscard]] bool soak() const { return minutes > 0; }
};

/// One program that broke a rule.
struct ExploreViolation {
    std::uint64_t seed = 0;
    /// The first step that did not do what the oracle expects, with its report.
    std::string failure;
    std::size_t units = 0;
    /// Units left after shrinking; none when it was not shrunk (a soak shrinks the first few).
    std::optional<std::size_t> shrunk_units;
    /// Where the shrunk program was written; empty when it was not shrunk or not written.
    std::string file;
};

/// Violations a run lists one by one; past this they are only counted, which bounds what a long
/// soak keeps and prints.
constexpr std::size_t explore_violations_listed_max = 1000;

struct ExploreTally {
    std::uint64_t programs = 0;
    std::uint64_t faults = 0;
    std::uint64_t violations = 0;
    /// The first `explore_violations_listed_max` violations.
    std::vector<ExploreViolation> listed;
    /// The files `--keep` wrote, in program order.
    std::vector<std::string> kept;
    /// A shrunk or kept program could not be written (the message is already on stderr).
    bool unwritten = false;
    /// Peak resident memory in KiB after the first `peak_kib_programs` programs, and at the end.
    std::uint64_t peak_kib_at_start = 0;
    std::uint64_t peak_kib_programs = 0;
    std::uint64_t peak_kib_at_end = 0;
};

class ExploreReport {
public:
    ExploreReport(ExploreRequest request, bool json) : request_(request), json_(json) {}

    /// The line that says what the run does (not under `--json`).
    void start() const;
    /// A violation as it is found (not under `--json`, whose document lists it at the end).
    void violation(const ExploreViolation& violation) const;
    /// The summary, or the JSON document. Returns the exit code: 0 when no program broke a rule,
    /// 1 when one did, 2 when a shrunk or kept program could not be written.
    [[nodiscard]] int finish(const ExploreTally& tally, double seconds) const;

private:
    void print_summary(const ExploreTally& tally, double seconds) const;
    void print_json(const ExploreTally& tally, double seconds) const;

    ExploreRequest request_;
    bool json_;
};

}  // namespace tandem::tool
