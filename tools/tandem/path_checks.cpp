// The path checks of path_checks.hpp: stat and access(2), so that nothing is created to find out.

#include "path_checks.hpp"

#include <unistd.h>
#include <cstdio>
#include <filesystem>

namespace tandem::tool {
namespace {

namespace fs = std::filesystem;

/// The folder a new entry `path` would be made in: "." for a bare name.
fs::path parent_of(const std::string& path) {
    const fs::path parent = fs::path(path).parent_path();
    return parent.empty() ? fs::path(".") : parent;
}

bool refuse(const char* option, const std::string& path, const std::string& why) {
    std::fprintf(stderr, "tandem: %s %s: %s\n", option, path.c_str(), why.c_str());
    return false;
}

/// Whether a new entry may be made in `parent`, saying why not for `option` and `path`.
bool can_make_in(const char* option, const std::string& path, const fs::path& parent) {
    std::error_code error;
    if (!fs::exists(parent, error)) {
        return refuse(option, path, "the folder " + parent.string() + " does not exist");
    }
    if (!fs::is_directory(parent, error)) {
        return refuse(option, path, parent.string() + " is not a folder");
    }
    if (::access(parent.c_str(), W_OK | X_OK) != 0) {
        return refuse(option, path, "the folder " + parent.string() + " cannot be written");
    }
    return true;
}

}  // namespace

bool file_can_be_written(const char* option, const std::string& path) {
    std::error_code error;
    if (path.empty()) {
        return refuse(option, "''", "an empty path");
    }
    if (fs::is_directory(path, error)) {
        return refuse(option, path, "is a folder; give a file name");
    }
    if (fs::exists(path, error)) {
        return ::access(path.c_str(), W_OK) == 0 ||
               refuse(option, path, "the file exists and cannot be written");
    }
    return can_make_in(option, path, parent_of(path));
}

bool folder_can_be_written(const char* option, const std::string& path) {
    std::error_code error;
    if (path.empty()) {
        return refuse(option, "''", "an empty path");
    }
    if (fs::exists(path, error)) {
        if (!fs::is_directory(path, error)) {
            return refuse(option, path, "is not a folder");
        }
        return ::access(path.c_str(), W_OK | X_OK) == 0 ||
               refuse(option, path, "the folder cannot be written");
    }
    return can_make_in(option, path, parent_of(path));
}

bool one_scenario_file(const char* command, const std::vector<std::string>& paths) {
    if (paths.size() != 1) {
        std::fprintf(stderr,
                     "tandem: %s takes one scenario file, not %zu; 'tandem run' runs several "
                     "(files or folders)\n",
                     command, paths.size());
        return false;
    }
    const std::string& path = paths.front();
    std::error_code error;
    if (fs::is_directory(path, error)) {
        std::fprintf(stderr,
                     "tandem: %s %s: is a folder; %s takes one scenario file ('tandem run %s' "
                     "runs every scenario of the folder)\n",
                     command, path.c_str(), command, path.c_str());
        return false;
    }
    if (!fs::exists(path, error)) {
        std::fprintf(stderr, "tandem: %s: no such file\n", path.c_str());
        return false;
    }
    return true;
}

}  // namespace tandem::tool
