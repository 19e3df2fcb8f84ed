// The CUDA engine: storage, stream order, and the resolution of outcomes the GPUs reported.

#include "engine.hpp"

#include "launcher.hpp"

#include <algorithm>
#include <random>

namespace tandem::cuda {

std::string cuda_error_text(cudaError_t error) {
    return std::string(cudaGetErrorName(error)) + ": " + cudaGetErrorString(error);
}

cudaError_t clear_device_words(void* words, std::size_t bytes) {
    const cudaError_t status = cudaMemsetAsync(words, 0, bytes, cudaStreamLegacy);
    return status == cudaSuccess ? cudaStreamSynchronize(cudaStreamLegacy) : status;
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

// ---------------------------------------------------------------- PendingOp

void PendingOp::reset() {
    reset_work();
    held.clear();
    keep_alive.reset();
    replayed_kernel.clear();
    injected.reset();
    has_status_word = false;
    word_on_host = false;
    lands = false;
    issue_error = cudaSuccess;
    remote_wait.reset();
    slot = 0;
    launch_id = 0;
}

// ---------------------------------------------------------------- CudaEngine

CudaEngine::CudaEngine(CudaOptions cuda_options)
    : options(cuda_options),
      runtime_id(std::random_device{}() ^ (std::uint64_t{std::random_device{}()} << 32)) {
    register_catalog_launchers();
}

CudaEngine::~CudaEngine() {
    // Each group waits for its devices' work and settles it, as every resolve does: under its lock.
    for_each_group([](CudaGroup& group) { (void)group.resolve_all(); });
}

// ---------------------------------------------------------------- CudaGroup

CudaGroup::CudaGroup(CudaEngine& engine) : DeviceGroup(engine.directory), engine_(engine) {}

CudaGroup::~CudaGroup() {
    for (const auto& [id, state] : events) {
        cudaEventDestroy(state.event);
    }
}

void CudaGroup::absorb(DeviceGroup& other, const MovedSequences& moved) {
    auto& leaver = static_cast<CudaGroup&>(other);
    for (auto& [id, state] : leaver.events) {
        state.before = moved.translate(state.before);
    }
    events.merge(leaver.events);  // Event ids are the runtime's: none is in both.
    for (ExportedEvent& each : leaver.exported) {
        each.before = moved.translate(each.before);
        exported.push_back(each);
    }
    leaver.exported.clear();
    for (const auto& [device, event] : leaver.held_back_events_) {
        give_back_event(device, event);
    }
    leaver.held_back_events_.clear();
}

CudaDevice& CudaGroup::device_at(std::uint32_t index) const { return *engine_.devices[index]; }

CudaDevice* CudaEngine::device_of(ServiceId service) const {
    if (service.runtime_id != runtime_id || service.device_index >= devices.size()) {
        return nullptr;
    }
    return devices[service.device_index].get();
}

std::string CudaEngine::unmapped_words(const PeerBinding& peer) const {
    return "it binds memory of " + to_string(peer.memory().owner_service()) +
           " that is not mapped in this process (its region could not be mapped when it was "
           "published here)";
}

std::shared_ptr<PendingOp> CudaGroup::new_op(PendingOp::Kind kind) {
    std::shared_ptr<PendingOp> op = spare_ops_.take([] { return std::make_shared<PendingOp>(); });
    op->kind = kind;
    return op;
}

Status CudaGroup::resolve_all() {
    mutex.wait_for_issues();
    for (std::uint32_t index : members()) {
        device_at(index).synchronize();
        device_at(index).fetch_status();
    }
    // Every device waited for all its work, so every recorded event is complete. A lost device's
    // never will be, but a wait on one is refused as the device's loss before it is looked up.
    for (const auto& [sequence, state] : events) {
        give_back_event(state.device, state.event);
    }
    events.clear();
    pipeline.for_each_pending([this](Work& work) { fill_report(static_cast<PendingOp&>(work)); });
    settle_known();
    return {};
}

void CudaGroup::settle_known() {
    mutex.wait_for_issues();
    pipeline.settle_known(
        [this](std::shared_ptr<Work>&& work) { spare_ops_.give_back(std::move(work)); });
    if (!exported.empty()) [[unlikely]] {
        reach_exported();  // Another process may wait for what just settled.
    }
}

bool CudaGroup::waits_for(std::span<const std::pair<std::uint32_t, StreamId>> waited,
                           const Work& work) {
    const std::pair<std::uint32_t, StreamId> on{work.device, work.stream};
    return std::find(waited.begin(), waited.end(), on) != waited.end();
}

void CudaGroup::wait_for(const Work& work) {
    // Refused or skipped work put nothing on its stream.
    if (!work.refusal() && work.reported() != Work::Report::NotRun && !waits_for(waited_, work)) {
        waited_.emplace_back(work.device, work.stream);
    }
}

void CudaGroup::resolve_needed(std::span<const ClaimKey> reads,
                                const std::function<bool(const Work&)>& seed,
                                std::span<const std::uint32_t> whole, bool may_unlock,
                                std::optional<std::pair<std::uint32_t, StreamId>> stream) {
    mutex.wait_for_issues();  // What it waits for is on its streams, with what the driver said.
    waited_.clear();
    if (stream) {
        waited_.push_back(*stream);
    }
    pipeline.for_each_needed(reads, seed, [this](const Work& work) { wait_for(work); });
    resolve_waited(whole, std::numeric_limits<std::size_t>::max(), may_unlock);
}

void CudaGroup::resolve_inputs(const Work& consumer) {
    input_keys_.clear();
    for (const Target& input : consumer.inputs) {
        input_keys_.push_back(input.key);
    }
    resolve_needed(input_keys_, [](const Work&) { return false; });
}

void CudaGroup::resolve_oldest(std::size_t count) {
    mutex.wait_for_issues();
    waited_.clear();
    std::size_t seen = 0;
    pipeline.for_each_pending([&](const Work& work) {
        if (seen++ < count) {
            wait_for(work);
        }
    });
    resolve_waited({}, count);
}

void CudaGroup::resolve_waited(std::span<const std::uint32_t> whole, std::size_t fill_max,
                                bool may_unlock) {
    const auto in_whole = [whole](std::uint32_t device) {
        return std::find(whole.begin(), whole.end(), device) != whole.end();
    };
    // Taken before the wait: without the lock, other threads enqueue more work on these streams,
    // which this wait does not cover, and use the scratch, so an unlocked wait keeps a copy.
    const std::uint64_t before = pipeline.next_sequence();
    const std::uint64_t events_before = engine_.next_event.load(std::memory_order_relaxed);
    const bool unlocks = may_unlock && mutex.depth() == 1;
    std::vector<std::pair<std::uint32_t, StreamId>> kept;
    if (unlocks) {
        kept = waited_;
    }
    const std::span<const std::pair<std::uint32_t, StreamId>> waited =
        unlocks ? std::span<const std::pair<std::uint32_t, StreamId>>(kept) : waited_;
    if (unlocks) {
        std::vector<Fence> fences;
        for (std::uint32_t device : whole) {
            device_at(device).add_fences(fences);
        }
        for (const auto& [device, stream] : waited) {
            if (!in_whole(device) && !device_at(device).add_fence(stream, fences)) {
                device_at(device).synchronize(stream);  // No fence: waited for here.
            }
        }
        wait_unlocked(fences);
    } else {
        for (std::uint32_t device : whole) {
            device_at(device).synchronize();
        }
        for (const auto& [device, stream] : waited) {
            if (!in_whole(device)) {
                device_at(device).synchronize(stream);
            }
        }
    }
    for (std::uint32_t device : whole) {
        retire_events_of(device, events_before);
    }
    // The work pending on what was waited for when the wait began has finished, oldest first up
    // to `fill_max`.
    to_fill_.clear();
    pipeline.for_each_pending([&](Work& work) {
        if (to_fill_.size() < fill_max && work.sequence() < before &&
            (in_whole(work.device) || waits_for(waited, work))) {
            to_fill_.push_back(static_cast<PendingOp*>(&work));
        }
    });
    fetch_status_of(to_fill_, {});
    for (PendingOp* op : to_fill_) {
        fill_report(*op);
    }
    settle_known();
}

void CudaGroup::wait_unlocked(std::vector<Fence>& fences) {
    {
        DeviceGroup::Released released(*this);
        for (Fence& fence : fences) {
            if (fence.event != nullptr) {
                fence.status = cudaEventSynchronize(fence.event);
            } else {
                DeviceGuard guard(fence.ordinal);  // The calling thread's own current device.
                fence.status = cudaDeviceSynchronize();
            }
        }
    }
    for (const Fence& fence : fences) {
        device_at(fence.device).end_fence(fence);
    }
}

void CudaGroup::give_back_event(std::uint32_t device, cudaEvent_t event) {
    if (unlocked_event_waits_ > 0) {
        held_back_events_.emplace_back(device, event);
    } else {
        device_at(device).reuse_event(event);
    }
}

void CudaGroup::fetch_status_of(std::span<PendingOp* const> ops,
                                 std::span<const std::uint32_t> whole) {
    // A whole device's words were fetched with it; of the others, the span of slots the ops
    // were issued, one copy per device.
    for (std::uint32_t device : members()) {
        if (std::find(whole.begin(), whole.end(), device) != whole.end()) {
            continue;
        }
        std::uint64_t from = std::numeric_limits<std::uint64_t>::max();
        std::uint64_t to = 0;
        for (const PendingOp* op : ops) {
            if (op->device == device && op->has_status_word && !op->word_on_host) {
                from = std::min(from, op->issued);
                to = std::max(to, op->issued + 1);
            }
        }
        device_at(device).fetch_status(from, to);
    }
}

void CudaGroup::retire_events_of(std::uint32_t device, std::uint64_t before) {
    for (auto each = events.begin(); each != events.end() && each->first < before;) {
        if (each->second.device == device) {
            give_back_event(device, each->second.event);
            each = events.erase(each);
        } else {
            ++each;
        }
    }
}

void CudaGroup::wait_for_event(const Event& event, bool may_unlock) {
    auto recorded = events.find(event.sequence());
    if (recorded == events.end()) {
        settle_known();  // Completed when its device was waited for; settled then, or now.
        return;
    }
    const EventState state = recorded->second;
    CudaDevice& device = device_at(state.device);
    if (!device.lost_locked()) {
        cudaError_t status = cudaSuccess;
        if (may_unlock && mutex.depth() == 1) {
            // While this waits unlocked, no event goes back for reuse (`give_back_event`): the
            // event is recorded again only once no one may still wait on its last recording.
            ++unlocked_event_waits_;
            {
                DeviceGroup::Released released(*this);
                status = cudaEventSynchronize(state.event);
            }
            if (--unlocked_event_waits_ == 0) {
                for (const auto& [owner, held_back] : held_back_events_) {
                    device_at(owner).reuse_event(held_back);
                }
                held_back_events_.clear();
            }
        } else {
            status = cudaEventSynchronize(state.event);
        }
        device.take_wait_status(status);
    }
    // Another thread may have retired it meanwhile (and given its CUDA event back).
    if (recorded = events.find(event.sequence()); recorded != events.end()) {
        events.erase(recorded);
        if (!device.lost_locked()) {
            give_back_event(state.device, state.event);
        }
    }
    // The work enqueued before it on its stream has run.
    to_fill_.clear();
    pipeline.for_each_pending([&](Work& work) {
        if (work.device == state.device && work.stream == state.stream &&
            work.sequence() < state.before) {
            to_fill_.push_back(static_cast<PendingOp*>(&work));
        }
    });
    fetch_status_of(to_fill_, {});
    for (PendingOp* op : to_fill_) {
        fill_report(*op);
    }
    settle_known();
}

bool CudaGroup::event_complete(const Event& event) {
    auto recorded = events.find(event.sequence());
    if (recorded == events.end()) {
        return true;
    }
    CudaDevice& device = device_at(recorded->second.device);
    if (device.lost_locked()) {
        return true;  // It will never run; the caller reports the loss.
    }
    DeviceGuard guard(device.ordinal());
    const cudaError_t status = cudaEventQuery(recorded->second.event);
    if (status == cudaErrorNotReady) {
        return false;
    }
    device.take_wait_status(status);
    return true;
}

void CudaGroup::retire_oldest_event() {
    bool wait = true;  // For the oldest; the ones after it only if they are complete.
    while (!events.empty()) {
        auto oldest = events.begin();
        CudaDevice& device = device_at(oldest->second.device);
        if (!device.lost_locked()) {
            DeviceGuard guard(device.ordinal());
            const cudaError_t status = wait ? cudaEventSynchronize(oldest->second.event)
                                            : cudaEventQuery(oldest->second.event);
            if (status == cudaErrorNotReady) {
                return;
            }
            if (status != cudaSuccess) {
                cudaGetLastError();  // The device's next sync reports a sticky error (D1).
            }
            give_back_event(oldest->second.device, oldest->second.event);
        }
        events.erase(oldest);
        wait = false;
    }
}

void CudaGroup::fill_report(PendingOp& op) {
    CudaDevice& device = device_at(op.device);
    if (const std::optional<Error> gone = device.lost_locked()) {
        op.lost_with(*gone);  // D1: the host cannot tell what a lost device did.
        return;
    }
    if (op.remote_wait != nullptr && op.remote_wait->over()) [[unlikely]] {
        // Its stream was waited for, so the waits before it have ended: if one failed, what it
        // was ordered after never happened, whatever it did meanwhile on the GPU.
        if (const std::optional<Error>& failed = op.remote_wait->failure()) {
            op.follow_failed_wait(*failed);
        }
        op.remote_wait.reset();
    }
    if (op.issue_error != cudaSuccess) [[unlikely]] {
        op.refuse(device.refusal_of(op.label, op.issue_error));  // The driver did not take it.
        op.has_status_word = false;
        op.issue_error = cudaSuccess;
        return;
    }
    if (op.refusal() || op.reported() != Work::Report::Pending) {
        return;  // Known when it was enqueued.
    }
    if (!op.has_status_word) {
        op.ran(Status{});  // A copy or write its stream passed (`lands`).
        return;
    }
    const unsigned long long word = device.status_word(op.slot);
    const auto code = static_cast<std::uint32_t>(word & 0xffffffffu);
    const bool reported = (word >> 32) == op.launch_id;
    if (reported && code == skipped_code) {
        // The kernel found a failed producer and did not compute: the pipeline finds the claimed
        // input through the producer settled before it.
        device.count_skipped_on_device();
        op.did_not_run();
    } else if (reported) {
        if (op.injected && op.injected->code == code) {
            op.ran(op.injected->failure(device.failed_kernel(op), device.service(), op.stream));
        } else {
            op.ran(Error::kernel_failed(
                KernelFailedDetails{device.failed_kernel(op), device.service(), op.stream, code}));
        }
    } else {
        op.ran(Status{});
    }
}

}  // namespace tandem::cuda
