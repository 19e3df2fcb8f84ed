// The backends `open_runtime` can create: the reference backend's entry, and those the linked
// backends register before `main`.

#include "tandem/backend/backend_registry.hpp"

#include "tandem/core/reference_runtime.hpp"

#include <algorithm>
#include <deque>
#include <mutex>

namespace tandem {
namespace {

Result<std::shared_ptr<Runtime>> open_reference(const RuntimeSettings& settings) {
    Result<std::shared_ptr<reference::ReferenceRuntime>> created =
        reference::ReferenceRuntime::create({.devices = settings.devices, .seed = settings.seed, .rank = settings.rank});
    if (!created) {
        return created.error();
    }
    return std::shared_ptr<Runtime>(std::move(*created));
}

/// Every entry, the reference backend's first. Built on first use, so that a registration from
/// another unit's static initialiser finds it whatever the order the units start in; a deque, so
/// that an entry `find_backend` returned stays where it is.
struct Registry {
    std::mutex mutex;
    std::deque<BackendEntry> entries{BackendEntry{"reference", open_reference, nullptr}};
};

Registry& registry() {
    static Registry instance;
    return instance;
}

}  // namespace

void register_backend(BackendEntry entry) {
    Registry& all = registry();
    const std::lock_guard lock(all.mutex);
    auto same = std::ranges::find(all.entries, entry.name, &BackendEntry::name);
    if (same != all.entries.end()) {
        *same = std::move(entry);
        return;
    }
    all.entries.push_back(std::move(entry));
}

const BackendEntry* find_backend(std::string_view name) {
    Registry& all = registry();
    const std::lock_guard lock(all.mutex);
    auto found = std::ranges::find(all.entries, name, &BackendEntry::name);
    return found == all.entries.end() ? nullptr : &*found;
}

std::vector<std::string> available_backends() {
    Registry& all = registry();
    const std::lock_guard lock(all.mutex);
    std::vector<std::string> names;
    for (const BackendEntry& entry : all.entries) {
        names.push_back(entry.name);
    }
    std::sort(names.begin() + 1, names.end());
    return names;
}

}  // namespace tandem
