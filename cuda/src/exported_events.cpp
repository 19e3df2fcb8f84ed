// Events of a CUDA runtime that other processes wait on (a job's other ranks, docs/DESIGN.md
// phase 2). The job advances a counter on the owner's board for each once the work the event was
// recorded after has run and is settled, so that a peer's wait finds the owner's claims final
// (P5 across processes); it learns that here, after work settles. A GPU says nothing when an
// event completes, so the counter moves as the owner's host drives its devices (a sync, a read,
// a wait, a barrier), as on the simulator.
//
// What "the work it was recorded after" is: every work of the group enqueued before the record,
// whatever its stream. That is the record's own stream and every stream it waited on, and more
// (unrelated streams' work, which only delays the counter to a later settle), never less.

#include "engine.hpp"

namespace tandem::cuda {

Status CudaEngine::export_event(const Event& event, ExportedStream& stream) {
    CudaDevice* device = device_of(event.device());
    if (device == nullptr || event.sequence() == 0 ||
        event.sequence() >= next_event.load(std::memory_order_relaxed) ||
        event.stream().value == 0) {
        return Error::invalid_argument("the event does not belong to this runtime");
    }
    const GroupLock lock = device->lock_group();
    auto& group = static_cast<CudaGroup&>(lock.group());
    const auto found = group.events.find(event.sequence());
    if (found != group.events.end() && (found->second.device != event.device().device_index ||
                                        found->second.stream != event.stream())) {
        return Error::invalid_argument("the event does not belong to this runtime");
    }
    if (group.exported.size() >= CudaGroup::max_exported) {
        return Error::invalid_argument(
            "other processes wait on " + std::to_string(CudaGroup::max_exported) +
            " events of this runtime not reached yet, the most they may");
    }
    // A record no longer remembered completed when its device was waited for: the work before it
    // is all enqueued before now.
    const std::uint64_t before =
        found != group.events.end() ? found->second.before : group.pipeline.next_sequence();
    group.exported.push_back(CudaGroup::ExportedEvent{event.sequence(), event.device().device_index,
                                                      event.stream(), before, &stream});
    group.reach_exported();  // At once, when it is reached already.
    return {};
}

bool CudaGroup::exported_reached(const ExportedEvent& event) {
    CudaDevice& device = device_at(event.device);
    if (auto recorded = events.find(event.sequence);
        recorded != events.end() && !device.lost_locked()) {
        DeviceGuard guard(device.ordinal());
        const cudaError_t status = cudaEventQuery(recorded->second.event);
        if (status == cudaErrorNotReady) {
            return false;
        }
        device.take_wait_status(status);
    }
    // The front of the pipeline is never settled: past it, every older work is.
    const Work* oldest = pipeline.oldest();
    return oldest == nullptr || oldest->sequence() >= event.before;
}

void CudaGroup::reach_exported() {
    for (auto each = exported.begin(); each != exported.end();) {
        if (!exported_reached(*each)) {
            ++each;
            continue;
        }
        // The record completed, so every wait of its stream before it has ended.
        const std::shared_ptr<RemoteWait> before =
            device_at(each->device).waits_before(each->stream, each->sequence);
        const std::optional<Error> failed =
            before != nullptr && before->over() ? before->failure() : std::nullopt;
        each->to->reach(each->sequence, failed);
        each = exported.erase(each);
    }
}

}  // namespace tandem::cuda
