#include "kernel_registry.hpp"

#include "tandem/core/kernels/catalog.hpp"

#include <array>
#include <utility>

namespace tandem::sim {
namespace {

template <typename Kernel>
void run(SimKernelContext& context, const LaunchConfig& config) {
    const Kernel kernel{};
    const std::uint64_t block = config.block.count();
    const std::uint64_t threads = config.thread_count();
    for (std::uint64_t thread = 0; thread < threads; ++thread) {
        context.set_thread(thread);
        kernel(context);
        if ((thread + 1) % block == 0 && thread + 1 < threads) {
            context.host().yield();
        }
    }
}

template <typename Kernel>
constexpr std::pair<std::string_view, KernelRunner> entry() {
    return {Kernel::name, &run<Kernel>};
}

constexpr std::array catalog{
    entry<kernels::Empty>(),          entry<kernels::Fill>(),
    entry<kernels::Copy>(),           entry<kernels::Add>(),
    entry<kernels::Axpy>(),           entry<kernels::ReduceSum>(),
    entry<kernels::Checksum>(),       entry<kernels::FailWithCode>(),
    entry<kernels::HandoffProduce>(), entry<kernels::HandoffConsume>(),
    entry<kernels::TiledCopy>(),
};

}  // namespace

KernelRunner find_kernel(std::string_view name) {
    for (const auto& [kernel, runner] : catalog) {
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
    return names;
}

}  // namespace tandem::sim
