#include "tandem/core/host_kernels.hpp"

#include "tandem/backend/server.hpp"

#include "tandem/core/closest_name.hpp"
#include "tandem/core/kernels/catalog.hpp"

#include <algorithm>
#include <array>
#include <deque>
#include <mutex>
#include <utility>

namespace tandem {
namespace {

template <typename Kernel>
struct EntryOf {
    static constexpr const KernelEntry* value = &kernel_entry<Kernel>;
};

/// The catalog, registered in every process before anything else.
const auto catalog = kernels::Catalog::table<EntryOf>();

/// The program's kernels, in registration order.
struct Registered {
    std::mutex mutex;
    std::vector<const KernelEntry*> kernels;
    /// Entries of kernels registered with a runner only; a deque keeps their addresses.
    std::deque<KernelEntry> runner_only;
    std::deque<std::string> runner_only_names;
    /// CUDA launchers by kernel name, as registration units set them.
    std::vector<std::pair<std::string, DeviceLauncher>> device_launchers;
};

Registered& registered() {
    static Registered instance;
    return instance;
}

const KernelEntry* find_locked(Registered& extra, std::string_view name) {
    for (const auto& [kernel, entry] : catalog) {
        if (kernel == name) {
            return entry;
        }
    }
    for (const KernelEntry* entry : extra.kernels) {
        if (entry->name == name) {
            return entry;
        }
    }
    return nullptr;
}

}  // namespace

const KernelEntry* find_kernel(std::string_view name) {
    Registered& extra = registered();
    std::lock_guard lock(extra.mutex);
    return find_locked(extra, name);
}

std::vector<std::string> kernel_names() {
    std::vector<std::string> names;
    for (const auto& [kernel, entry] : catalog) {
        names.emplace_back(kernel);
    }
    Registered& extra = registered();
    std::lock_guard lock(extra.mutex);
    for (const KernelEntry* entry : extra.kernels) {
        names.emplace_back(entry->name);
    }
    return names;
}

Error unknown_kernel(std::string_view name) {
    const std::vector<std::string> names = kernel_names();
    std::string message = "no kernel of that name is registered";
    if (const std::optional<std::string> closest = closest_name(name, names)) {
        message += "; did you mean '" + *closest + "'?";
    }
    message += " Registered:";
    for (const std::string& each : names) {
        message += " " + each;
    }
    return Error::launch_refused(std::string(name), message);
}

Status register_kernel(const KernelEntry& entry) {
    if (entry.name == nullptr || *entry.name == '\0') {
        return Error::invalid_argument("a kernel needs a name");
    }
    Registered& extra = registered();
    std::lock_guard lock(extra.mutex);
    if (const KernelEntry* found = find_locked(extra, entry.name)) {
        if (found == &entry) {
            return {};
        }
        return Error::invalid_argument("a kernel named '" + std::string(entry.name) +
                                       "' is already registered");
    }
    extra.kernels.push_back(&entry);
    return {};
}

bool host_runnable(const LaunchRequest& request) {
    if (request.external) {
        return static_cast<bool>(request.external->host);
    }
    return request.entry != nullptr && request.entry->host != nullptr;
}

void set_device_launcher(std::string_view name, DeviceLauncher launcher) {
    Registered& extra = registered();
    std::lock_guard lock(extra.mutex);
    for (auto& [kernel, known] : extra.device_launchers) {
        if (kernel == name) {
            known = launcher;
            return;
        }
    }
    extra.device_launchers.emplace_back(std::string(name), launcher);
}

DeviceLauncher device_launcher(const KernelEntry& entry) {
    if (DeviceLauncher known = entry.cuda.load(std::memory_order_acquire)) {
        return known;
    }
    Registered& extra = registered();
    std::lock_guard lock(extra.mutex);
    for (const auto& [kernel, launcher] : extra.device_launchers) {
        if (kernel == entry.name) {
            entry.cuda.store(launcher, std::memory_order_release);
            return launcher;
        }
    }
    return nullptr;
}

std::vector<DeviceLauncher> device_launchers() {
    Registered& extra = registered();
    std::lock_guard lock(extra.mutex);
    std::vector<DeviceLauncher> launchers;
    launchers.reserve(extra.device_launchers.size());
    for (const auto& [kernel, launcher] : extra.device_launchers) {
        launchers.push_back(launcher);
    }
    return launchers;
}

Status register_kernel(std::string name, KernelRunner runner) {
    if (name.empty() || runner == nullptr) {
        return Error::invalid_argument("a kernel needs a name and a runner");
    }
    Registered& extra = registered();
    std::lock_guard lock(extra.mutex);
    if (find_locked(extra, name) != nullptr) {
        return Error::invalid_argument("a kernel named '" + name + "' is already registered");
    }
    const std::string& stored = extra.runner_only_names.emplace_back(std::move(name));
    KernelEntry& entry = extra.runner_only.emplace_back();
    entry.name = stored.c_str();
    entry.host = runner;
    extra.kernels.push_back(&entry);
    return {};
}

}  // namespace tandem
