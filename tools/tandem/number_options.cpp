// The number checks of number_options.hpp.

#include "number_options.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

namespace tandem::tool {
namespace {

std::string range_text(std::uint64_t min, std::uint64_t max) {
    return "from " + std::to_string(min) + " to " +
           (max == whole_number_max ? std::string("2^64 - 1") : std::to_string(max));
}

}  // namespace

CLI::Validator whole_number(std::uint64_t min, std::uint64_t max) {
    const std::string range = range_text(min, max);
    return CLI::Validator(
        [min, max, range](std::string& text) -> std::string {
            if (!text.empty() && text.front() == '-') {
                return "must not be negative (" + range + ")";
            }
            std::uint64_t value = 0;
            const char* end = text.data() + text.size();
            const auto [stop, error] = std::from_chars(text.data(), end, value);
            if (text.empty() || stop != end ||
                (error != std::errc() && error != std::errc::result_out_of_range)) {
                return "'" + text + "' is not a whole number (" + range + ")";
            }
            if (error == std::errc::result_out_of_range || value < min || value > max) {
                return "must be " + range + ", not " + text;
            }
            return {};
        },
        range);
}

CLI::Validator decimal_number(double min, double max, const std::string& range) {
    return CLI::Validator(
        [min, max, range](std::string& text) -> std::string {
            char* stop = nullptr;
            const double value = std::strtod(text.c_str(), &stop);
            if (text.empty() || stop != text.c_str() + text.size() || !std::isfinite(value)) {
                return "'" + text + "' is not a number (" + range + ")";
            }
            if (value < min || value > max) {
                return "must be " + range + ", not " + text;
            }
            return {};
        },
        range);
}

}  // namespace tandem::tool
