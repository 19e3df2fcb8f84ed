#include "tandem/cuda/runtime.hpp"

#include "engine.hpp"
#include "tensor_map_encode.hpp"

namespace tandem::cuda {

GpuReport probe_gpus() {
    GpuReport report;
    cudaRuntimeGetVersion(&report.runtime_version);
    if (cudaDriverGetVersion(&report.driver_version) != cudaSuccess || report.driver_version == 0) {
        report.problem = "no NVIDIA driver is loaded";
        return report;
    }
    if (report.driver_version < report.runtime_version) {
        report.problem = "the driver supports CUDA " + std::to_string(report.driver_version) +
                         ", older than this build's runtime " +
                         std::to_string(report.runtime_version);
        return report;
    }
    int count = 0;
    // With no driver or no GPU this fails (cudaErrorInsufficientDriver, cudaErrorNoDevice):
    // every error here means there is no usable GPU.
    if (const cudaError_t status = cudaGetDeviceCount(&count);
        status != cudaSuccess || count == 0) {
        report.problem = status != cudaSuccess ? cuda_error_text(status) : "no GPU is visible";
        cudaGetLastError();
        return report;
    }
    report.tma_encoder = tma_encoder_available();
    report.peer.assign(static_cast<std::size_t>(count),
                       std::vector<bool>(static_cast<std::size_t>(count)));
    for (int device = 0; device < count; ++device) {
        cudaDeviceProp properties{};
        cudaGetDeviceProperties(&properties, device);
        report.names.emplace_back(properties.name);
        report.compute_capabilities.emplace_back(properties.major, properties.minor);
        for (int peer = 0; peer < count; ++peer) {
            int can = device == peer ? 1 : 0;
            if (device != peer) {
                cudaDeviceCanAccessPeer(&can, device, peer);
            }
            report.peer[static_cast<std::size_t>(device)][static_cast<std::size_t>(peer)] =
                can != 0;
        }
    }
    return report;
}

std::vector<int> gpus_in_turn(std::uint32_t devices, std::size_t visible) {
    std::vector<int> ordinals;
    for (std::uint32_t index = 0; index < devices && visible != 0; ++index) {
        ordinals.push_back(static_cast<int>(index % visible));
    }
    return ordinals;
}

namespace {

/// The GPU of each device `options` asks for, or why there are none.
Result<std::vector<int>> placed_devices(const CudaOptions& options, std::uint32_t visible) {
    if (options.gpus.empty()) {
        const std::uint32_t wanted = options.devices == 0 ? visible : options.devices;
        if (wanted > visible) {
            return Error::invalid_argument(std::to_string(wanted) + " GPUs asked for, " +
                                           std::to_string(visible) + " visible");
        }
        return gpus_in_turn(wanted, visible);  // One each: `wanted` is at most `visible`.
    }
    if (options.devices != 0 && options.devices != options.gpus.size()) {
        return Error::invalid_argument(std::to_string(options.devices) + " devices asked for on " +
                                       std::to_string(options.gpus.size()) +
                                       " GPU ordinals: give one of the two, or both alike");
    }
    if (options.gpus.size() > CudaOptions::max_devices) {
        return Error::invalid_argument(std::to_string(options.gpus.size()) +
                                       " devices asked for, at most " +
                                       std::to_string(CudaOptions::max_devices));
    }
    for (const int ordinal : options.gpus) {
        if (ordinal < 0 || static_cast<std::uint32_t>(ordinal) >= visible) {
            return Error::invalid_argument("no GPU of ordinal " + std::to_string(ordinal) + ": " +
                                           std::to_string(visible) + " visible");
        }
    }
    return options.gpus;
}

/// What a device may reserve: the GPU's free memory at start split between the `sharing`
/// devices placed on it, unless `capacity_bytes` gives the figure.
std::uint64_t device_capacity(const CudaOptions& options, int ordinal, std::uint64_t sharing) {
    if (options.capacity_bytes != 0) {
        return options.capacity_bytes;
    }
    DeviceGuard guard(ordinal);
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    return free_bytes / sharing / 256 * 256;
}

/// The GPUs among `ordinals`, other than `ordinal`, whose kernels can reach `ordinal`'s memory.
std::vector<int> peers_of(int ordinal, const std::vector<int>& ordinals, const GpuReport& report) {
    std::vector<int> peers;
    for (const int other : ordinals) {
        const bool reaches = report.peer[static_cast<std::size_t>(other)]
                                        [static_cast<std::size_t>(ordinal)];
        if (other != ordinal && reaches && std::ranges::count(peers, other) == 0) {
            peers.push_back(other);
        }
    }
    return peers;
}

}  // namespace

Result<std::shared_ptr<CudaRuntime>> CudaRuntime::create(CudaOptions options) {
    if (Status rank = check_job_rank(options.rank); !rank) {
        return rank.error();
    }
    const GpuReport report = probe_gpus();
    if (!report.problem.empty()) {
        return Error(ErrorKind::DeviceLost, "no usable GPU: " + report.problem);
    }
    Result<std::vector<int>> placed =
        placed_devices(options, static_cast<std::uint32_t>(report.names.size()));
    if (!placed) {
        return placed.error();
    }
    const std::vector<int>& ordinals = *placed;
    // A device capped below one pool page still serves allocations: pages shrink to fit.
    if (options.capacity_bytes != 0 && options.capacity_bytes < options.pools.page_size_bytes) {
        options.pools.page_size_bytes = options.capacity_bytes / 256 * 256;
        options.pools.slice_max_bytes =
            std::min(options.pools.slice_max_bytes, options.pools.page_size_bytes);
    }
    auto engine = std::make_unique<CudaEngine>(options);
    std::vector<std::uint64_t> sharing;  // Devices on each device's GPU, itself included.
    std::vector<std::uint64_t> capacities;
    for (const int ordinal : ordinals) {
        sharing.push_back(static_cast<std::uint64_t>(std::ranges::count(ordinals, ordinal)));
        // Measured before any device reserves: devices on one GPU split what was free.
        capacities.push_back(device_capacity(options, ordinal, sharing.back()));
    }
    for (std::uint32_t index = 0; index < ordinals.size(); ++index) {
        engine->groups.add_device();  // Before the device, which may lock its group.
        engine->devices.push_back(std::make_shared<CudaDevice>(
            *engine, index, ordinals[index], capacities[index], sharing[index] > 1,
            peers_of(ordinals[index], ordinals, report)));
        engine->directory.add(*engine->devices.back());
    }
    return std::shared_ptr<CudaRuntime>(new CudaRuntime(std::move(engine)));
}

CudaRuntime::CudaRuntime(std::unique_ptr<CudaEngine> engine) : engine_(std::move(engine)) {}

// The engine, shared with the clients, resolves what is left when the last of them goes
// (`CudaEngine::~CudaEngine`).
CudaRuntime::~CudaRuntime() = default;

std::size_t CudaRuntime::device_count() const { return engine_->devices.size(); }

Client CudaRuntime::client(std::size_t index) const {
    return Client(std::shared_ptr<Server>(engine_, engine_->devices.at(index).get()));
}

std::uint64_t CudaRuntime::runtime_id() const { return engine_->runtime_id; }

Status CudaRuntime::sync_all() {
    engine_->for_each_group([this](CudaGroup& group) {
        (void)group.resolve_all();
        for (std::uint32_t index : group.members()) {
            engine_->devices[index]->memory().sweep();
        }
    });
    return {};
}

bool CudaRuntime::drained() const {
    for (const auto& device : engine_->devices) {
        const GroupLock lock = device->lock_group();
        device->memory().sweep();
        if (device->live_allocations() != 0 || device->adopted_live() != 0 ||
            !device->claims().drained()) {
            return false;
        }
    }
    return true;
}

std::uint64_t CudaRuntime::skipped_on_device(std::size_t index) const {
    if (index >= engine_->devices.size()) {
        return 0;
    }
    const GroupLock lock = engine_->devices[index]->lock_group();
    return engine_->devices[index]->skipped_on_device();
}

std::size_t CudaRuntime::live_events() const {
    std::size_t live = 0;
    engine_->for_each_group([&live](const CudaGroup& group) { live += group.events.size(); });
    return live;
}

std::uint64_t CudaRuntime::tma_launches(std::size_t index) const {
    if (index >= engine_->devices.size()) {
        return 0;
    }
    const GroupLock lock = engine_->devices[index]->lock_group();
    return engine_->devices[index]->tma_launches();
}

}  // namespace tandem::cuda
