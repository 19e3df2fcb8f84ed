#pragma once

// How a backend becomes one that `open_runtime` can create: it registers an entry under its name
// before `main` runs. A backend in a static library registers from an object file that a program
// pulls in only by linking the backend's target, whose link options name `anchor` (see
// sim/CMakeLists.txt): so `open_runtime` offers exactly the backends a program links.

#include "tandem/backend/job_member.hpp"
#include "tandem/core/result.hpp"
#include "tandem/core/runtime.hpp"
#include "tandem/open_runtime.hpp"

#include <memory>
#include <string>
#include <vector>

namespace tandem {

/// What a backend registers.
struct BackendEntry {
    /// Its name, as `TANDEM_BACKEND` gives it.
    std::string name;
    /// Creates a runtime of the resolved settings.
    Result<std::shared_ptr<Runtime>> (*open)(const RuntimeSettings& settings) = nullptr;
    /// Whether `auto` may pick it: it has devices to run on here (a GPU is visible). Null: never.
    bool (*preferred)() = nullptr;
    /// What a runtime it opened does for a job (`JobMember`); null where the backend shares no
    /// memory across processes, or for a runtime it did not open.
    std::shared_ptr<JobMember> (*job_member)(const std::shared_ptr<Runtime>& runtime) = nullptr;
};

/// Adds `entry`, once per name (a second entry of a name replaces the first); called from a
/// backend's static initialiser, before `main`.
void register_backend(BackendEntry entry);

/// The entry registered under `name` (the reference backend's is always there), or null.
const BackendEntry* find_backend(std::string_view name);

/// A backend's registration, as a static object of its registration unit: registers `entry`
/// when the program starts.
struct BackendRegistration {
    /// Registers `entry` (`register_backend`).
    explicit BackendRegistration(BackendEntry entry) { register_backend(std::move(entry)); }
};

}  // namespace tandem
