// A GPU's streams waiting on events of other processes (a job's other ranks), and the work
// ordered after such waits: remote_wait.hpp says how, and why a wait is a host function.

#include "engine.hpp"

#include "tandem/core/labels.hpp"

#include <algorithm>

namespace tandem::cuda {

std::shared_ptr<PendingOp> CudaDevice::new_op(PendingOp::Kind kind, CudaStream& stream) {
    std::shared_ptr<PendingOp> op = group().new_op(kind);
    op->device = index_;
    op->stream = stream.id;
    if (stream.remote_waits != nullptr || stream.failed_wait) [[unlikely]] {
        follow_waits(*op, stream);
    }
    return op;
}

void CudaDevice::fold_waits(CudaStream& stream) {
    if (stream.remote_waits == nullptr || !stream.remote_waits->over()) {
        return;
    }
    if (const std::optional<Error>& failed = stream.remote_waits->failure();
        failed && !stream.failed_wait) {
        // The oldest wait that failed: the events of the stream recorded after it carry it.
        const RemoteWait* first = stream.remote_waits.get();
        for (const RemoteWait* wait = first;
             wait != nullptr && wait->previous != nullptr && wait->previous->failure().has_value();
             wait = wait->previous.get()) {
            first = wait->previous.get();
        }
        stream.failed_wait.emplace(first->from_event, *failed);
    }
    stream.remote_waits = nullptr;  // Ended: clean, or folded into `failed_wait`.
}

void CudaDevice::follow_waits(PendingOp& op, CudaStream& stream) {
    fold_waits(stream);
    if (stream.failed_wait) {
        op.follow_failed_wait(stream.failed_wait->second);  // Skipped: it will not run.
        return;
    }
    op.remote_wait = stream.remote_waits;
}

Status CudaDevice::wait_other_process(CudaStream& stream, const Event& event) {
    fold_waits(stream);
    if (stream.failed_wait) {
        return {};  // The stream skips its later work already: nothing is worth waiting for.
    }
    const std::uint64_t from_event = engine_.next_event.load(std::memory_order_relaxed);
    if (stream.remote_waits == nullptr) {
        // Reached already, with nothing of the stream pending before it: the owner's work before
        // it has run and settled, so only a failed wait there before it can still matter.
        if (const Result<bool> reached = directory_.event_reached(event); reached && *reached) {
            if (std::optional<Error> failed = directory_.failed_wait_before(event)) {
                stream.failed_wait.emplace(from_event, std::move(*failed));
            }
            return {};
        }
    } else if (stream.remote_waits->depth >= RemoteWait::max_chain) {
        return Error::invalid_argument(
            stream_name(service_, stream.id) + " of " + to_string(service_) + " has " +
            std::to_string(RemoteWait::max_chain) +
            " waits on other processes' events pending, the most it may; sync the stream first");
    }
    std::shared_ptr<DeviceDirectory> owners = engine_.directory.remote();
    if (owners == nullptr) {
        // Not expected: the event's owner is reached through the job, or the event was refused.
        return Error::invalid_argument(
            "an event of another process, but this runtime is in no job");
    }
    std::shared_ptr<RemoteWait> wait =
        remote_wait(event, service_, std::move(owners), stream.remote_waits, from_event);
    auto* held = new std::shared_ptr<RemoteWait>(wait);  // The host function's: it deletes it.
    DeviceGuard guard(ordinal_);
    if (const cudaError_t status = cudaLaunchHostFunc(stream.handle, &RemoteWait::run, held);
        status != cudaSuccess) {
        delete held;
        return call_error("enqueueing a wait for an event of " + to_string(event.device()), status);
    }
    stream.remote_waits = std::move(wait);
    return {};
}

Status CudaDevice::join_waits(CudaStream& stream, const Event& event) {
    CudaDevice* recorder = engine_.device_of(event.device());
    std::shared_ptr<RemoteWait> before =
        recorder != nullptr ? recorder->waits_before(event.stream(), event.sequence()) : nullptr;
    if (before == nullptr || (before->over() && !before->failure())) {
        return {};  // The common case: no wait of another process before the event.
    }
    fold_waits(stream);
    if (stream.failed_wait) {
        return {};  // Skipping its later work already.
    }
    const std::uint32_t ours = stream.remote_waits != nullptr ? stream.remote_waits->depth : 0;
    if (std::max(ours, before->depth) >= RemoteWait::max_chain) {
        return Error::invalid_argument(
            stream_name(service_, stream.id) + " of " + to_string(service_) +
            " would follow more than " + std::to_string(RemoteWait::max_chain) +
            " pending waits on other processes' events; sync the streams first");
    }
    stream.remote_waits = joined_wait(stream.remote_waits, std::move(before),
                                      engine_.next_event.load(std::memory_order_relaxed));
    return {};
}

std::shared_ptr<RemoteWait> CudaDevice::waits_before(StreamId id, std::uint64_t sequence) {
    CudaStream* found = stream_in(streams_, id);
    if (found == nullptr) {
        return nullptr;
    }
    fold_waits(*found);
    if (found->failed_wait && sequence >= found->failed_wait->first) {
        return failed_wait(found->failed_wait->second);
    }
    return found->remote_waits != nullptr ? wait_before_event(found->remote_waits, sequence)
                                          : nullptr;
}

}  // namespace tandem::cuda
