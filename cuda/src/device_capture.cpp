// Capture and replay on a GPU (rule C14): a window records the launches enqueued inside it and
// is refused when any of its work failed or was skipped; a window that succeeded is built into a
// CUDA graph. A replay launches that graph without checking inputs, all its launches sharing one
// status word, and claims its write set on failure.

#include "cuda_graph.hpp"
#include "engine.hpp"

#include <algorithm>

namespace tandem::cuda {

Status CudaDevice::do_settle_window(StreamId, const CaptureWindow&) {
    settle_own_work();  // The window's work is this device's.
    return {};
}

Result<CaptureGraph> CudaDevice::do_make_graph(CaptureWindow& window) {
    Result<std::shared_ptr<void>> native = build_graph(window.launches);
    if (!native) {
        (void)claims_.fail(window.write_set, native.error());
        return native.error();
    }
    return graph_of(window, std::move(*native));
}

Result<std::shared_ptr<void>> CudaDevice::build_graph(const std::vector<LaunchRequest>& launches) {
    std::vector<CudaGraph::Node> nodes;
    HeldBindings held;  // What a replay keeps reserved, once for every replay.
    nodes.reserve(launches.size());
    // A window records no launch of nothing (the Server returns at once for one, C10): every
    // launch is a node, in order, as a replay's draws are.
    for (const LaunchRequest& launch : launches) {
        CudaGraph::Node& node = nodes.emplace_back(
            launch.external ? nullptr : launcher_of(launch.entry), launch.config);
        node.kernel = launch.kernel;
        if (launch.external) {
            node.external = launch.external;  // Called again on the capture stream.
            node.count = external_arguments(launch, node.pointers, node.sizes);
        } else {
            encode_params(launch, node.params);
        }
        held.add(launch.resources);
    }
    if (nodes.empty()) {
        return std::shared_ptr<void>{};  // Nothing to launch: a replay only counts as work.
    }
    Result<std::shared_ptr<CudaGraph>> graph =
        CudaGraph::build(ordinal_, nodes, take_graph_id(), std::move(held));
    if (!graph) {
        return graph.error();
    }
    return std::static_pointer_cast<void>(std::move(*graph));
}

Status CudaDevice::do_replay(const CaptureGraph& graph, StreamId stream_id,
                             std::span<const std::optional<InjectedFault>> injected) {
    const GroupLock lock = lock_group();
    Result<CudaStream*> found = stream(stream_id);
    if (!found) {
        return found.error();
    }
    std::shared_ptr<PendingOp> op = new_op(PendingOp::Kind::Replay, **found);
    keep_status_words_bounded();
    op->issued = next_slot_;
    op->slot = next_slot_++ % status_slots;
    op->launch_id = take_launch_id();
    group().pipeline.add_replay_targets(graph, *op, (*found)->capture);
    const std::vector<LaunchRequest>& launches = graph.work().launches;
    if (!launches.empty() &&
        std::all_of(launches.begin(), launches.end(), [&](const LaunchRequest& launch) {
            return launch.kernel == launches.front().kernel;
        })) {
        op->replayed_kernel = launches.front().kernel;
    }
    // The graph was built on this device by `end_capture`; a graph of another device (or one the
    // simulator recorded) replays launch by launch, and is refused there like any launch. So does
    // a graph with external work while kernel faults are armed: its external nodes read no
    // ticket, and a fault due for one is delivered as it is to external work called directly.
    if (op->after_failed_wait()) [[unlikely]] {
        op->did_not_run();  // Ordered after a wait that failed: the graph does not run.
        push(std::move(op));
        return {};
    }
    const auto* native = static_cast<const CudaGraph*>(graph.work().native.get());
    if (native != nullptr && graph.device() == service_ &&
        !(native->has_external() && !injected.empty())) {
        replay_graph(graph, *op, **found, injected);
        push(std::move(op));
        return {};
    }
    for (std::size_t index = 0; index < graph.work().launches.size(); ++index) {
        LaunchRequest launch = graph.work().launches[index];
        launch.stream = stream_id;
        launch.injected = index < injected.size() ? injected[index] : std::nullopt;
        if (Status queued = enqueue_launch(launch, **found, false, op.get()); !queued) {
            return queued;
        }
    }
    push(std::move(op));
    return {};
}

void CudaDevice::replay_graph(const CaptureGraph& graph, PendingOp& op, CudaStream& target,
                              std::span<const std::optional<InjectedFault>> injected) {
    auto& native = *static_cast<CudaGraph*>(graph.work().native.get());
    std::vector<std::uint32_t>& injected_codes = replay_codes_;
    injected_codes.clear();
    // One code per node, a node per launch (`build_graph`); none at all when nothing was armed.
    for (const std::optional<InjectedFault>& due : injected) {
        injected_codes.push_back(due ? due->code : 0);
        if (due && !op.injected) {
            op.injected = due;  // The first launch a fault hits reports it.
        }
    }
    // The graph keeps its launches' bindings reserved; the replay keeps the graph.
    op.keep_alive = graph.work().native;
    if (CudaGraph::plain(injected_codes)) {
        op.launch_id = native.plain_id();  // The plain graph's word reports under its id.
    }
    // After the graph's previous replay, when that was on another stream still here (a
    // destroyed stream's work had all run).
    cudaStream_t previous = nullptr;
    if (const std::optional<StreamId> last = native.last_stream(); last && *last != target.id) {
        if (const CudaStream* earlier = stream_in(streams_, *last)) {
            previous = earlier->handle;
        }
    }
    DeviceGuard guard(ordinal_);
    // A plain replay writes its word into the host's copy too: resolving it then copies nothing.
    const bool plain = CudaGraph::plain(injected_codes);
    unsigned long long* host =
        plain && status_host_mapped_ != nullptr ? status_host_mapped_ + op.slot : nullptr;
    const cudaError_t status =
        native.launch(target.handle, previous, status_device_ + op.slot, host,
                      failed_nodes_device_ + op.slot, op.launch_id, injected_codes);
    if (status != cudaSuccess) {
        op.refuse(refusal_of(op.label, status));
    } else {
        op.has_status_word = true;
        op.word_on_host = host != nullptr;
        native.replayed_on(target.id);
    }
}

std::string CudaDevice::failed_kernel(const PendingOp& op) const {
    if (!op.replayed_kernel.empty()) {
        return op.replayed_kernel;  // A replay of one kernel: that kernel, whichever node failed.
    }
    const auto* graph = op.kind == PendingOp::Kind::Replay
                            ? static_cast<const CudaGraph*>(op.keep_alive.get())
                            : nullptr;
    if (graph == nullptr) {
        return op.label;  // A launch: its own kernel.
    }
    // The failed node wrote its place before the replay ended, which its report follows. Only
    // a failed replay asks, so the success path copies nothing.
    std::uint32_t index = 0;
    DeviceGuard guard(ordinal_);
    if (cudaMemcpy(&index, failed_nodes_device_ + op.slot, sizeof index, cudaMemcpyDeviceToHost) !=
        cudaSuccess) {
        (void)cudaGetLastError();
        return op.label;
    }
    const std::string& kernel = graph->kernel_of(index);
    return kernel.empty() ? op.label : kernel;
}

}  // namespace tandem::cuda
