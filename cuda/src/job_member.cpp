#include "job_member.hpp"

#include "engine.hpp"

#include <vector>

namespace tandem::cuda {
namespace {

class CudaJobMember final : public JobMember {
public:
    explicit CudaJobMember(std::shared_ptr<CudaEngine> engine) : engine_(std::move(engine)) {
        for (const auto& device : engine_->devices) {
            ordinals_.push_back(device->ordinal());
        }
    }

    LocalDirectory& directory() override { return engine_->directory; }
    Server& server(std::size_t index) override { return *engine_->devices.at(index); }

    Result<ExportedRegion> export_region(const Handle& handle) override {
        CudaDevice* device = engine_->device_of(handle.service());
        if (device == nullptr) {
            return Error::invalid_argument(handle.describe() +
                                           " is not memory of a device of this runtime");
        }
        const AllocationInfo& allocation = handle.memory().allocation();
        Result<ExportedRegion> region =
            device->storage().export_region(allocation.address, allocation.size_bytes);
        if (!region) {
            return Error::invalid_argument(
                handle.describe() +
                " cannot be shared with another process: " + region.error().message());
        }
        region->owner = device->service();
        return region;
    }

    Status import_region(const ExportedRegion& region) override {
        return engine_->imported.import(region, ordinals_);
    }

    Status export_event(const Event& event, ExportedStream& stream) override {
        return engine_->export_event(event, stream);
    }

private:
    std::shared_ptr<CudaEngine> engine_;
    /// The GPUs of the runtime's devices, each granted access to the regions it maps.
    std::vector<int> ordinals_;
};

}  // namespace

std::shared_ptr<CudaEngine> engine_of(const CudaRuntime& runtime) { return runtime.engine_; }

std::shared_ptr<JobMember> job_member(const std::shared_ptr<Runtime>& runtime) {
    if (runtime == nullptr || runtime->backend() != "cuda") {
        return nullptr;
    }
    std::shared_ptr<CudaEngine> engine = engine_of(static_cast<const CudaRuntime&>(*runtime));
    if (!engine->options.rank) {
        return nullptr;  // Not a rank's runtime: no job reaches it.
    }
    return std::make_shared<CudaJobMember>(std::move(engine));
}

}  // namespace tandem::cuda
