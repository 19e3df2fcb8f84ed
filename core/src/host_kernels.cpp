#include "tandem/core/host_kernels.hpp"

#include "tandem/core/kernels/catalog.hpp"

#include <array>
#include <mutex>
#include <utility>

namespace tandem {
namespace {

template <typename Kernel>
struct RunnerOf {
    static constexpr KernelRunner value = &run_kernel<Kernel>;
};

constexpr auto catalog = kernels::Catalog::table<RunnerOf>();

struct Registered {
    std::mutex mutex;
    std::vector<std::pair<std::string, KernelRunner>> kernels;
};

Registered& registered() {
    static Registered instance;
    return instance;
}

}  // namespace

KernelRunner find_kernel(std::string_view name) {
    for (const auto& [kernel, runner] : catalog) {
        if (kernel == name) {
            return runner;
        }
    }
    Registered& extra = registered();
    std::lock_guard lock(extra.mutex);
    for (const auto& [kernel, runner] : extra.kernels) {
        if (kernel == name) {
            return runner;
        }
    }
    return nullptr;
}

std::vector<std::string> kernel_names() {
    std::vector<std::string> names;
    for (const auto& [kernel, runner] : catalog) {
        names.emplace_back(kernel);
    }
    Registered& extra = registered();
    std::lock_guard lock(extra.mutex);
    for (const auto& [kernel, runner] : extra.kernels) {
        names.push_back(kernel);
    }
    return names;
}

Status register_kernel(std::string name, KernelRunner runner) {
    if (name.empty() || runner == nullptr) {
        return Error::invalid_argument("a kernel needs a name and a runner");
    }
    if (find_kernel(name) != nullptr) {
        return Error::invalid_argument("a kernel named '" + name + "' is already registered");
    }
    Registered& extra = registered();
    std::lock_guard lock(extra.mutex);
    extra.kernels.emplace_back(std::move(name), runner);
    return {};
}

}  // namespace tandem
