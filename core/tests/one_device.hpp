#pragma once

// One device's claim store as the settle pipeline sees a runtime: for tests of core that drive
// the pipeline without a backend.

#include "store_directory.hpp"

#include "tandem/backend/settle_pipeline.hpp"

#include <memory>

namespace tandem::testing {

class OneDevice final : public StoreDirectory {
public:
    explicit OneDevice(ServiceId service) : store(service) {}
    ClaimStore& store_of(ServiceId) const override { return store; }
    ServiceId service_of(std::uint32_t) const override { return store.device(); }
    bool reaches(ServiceId service) const override { return service == store.device(); }

    mutable ClaimStore store;
};

/// Work on device 0 (`runner`) writing `outputs` and reading `inputs`.
inline std::shared_ptr<Work> work_over(std::string label, std::span<const ClaimKey> inputs,
                                       std::span<const ClaimKey> outputs,
                                       ServiceId runner = ServiceId{1, 0}) {
    auto work = std::make_shared<Work>();
    work->label = std::move(label);
    for (const ClaimKey& key : inputs) {
        work->inputs.push_back(Target{runner, key});
    }
    for (const ClaimKey& key : outputs) {
        work->outputs.push_back(Target{runner, key});
    }
    return work;
}

/// Enqueues `work`, runs it as a backend would (held back when an input is known claimed,
/// otherwise failing with `failure` if given, else landing) and settles.
inline void run_through(SettlePipeline& pipeline, const std::shared_ptr<Work>& work,
                        std::optional<Error> failure = std::nullopt) {
    pipeline.enqueue(work);
    if (pipeline.examine(*work, [](const Work&) { return true; }) ==
        SettlePipeline::Inputs::Claimed) {
        work->did_not_run();
    } else if (failure) {
        work->ran(std::move(*failure));
    } else {
        work->ran(Status{});
    }
    pipeline.settle_ready();
}

}  // namespace tandem::testing
