// Fuzz target: the input bytes are the text of a scenario file, given to the parse-and-validate
// entry point `tandem run` uses (`parse_scenario_text`, the same code as `parse_scenario_file`
// once the file is read).
//
// The oracle: every input either parses into a scenario or is refused with a `ParseError` whose
// message opens with `fuzz.yaml:LINE:COLUMN:` (both 1-based and positive) and then says what was
// expected there. Nothing may escape as an exception, crash, hang, or trip AddressSanitizer or
// UndefinedBehaviorSanitizer. The seed corpus is scenarios/*.yaml.

#include "scenario.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <variant>

namespace {

constexpr const char* file_name = "fuzz.yaml";

[[noreturn]] void violated(const std::string& what) {
    std::fprintf(stderr, "oracle violated: %s\n", what.c_str());
    std::abort();
}

/// Reads a positive decimal number at `at`, moving past it; zero when there is none.
unsigned long positive_number(const std::string& text, std::size_t& at) {
    const std::size_t start = at;
    unsigned long value = 0;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9' && at - start < 9) {
        value = value * 10 + static_cast<unsigned long>(text[at] - '0');
        ++at;
    }
    return at == start ? 0 : value;
}

/// The message opens with `fuzz.yaml:LINE:COLUMN: ` and says something after it.
bool has_position(const std::string& message) {
    const std::string prefix = std::string(file_name) + ":";
    if (message.rfind(prefix, 0) != 0) {
        return false;
    }
    std::size_t at = prefix.size();
    if (positive_number(message, at) == 0 || at >= message.size() || message[at] != ':') {
        return false;
    }
    ++at;
    if (positive_number(message, at) == 0 || message.compare(at, 2, ": ") != 0) {
        return false;
    }
    return message.size() > at + 2;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    auto parsed = tandem::tool::parse_scenario_text(text, file_name);
    if (const auto* error = std::get_if<tandem::tool::ParseError>(&parsed)) {
        if (!has_position(error->message)) {
            violated("a rejected input without file:line:column: '" + error->message + "'");
        }
    }
    return 0;
}
