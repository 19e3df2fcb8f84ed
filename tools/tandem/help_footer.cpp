// The help footers of help_footer.hpp.

#include "help_footer.hpp"

namespace tandem::tool {
namespace {

/// Columns a footer line may fill, as CLI11's own help does.
constexpr std::size_t footer_width = 80;

/// `text` broken at spaces into lines of `footer_width` at most: the first after `indent`, the
/// others after `next_indent`.
std::string wrap(const std::string& text, const std::string& indent,
                 const std::string& next_indent) {
    std::string out;
    std::string line = indent;
    std::size_t at = 0;
    while (at < text.size()) {
        std::size_t end = text.find(' ', at);
        if (end == std::string::npos) {
            end = text.size();
        }
        const std::string word = text.substr(at, end - at);
        if (line.back() != ' ' && line.size() + 1 + word.size() > footer_width) {
            out += line + "\n";
            line = next_indent;
        }
        line += (line.empty() || line.back() == ' ' ? "" : " ") + word;
        at = end + 1;
    }
    return out + line + "\n";
}

}  // namespace

void set_help_footer(CLI::App& command, const std::string& json_fields,
                     const std::vector<ExitCode>& exit_codes) {
    std::string footer;
    if (!json_fields.empty()) {
        footer += "JSON (--json):\n" + wrap(json_fields, "  ", "  ") + "\n";
    }
    footer += "Exit codes:\n";
    for (const auto& [code, meaning] : exit_codes) {
        footer += wrap(meaning, "  " + std::to_string(code) + "  ", "     ");
    }
    command.footer(footer);
}

}  // namespace tandem::tool
