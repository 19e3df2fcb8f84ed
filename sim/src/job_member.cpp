#include "job_member.hpp"

#include "engine.hpp"

#include <mutex>
#include <unordered_map>

namespace tandem::sim {
namespace {

/// The engines of runtimes serving a rank, by runtime id: a handful in a process.
struct RankEngines {
    std::mutex mutex;
    std::unordered_map<std::uint64_t, std::weak_ptr<Engine>> engines;
};

RankEngines& rank_engines() {
    static RankEngines registry;
    return registry;
}

class SimJobMember final : public JobMember {
public:
    explicit SimJobMember(std::shared_ptr<Engine> engine) : engine_(std::move(engine)) {}

    LocalDirectory& directory() override { return engine_->directory; }
    Server& server(std::size_t index) override { return *engine_->devices.at(index); }

    Result<ExportedRegion> export_region(const Handle& handle) override {
        SimDevice* device = engine_->device_of(handle.service());
        const std::uint64_t address = handle.memory().allocation().address;
        if (device == nullptr || !device->storage().overlaps(address, handle.size())) {
            return Error::invalid_argument(
                handle.describe() + " is not in a simulated device's segment (memory adopted "
                                    "from the host stays in its process)");
        }
        return ExportedRegion{device->segment().descriptor(), device->storage().base_address(),
                              device->segment().capacity_bytes()};
    }

    Status import_region(const ExportedRegion& region) override {
        return engine_->imported.add(region.descriptor, region.base_address, region.size_bytes);
    }

    Status export_event(const Event& event, ExportedStream& stream) override {
        return engine_->export_event(event, stream);
    }

private:
    std::shared_ptr<Engine> engine_;
};

}  // namespace

void remember_rank_engine(const std::shared_ptr<Engine>& engine) {
    RankEngines& registry = rank_engines();
    std::lock_guard lock(registry.mutex);
    std::erase_if(registry.engines, [](const auto& entry) { return entry.second.expired(); });
    registry.engines[engine->runtime_id] = engine;
}

std::shared_ptr<JobMember> job_member(const std::shared_ptr<Runtime>& runtime) {
    if (runtime == nullptr || runtime->backend() != "sim") {
        return nullptr;
    }
    RankEngines& registry = rank_engines();
    std::lock_guard lock(registry.mutex);
    auto found = registry.engines.find(runtime->runtime_id());
    if (found == registry.engines.end()) {
        return nullptr;
    }
    std::shared_ptr<Engine> engine = found->second.lock();
    return engine != nullptr ? std::make_shared<SimJobMember>(std::move(engine)) : nullptr;
}

}  // namespace tandem::sim
