#pragma once

// The footer of each command's --help: what its --json document holds, and what each of its exit
// codes means, so a script author finds both where they look first.

#include <CLI/CLI.hpp>

#include <string>
#include <utility>
#include <vector>

namespace tandem::tool {

/// One exit code and when a command returns it.
using ExitCode = std::pair<int, std::string>;

/// Sets `command`'s help footer: `json_fields` (none when empty) wrapped to the terminal's usual
/// width, then the exit codes in order.
void set_help_footer(CLI::App& command, const std::string& json_fields,
                     const std::vector<ExitCode>& exit_codes);

}  // namespace tandem::tool
