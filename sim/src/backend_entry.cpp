// The simulator's entry for `open_runtime`. A program that links tandem::sim pulls this unit in
// by its anchor (sim/CMakeLists.txt), so linking the simulator is what makes it openable.

#include "job_member.hpp"

#include "tandem/backend/backend_registry.hpp"
#include "tandem/sim/runtime.hpp"

namespace tandem::sim {
namespace {

Result<std::shared_ptr<Runtime>> open_sim(const RuntimeSettings& settings) {
    Result<std::shared_ptr<SimRuntime>> created = SimRuntime::create(
        {.devices = settings.devices,
         .seed = settings.seed,
         .mode = settings.scheduler == "threads" ? SchedulerMode::Threads
                                                 : SchedulerMode::Deterministic,
         .rank = settings.rank});
    if (!created) {
        return created.error();
    }
    return std::shared_ptr<Runtime>(std::move(*created));
}

const BackendRegistration registration{BackendEntry{"sim", open_sim, nullptr, job_member}};

}  // namespace
}  // namespace tandem::sim

/// Named by tandem::sim's link options, so that every program linking the simulator keeps this
/// unit and its registration.
extern "C" void tandem_sim_backend_anchor() {}
