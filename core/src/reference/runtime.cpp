#include "reference.hpp"

#include <random>

namespace tandem::reference {

ReferenceEngine::ReferenceEngine(ReferenceOptions reference_options)
    : options(reference_options),
      runtime_id(std::random_device{}() ^ (std::uint64_t{std::random_device{}()} << 32)) {}

Result<std::shared_ptr<ReferenceRuntime>> ReferenceRuntime::create(ReferenceOptions options) {
    if (Status rank = check_job_rank(options.rank); !rank) {
        return rank.error();
    }
    if (options.devices == 0 || options.devices > ReferenceOptions::max_devices) {
        return Error::invalid_argument("a reference runtime has 1 to " +
                                       std::to_string(ReferenceOptions::max_devices) +
                                       " devices, not " + std::to_string(options.devices));
    }
    if (options.capacity_bytes < options.pools.page_size_bytes) {
        return Error::invalid_argument("a device's capacity is at least one pool page (" +
                                       std::to_string(options.pools.page_size_bytes) + " bytes)");
    }
    auto engine = std::make_unique<ReferenceEngine>(options);
    for (std::uint32_t index = 0; index < options.devices; ++index) {
        engine->groups.add_device();  // Before the device, which may lock its group.
        engine->devices.push_back(std::make_shared<ReferenceDevice>(
            *engine, index, options.capacity_bytes, options.pools));
        engine->directory.add(*engine->devices.back());
    }
    return std::shared_ptr<ReferenceRuntime>(new ReferenceRuntime(std::move(engine)));
}

ReferenceRuntime::ReferenceRuntime(std::unique_ptr<ReferenceEngine> engine)
    : engine_(std::move(engine)) {}

ReferenceRuntime::~ReferenceRuntime() = default;

std::size_t ReferenceRuntime::device_count() const { return engine_->devices.size(); }

Client ReferenceRuntime::client(std::size_t index) const {
    return Client(std::shared_ptr<Server>(engine_, engine_->devices.at(index).get()));
}

std::uint64_t ReferenceRuntime::runtime_id() const { return engine_->runtime_id; }

Status ReferenceRuntime::sync_all() { return sync_every_device(*this); }

bool ReferenceRuntime::drained() const {
    for (const auto& device : engine_->devices) {
        const GroupLock lock = device->lock_group();
        if (!device->claims().drained() || device->memory().live_count() != 0 ||
            device->adopted_live() != 0 ||
            !lock.group().pipeline.empty()) {
            return false;
        }
    }
    return true;
}

}  // namespace tandem::reference
