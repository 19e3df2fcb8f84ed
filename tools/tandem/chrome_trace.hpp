#pragma once

// Writing scenario runs as a Chrome trace event file (Perfetto opens it).

#include "scenario_run.hpp"

#include <string>
#include <vector>

namespace tandem::tool {

/// Writes every result's trace records to `path`; false when the file cannot be written.
bool write_chrome_trace(const std::string& path, const std::vector<ScenarioResult>& results);

}  // namespace tandem::tool
