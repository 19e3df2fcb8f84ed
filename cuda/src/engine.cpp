// The CUDA engine: storage, stream order, and the resolution of outcomes the GPUs reported.

#include "engine.hpp"

#include "launcher.hpp"

#include <algorithm>
#include <random>

namespace tandem::cuda {

std::string cuda_error_text(cudaError_t error) {
    return std::string(cudaGetErrorName(error)) + ": " + cudaGetErrorString(error);
}

bool sticky(cudaError_t error) {
    switch (error) {
        case cudaErrorIllegalAddress:
        case cudaErrorLaunchFailure:
        case cudaErrorHardwareStackError:
        case cudaErrorIllegalInstruction:
        case cudaErrorMisalignedAddress:
        case cudaErrorInvalidAddressSpace:
        case cudaErrorInvalidPc:
        case cudaErrorAssert:
        case cudaErrorLaunchTimeout:
        case cudaErrorECCUncorrectable:
            return true;
        default:
            return false;
    }
}

// ---------------------------------------------------------------- CudaStorage

CudaStorage::CudaStorage(int ordinal, std::uint64_t capacity_bytes)
    : ordinal_(ordinal), capacity_bytes_(capacity_bytes) {}

Result<StorageRegion> CudaStorage::reserve(std::uint64_t size_bytes) {
    if (size_bytes > capacity_bytes_ - reserved_bytes_) {
        return Error::out_of_memory(
            "device pools are at their capacity",
            OutOfMemoryDetails{size_bytes, capacity_bytes_ - reserved_bytes_, reserved_bytes_,
                               largest_reservable_bytes()});
    }
    DeviceGuard guard(ordinal_);
    void* pointer = nullptr;
    const cudaError_t status = cudaMalloc(&pointer, size_bytes);
    if (status != cudaSuccess) {
        cudaGetLastError();  // Out of memory is not sticky: clear it.
        std::size_t free_bytes = 0;
        std::size_t total_bytes = 0;
        cudaMemGetInfo(&free_bytes, &total_bytes);
        return Error::out_of_memory(
            "cudaMalloc of " + std::to_string(size_bytes) +
                " bytes failed: " + cuda_error_text(status),
            OutOfMemoryDetails{size_bytes, free_bytes, reserved_bytes_, free_bytes});
    }
    const auto address = reinterpret_cast<std::uint64_t>(pointer);
    regions_.emplace(address, size_bytes);
    reserved_bytes_ += size_bytes;
    return StorageRegion{address, size_bytes};
}

void CudaStorage::release(StorageRegion region) {
    auto found = regions_.find(region.address);
    if (found == regions_.end()) {
        return;
    }
    DeviceGuard guard(ordinal_);
    cudaFree(reinterpret_cast<void*>(region.address));
    reserved_bytes_ -= found->second;
    regions_.erase(found);
}

std::uint64_t CudaStorage::largest_reservable_bytes() const {
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    {
        DeviceGuard guard(ordinal_);
        cudaMemGetInfo(&free_bytes, &total_bytes);
    }
    return std::min<std::uint64_t>(free_bytes, capacity_bytes_ - reserved_bytes_);
}

// ---------------------------------------------------------------- PendingOp

void PendingOp::reset() {
    reset_work();
    held.clear();
    keep_alive.reset();
    has_status_word = false;
    slot = 0;
    launch_id = 0;
}

// ---------------------------------------------------------------- CudaEngine

CudaEngine::CudaEngine(CudaOptions cuda_options)
    : options(cuda_options),
      runtime_id(std::random_device{}() ^ (std::uint64_t{std::random_device{}()} << 32)),
      rng(cuda_options.seed) {
    register_catalog_launchers();
}

CudaEngine::~CudaEngine() {
    (void)resolve_all();
    for (const auto& [id, state] : events) {
        cudaEventDestroy(state.event);
    }
}

CudaDevice* CudaEngine::device_of(ServiceId service) const {
    if (service.runtime_id != runtime_id || service.device_index >= devices.size()) {
        return nullptr;
    }
    return devices[service.device_index].get();
}

std::shared_ptr<PendingOp> CudaEngine::new_op(PendingOp::Kind kind) {
    std::shared_ptr<PendingOp> op;
    if (spare_ops_.empty()) {
        op = std::make_shared<PendingOp>();
    } else {
        op = std::move(spare_ops_.back());
        spare_ops_.pop_back();
    }
    op->kind = kind;
    return op;
}

Status CudaEngine::resolve_all() {
    for (const auto& device : devices) {
        device->synchronize();
        device->fetch_status();
    }
    // Every device waited for all its work, so every recorded event is complete. A lost device's
    // never will be, but a wait on one is refused as the device's loss before it is looked up.
    for (const auto& [sequence, state] : events) {
        devices[state.device]->reuse_event(state.event);
    }
    events.clear();
    pipeline.for_each_pending([this](Work& work) { fill_report(static_cast<PendingOp&>(work)); });
    pipeline.settle_ready([this](std::shared_ptr<Work>&& work) {
        if (work.use_count() == 1 && spare_ops_.size() < max_spare_ops) {
            auto op = std::static_pointer_cast<PendingOp>(std::move(work));
            op->reset();
            spare_ops_.push_back(std::move(op));
        }
    });
    return {};
}

void CudaEngine::fill_report(PendingOp& op) {
    CudaDevice& device = *devices[op.device];
    if (const std::optional<Error> gone = device.lost_locked()) {
        // D1: the host cannot tell what a lost device did.
        op.report = Work::Report::Failed;
        op.failure = *gone;
        return;
    }
    if (op.refused || op.report != Work::Report::Pending) {
        return;  // Known when it was enqueued.
    }
    if (!op.has_status_word) {
        op.report = Work::Report::Landed;
        return;
    }
    const unsigned long long word = device.status_word(op.slot);
    const auto code = static_cast<std::uint32_t>(word & 0xffffffffu);
    const bool reported = (word >> 32) == op.launch_id;
    if (reported && code == skipped_code) {
        // The kernel found a failed producer and did not compute: the pipeline finds the claimed
        // input through the producer settled before it.
        device.count_skipped_on_device();
        op.report = Work::Report::NotRun;
    } else if (reported) {
        op.report = Work::Report::Failed;
        op.failure =
            Error::kernel_failed(KernelFailedDetails{op.label, device.service(), op.stream, code});
    } else {
        op.report = Work::Report::Landed;
    }
}

}  // namespace tandem::cuda
