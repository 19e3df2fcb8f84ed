// Capture and replay on a GPU (rule C14): a window records the launches enqueued inside it and
// is refused when any of its work failed or was skipped; a replay runs the recorded launches
// without checking inputs, all sharing one status word, and claims its write set on failure.

#include "engine.hpp"

#include <algorithm>

namespace tandem::cuda {

Status CudaDevice::begin_capture(StreamId stream_id) {
    std::lock_guard lock(engine_.mutex);
    Result<CudaStream*> found = stream(stream_id);
    if (!found) {
        return found.error();
    }
    if ((*found)->capture) {
        return Error::invalid_argument(to_string(stream_id) + " is already capturing");
    }
    (*found)->capture.emplace();
    return {};
}

Result<CaptureGraph> CudaDevice::end_capture(StreamId stream_id) {
    std::lock_guard lock(engine_.mutex);
    Result<CudaStream*> found = stream(stream_id);
    if (!found) {
        return found.error();
    }
    if (!(*found)->capture) {
        return Error::invalid_argument(to_string(stream_id) + " is not capturing");
    }
    CudaStream::Capture window = std::move(*(*found)->capture);
    (*found)->capture.reset();
    (void)engine_.resolve_all();
    std::vector<ClaimKey> write_set;
    std::optional<std::string> doomed;
    for (const auto& op : window.work) {
        if (op->failed && !doomed) {
            doomed = "'" + op->label + "' failed or was skipped";  // C14: dooms the window.
        }
        for (const Target& output : op->outputs) {
            if (std::find(write_set.begin(), write_set.end(), output.key) == write_set.end()) {
                write_set.push_back(output.key);
            }
        }
    }
    if (doomed) {
        Error refusal = Error::launch_refused("capture", "the recording window was doomed: " + *doomed);
        (void)claims_.fail(write_set, refusal);
        return refusal;
    }
    return CaptureGraph(service_, std::move(window.launches), std::move(write_set));
}

Status CudaDevice::replay(const CaptureGraph& graph, StreamId stream_id) {
    std::lock_guard lock(engine_.mutex);
    if (Status alive = refuse_if_lost(); !alive) {
        return alive;
    }
    Result<CudaStream*> found = stream(stream_id);
    if (!found) {
        return found.error();
    }
    auto op = std::make_shared<PendingOp>();
    op->kind = PendingOp::Kind::Replay;
    op->label = "replay of " + std::to_string(graph.launches().size()) + " launches";
    op->device = index_;
    op->stream = stream_id;
    op->slot = next_slot_++ % status_slots;
    op->launch_id = next_launch_id_++;
    for (const ClaimKey& key : graph.write_set()) {
        op->outputs.push_back(Target{index_, key, std::nullopt});
    }
    for (LaunchRequest launch : graph.launches()) {
        launch.stream = stream_id;
        if (Status queued = enqueue_launch(std::move(launch), false, op.get()); !queued) {
            return queued;
        }
    }
    push(op, **found);
    return {};
}

}  // namespace tandem::cuda
