// The CUDA engine: storage, stream order, and the resolution of outcomes the GPUs reported.

#include "engine.hpp"

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
    label.clear();
    device = 0;
    stream = StreamId{};
    inputs.clear();
    outputs.clear();
    held.clear();
    keep_alive.reset();
    slot = 0;
    launch_id = 0;
    known_failure.reset();
    known_skip.reset();
    captured = false;
    resolved = false;
    failed = false;
}

// ---------------------------------------------------------------- CudaEngine

CudaEngine::CudaEngine(CudaOptions cuda_options)
    : options(cuda_options),
      runtime_id(std::random_device{}() ^ (std::uint64_t{std::random_device{}()} << 32)),
      rng(cuda_options.seed) {}

CudaEngine::~CudaEngine() {
    (void)resolve_all();
    for (const auto& [id, state] : events) {
        cudaEventDestroy(state.event);
    }
}

ClaimStore& CudaEngine::claims_of(std::uint32_t device) const { return devices[device]->claims(); }

std::optional<Error> CudaEngine::lost(std::uint32_t device) const {
    return devices[device]->lost_locked();
}

ServiceId CudaEngine::service_of(std::uint32_t device) const { return devices[device]->service(); }

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

void CudaEngine::add_pending(std::shared_ptr<PendingOp> op) {
    for (const Target& output : op->outputs) {
        std::vector<const PendingOp*>& writers =
            pending_writers.find_or_insert(output.key.memory.value);
        if (writers.empty() || writers.back() != op.get()) {
            writers.push_back(op.get());
        }
    }
    pending.push_back(std::move(op));
}

bool CudaEngine::has_pending_writer(const std::vector<Target>& inputs) const {
    // The newest writer of any byte is never superseded, so the walk stops at the first one.
    return for_each_unsuperseded_producer(inputs, [](const PendingOp&) { return false; });
}

bool CudaEngine::nothing_claimed() const {
    return std::none_of(devices.begin(), devices.end(), [](const auto& device) {
        return device->is_lost() || !device->claims().nothing_claimed();
    });
}

std::optional<Cause> CudaEngine::first_claimed(const std::vector<Target>& inputs) const {
    if (nothing_claimed() && std::none_of(inputs.begin(), inputs.end(), [](const Target& input) {
            return input.peer.has_value();
        })) {
        return std::nullopt;
    }
    return first_claimed_input(*this, inputs);
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
    pending_writers.clear();  // Points into `pending`.
    // Enqueue order: a producer is resolved before any consumer of its outputs.
    while (!pending.empty()) {
        std::shared_ptr<PendingOp> op = std::move(pending.front());
        pending.pop_front();
        resolve(*op);
        if (op.use_count() == 1 && spare_ops_.size() < max_spare_ops) {
            op->reset();  // No capture window looks at it any more.
            spare_ops_.push_back(std::move(op));
        }
    }
    return {};
}

void CudaEngine::resolve(PendingOp& op) {
    CudaDevice& device = *devices[op.device];
    std::optional<Error> failure;
    std::optional<Cause> cause;
    const std::optional<Error> gone = device.lost_locked();
    if (gone) {
        failure = *gone;
    } else if (op.known_failure) {
        failure = op.known_failure;
    } else if (op.kind != PendingOp::Kind::Replay) {
        // Outcomes resolve in enqueue order, so the claims on the inputs now are the claims the
        // work would have met in program order: a claimed input means it was skipped (C9), or
        // consumed bytes of failed work before the host knew (C13), whatever it reported itself.
        cause = first_claimed(op.inputs);
    }
    const bool launched =
        (op.kind == PendingOp::Kind::Launch || op.kind == PendingOp::Kind::Replay) && !gone &&
        !op.known_failure && !op.known_skip;
    if (launched) {
        const unsigned long long word = device.status_word(op.slot);
        const auto code = static_cast<std::uint32_t>(word & 0xffffffffu);
        const bool reported = (word >> 32) == op.launch_id;
        if (reported && code == skipped_code) {
            // The host finds the claimed input below, through the producer resolved before.
            device.count_skipped_on_device();
        } else if (reported && !failure && !cause) {
            failure = Error::kernel_failed(
                KernelFailedDetails{op.label, device.service(), op.stream, code});
        }
    }
    if (failure) {
        claim_failed(*this, op.outputs, *failure);
    } else if (cause) {
        claim_skipped(*this, op.label, op.outputs, *cause);
    } else if (!nothing_claimed()) {
        release_outputs(*this, op.outputs);  // With no claim anywhere, there is none to release.
    }
    op.failed = failure.has_value() || cause.has_value();
    op.resolved = true;
    op.held.clear();
    op.keep_alive.reset();
}

}  // namespace tandem::cuda
