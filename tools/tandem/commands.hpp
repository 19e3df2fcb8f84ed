#pragma once

// The subcommands of the `tandem` tool. Each registers itself on the CLI11 app and returns the
// process exit code: 0 when everything passed, 1 when a check failed, 2 on bad input.

#include <CLI/CLI.hpp>

#include <functional>

namespace tandem::tool {

using Run = std::function<int()>;

/// `tandem selfcheck`: exercises the core rules on one in-process device and prints each check.
Run add_selfcheck(CLI::App& app);
/// `tandem clean`: removes segments of simulator runtimes whose process is gone.
Run add_clean(CLI::App& app);

}  // namespace tandem::tool
