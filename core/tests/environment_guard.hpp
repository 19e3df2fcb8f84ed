#pragma once

// Sets environment variables for one test and puts back what was there when it ends.

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tandem::testing {

/// The variables it set, each with its value before; restored when it goes out of scope.
class EnvironmentGuard {
public:
    EnvironmentGuard() = default;
    EnvironmentGuard(const EnvironmentGuard&) = delete;
    EnvironmentGuard& operator=(const EnvironmentGuard&) = delete;
    ~EnvironmentGuard() {
        for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
            if (it->second) {
                ::setenv(it->first.c_str(), it->second->c_str(), 1);
            } else {
                ::unsetenv(it->first.c_str());
            }
        }
    }

    /// Sets `name` to `value`, or unsets it when `value` is empty.
    EnvironmentGuard& set(const std::string& name, std::optional<std::string> value) {
        const char* before = std::getenv(name.c_str());
        saved_.emplace_back(name, before ? std::optional<std::string>(before) : std::nullopt);
        if (value) {
            ::setenv(name.c_str(), value->c_str(), 1);
        } else {
            ::unsetenv(name.c_str());
        }
        return *this;
    }

    /// Unsets every variable `open_runtime` reads, so a test starts from the defaults.
    EnvironmentGuard& clear_runtime_variables() {
        for (const char* name : {"TANDEM_BACKEND", "TANDEM_DEVICES", "TANDEM_SEED",
                                 "TANDEM_SCHEDULER", "TANDEM_GPUS"}) {
            set(name, std::nullopt);
        }
        return *this;
    }

private:
    std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace tandem::testing
