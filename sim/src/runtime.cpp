#include "tandem/sim/runtime.hpp"

#include "engine.hpp"
#include "job_member.hpp"

namespace tandem::sim {

Result<std::shared_ptr<SimRuntime>> SimRuntime::create(SimOptions options) {
    if (Status rank = check_job_rank(options.rank); !rank) {
        return rank.error();
    }
    if (options.devices == 0 || options.devices > SimOptions::max_devices) {
        return Error::invalid_argument("a simulator runtime has 1 to " +
                                       std::to_string(SimOptions::max_devices) + " devices, not " +
                                       std::to_string(options.devices));
    }
    constexpr std::uint64_t max_capacity_bytes = std::uint64_t{1} << 40;
    if (options.capacity_bytes < options.pools.page_size_bytes ||
        options.capacity_bytes >= max_capacity_bytes) {
        return Error::invalid_argument("a device's capacity lies between one pool page and 1 TiB");
    }
    auto engine = std::make_unique<Engine>(options);
    for (std::uint32_t index = 0; index < options.devices; ++index) {
        Result<std::unique_ptr<Segment>> segment =
            options.segments != nullptr
                ? options.segments->take(engine->runtime_id, index, options.capacity_bytes)
                : Segment::create(Segment::name_for(engine->runtime_id, index),
                                  options.capacity_bytes);
        if (!segment) {
            return segment.error();
        }
        engine->groups.add_device();  // Before the device, which may lock its group.
        engine->devices.push_back(std::make_shared<SimDevice>(*engine, index, std::move(*segment)));
        engine->directory.add(*engine->devices.back());
    }
    if (options.mode == SchedulerMode::Threads) {
        engine->start_workers();
    }
    std::shared_ptr<SimRuntime> runtime(new SimRuntime(std::move(engine)));
    if (options.rank) {
        remember_rank_engine(runtime->engine_);
    }
    return runtime;
}

SimRuntime::SimRuntime(std::unique_ptr<Engine> engine) : engine_(std::move(engine)) {}

// The engine, shared with the clients, runs what is left and stops its workers when the last of
// them goes (`Engine::~Engine`).
SimRuntime::~SimRuntime() = default;

std::size_t SimRuntime::device_count() const { return engine_->devices.size(); }

Client SimRuntime::client(std::size_t index) const {
    return Client(std::shared_ptr<Server>(engine_, engine_->devices.at(index).get()));
}

std::uint64_t SimRuntime::runtime_id() const { return engine_->runtime_id; }

const SimOptions& SimRuntime::options() const { return engine_->options; }

Status SimRuntime::sync_all() { return sync_every_device(*this); }

std::uint64_t SimRuntime::trace_hash() const {
    std::lock_guard lock(engine_->mutex);
    return engine_->trace_hash;
}

std::uint64_t SimRuntime::steps() const {
    std::lock_guard lock(engine_->mutex);
    return engine_->steps;
}

std::vector<RaceReport> SimRuntime::races() const {
    std::lock_guard lock(engine_->mutex);
    return engine_->races.reports();
}

std::vector<TraceRecord> SimRuntime::trace() const {
    std::lock_guard lock(engine_->mutex);
    return engine_->trace;
}

std::vector<DeviceSnapshot> SimRuntime::inspect() const {
    std::lock_guard lock(engine_->mutex);
    std::vector<DeviceSnapshot> snapshots;
    for (const auto& device : engine_->devices) {
        device->sweep();
        snapshots.push_back(DeviceSnapshot{
            device->service(), device->segment().name(), device->memory().usage(),
            device->memory().live_count() + device->adopted_live(),
            device->claims().claimed_allocation_count(),
            device->claims().failure_count(), device->lost().has_value()});
    }
    return snapshots;
}

bool SimRuntime::drained() const {
    for (const DeviceSnapshot& device : inspect()) {
        if (device.allocations != 0 || device.claimed_allocations != 0 || device.failures != 0) {
            return false;
        }
    }
    return true;
}

std::vector<std::string> SimRuntime::segment_names() const {
    std::vector<std::string> names;
    for (const auto& device : engine_->devices) {
        names.push_back(device->segment().name());
    }
    return names;
}

}  // namespace tandem::sim
