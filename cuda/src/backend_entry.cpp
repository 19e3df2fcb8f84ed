// The CUDA backend's entry for `open_runtime`. A program that links tandem::cuda pulls this unit
// in by its anchor (cuda/CMakeLists.txt), so linking the backend is what makes it openable.

#include "job_member.hpp"

#include "tandem/backend/backend_registry.hpp"
#include "tandem/cuda/runtime.hpp"

#include <string>

namespace tandem::cuda {
namespace {

std::string joined(const std::vector<int>& ordinals) {
    std::string text;
    for (const int ordinal : ordinals) {
        text += (text.empty() ? "" : ",") + std::to_string(ordinal);
    }
    return text;
}

/// The runtime of `settings`; more devices than visible GPUs, without a GPU list, is refused
/// with the list that would place them.
Result<std::shared_ptr<Runtime>> open_cuda(const RuntimeSettings& settings) {
    CudaOptions options{.devices = settings.devices, .gpus = settings.gpus, .seed = settings.seed};
    options.rank = settings.rank;
    if (!settings.gpus.empty()) {
        options.devices = 0;
    } else if (const GpuReport report = probe_gpus();
               report.problem.empty() && report.names.size() < settings.devices) {
        return Error::invalid_argument(
            std::to_string(settings.devices) + " devices asked for, " +
            std::to_string(report.names.size()) +
            " GPUs visible; a GPU list places several devices on one GPU: TANDEM_GPUS=" +
            joined(gpus_in_turn(settings.devices, report.names.size())));
    }
    Result<std::shared_ptr<CudaRuntime>> created = CudaRuntime::create(std::move(options));
    if (!created) {
        return created.error();
    }
    return std::shared_ptr<Runtime>(std::move(*created));
}

/// What `auto` asks: a GPU is visible.
bool gpu_visible() {
    const GpuReport report = probe_gpus();
    return report.problem.empty() && !report.names.empty();
}

const BackendRegistration registration{
    BackendEntry{"cuda", open_cuda, gpu_visible, job_member}};

}  // namespace
}  // namespace tandem::cuda

/// Named by tandem::cuda's link options, so that every program linking the backend keeps this
/// unit and its registration.
extern "C" void tandem_cuda_backend_anchor() {}
