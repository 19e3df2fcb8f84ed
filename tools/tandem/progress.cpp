// The progress line (progress.hpp): drawn with a carriage return and an erase-line sequence, so
// each refresh replaces the last in place.

#include "progress.hpp"

#include <unistd.h>
#include <cstdio>
#include <utility>

namespace tandem::tool {
namespace {

constexpr auto refresh_every = std::chrono::seconds(1);

}  // namespace

std::string duration_words(double seconds) {
    char words[32];
    if (seconds < 90) {
        std::snprintf(words, sizeof words, "%.0f s", seconds < 0 ? 0.0 : seconds);
    } else if (seconds < 90 * 60) {
        std::snprintf(words, sizeof words, "%.0f min", seconds / 60);
    } else {
        std::snprintf(words, sizeof words, "%.1f h", seconds / 3600);
    }
    return words;
}

std::string time_left(std::uint64_t done, std::uint64_t total, double seconds_elapsed) {
    if (done == 0 || total < done) {
        return {};
    }
    const double per_item = seconds_elapsed / static_cast<double>(done);
    return "about " + duration_words(per_item * static_cast<double>(total - done)) + " left";
}

Progress::Progress(std::string label, std::string unit, std::string failures, std::uint64_t total,
                   std::optional<std::chrono::steady_clock::time_point> ends_at)
    : shown_(::isatty(STDERR_FILENO) == 1),
      label_(std::move(label)),
      unit_(std::move(unit)),
      failures_(std::move(failures)),
      total_(total),
      ends_at_(ends_at),
      started_(std::chrono::steady_clock::now()) {}

Progress::~Progress() { clear(); }

void Progress::update(std::uint64_t done, std::uint64_t failed) {
    if (!shown_) {
        return;
    }
    const auto now = std::chrono::steady_clock::now();
    if (on_screen_ && now - drawn_ < refresh_every) {
        return;
    }
    const double seconds = std::chrono::duration<double>(now - started_).count();
    const double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0.0;
    std::string count = std::to_string(done);
    if (total_ > 0) {
        count += "/" + std::to_string(total_);
    }
    std::string left;
    if (ends_at_) {
        left = "about " + duration_words(std::chrono::duration<double>(*ends_at_ - now).count()) +
               " left";
    } else if (total_ > 0) {
        left = time_left(done, total_, seconds);
    }
    std::fprintf(stderr, "\r\033[K%s: %s %s, %.0f per second, %llu %s%s%s", label_.c_str(),
                 count.c_str(), unit_.c_str(), rate, static_cast<unsigned long long>(failed),
                 failures_.c_str(), left.empty() ? "" : ", ", left.c_str());
    std::fflush(stderr);
    on_screen_ = true;
    drawn_ = now;
}

void Progress::clear() {
    if (on_screen_) {
        std::fprintf(stderr, "\r\033[K");
        std::fflush(stderr);
        on_screen_ = false;
    }
}

}  // namespace tandem::tool
