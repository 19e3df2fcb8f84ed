#pragma once

// Checks of the paths a command is given, made before anything runs: a command that would only
// find at the end that it cannot write its trace or its programs, or that it was given a folder
// where it reads one file, says so at once, names the path, and changes nothing (exit 2).

#include <string>
#include <vector>

namespace tandem::tool {

/// Whether `path` can be written as a file: an existing file that may be written, or a new name
/// in a folder that exists and may be written. Otherwise prints "tandem: OPTION PATH: why" and
/// returns false. Creates nothing.
bool file_can_be_written(const char* option, const std::string& path);

/// Whether `path` can hold files: a folder that exists and may be written, or a new folder whose
/// parent exists and may be written (it is made when the first file is written). Otherwise
/// prints "tandem: OPTION PATH: why" and returns false. Creates nothing.
bool folder_can_be_written(const char* option, const std::string& path);

/// Whether `paths` is one scenario file, as `command` (replay, inspect) takes. Otherwise prints
/// why (none, several, a folder, not there) and returns false.
bool one_scenario_file(const char* command, const std::vector<std::string>& paths);

}  // namespace tandem::tool
