#pragma once

// A progress line on stderr for the commands that can run long (`run`, `explore` and its soak):
// how many done, how fast, how many failed so far and about how long is left, refreshed in place
// about once a second.
//
// It is shown only when stderr is a terminal. In a pipe, a log or CI the line would only add
// carriage returns between the results, so there it prints nothing at all. It never writes to
// stdout, which holds the results (and is JSON under `--json`).

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace tandem::tool {

/// `seconds` in words a progress line shows: "40 s", "17 min", "2.5 h".
std::string duration_words(double seconds);

/// "about 30 s left" after `done` of `total` in `seconds_elapsed`, at the rate so far; empty when
/// nothing is done yet, so nothing can be estimated.
std::string time_left(std::uint64_t done, std::uint64_t total, double seconds_elapsed);

class Progress {
public:
    /// A line reading "<label>: <done>[/<total>] <unit>, <rate> per second, <failed> <failures>",
    /// then ", about <time> left" where that can be told: from the rate so far when `total` is
    /// known, from `ends_at` otherwise (a soak, which has no total). Shown only if stderr is a
    /// terminal.
    Progress(std::string label, std::string unit, std::string failures, std::uint64_t total = 0,
             std::optional<std::chrono::steady_clock::time_point> ends_at = std::nullopt);
    ~Progress();
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;

    /// Redraws the line when it is not on screen or a second has passed since it was drawn.
    void update(std::uint64_t done, std::uint64_t failed);
    /// Erases the line, so that a result printed next starts on a clean line.
    void clear();

private:
    bool shown_;
    bool on_screen_ = false;
    std::string label_;
    std::string unit_;
    std::string failures_;
    std::uint64_t total_;
    std::optional<std::chrono::steady_clock::time_point> ends_at_;
    std::chrono::steady_clock::time_point started_;
    std::chrono::steady_clock::time_point drawn_;
};

}  // namespace tandem::tool
