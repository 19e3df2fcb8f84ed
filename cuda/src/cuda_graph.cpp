#include "cuda_graph.hpp"

#include "engine.hpp"

#include <algorithm>
#include <cstring>

namespace tandem::cuda {

namespace {

constexpr std::size_t ticket_words = sizeof(ReplayTicket) / sizeof(std::uint32_t);
static_assert(sizeof(ReplayTicket) % sizeof(std::uint32_t) == 0);

Error refused(const std::string& what, cudaError_t status) {
    return Error::launch_refused(
        "capture", "building the CUDA graph: " + what + " failed: " + cuda_error_text(status));
}

}  // namespace

namespace {

/// Enqueues `node` on `capture`: its launch, or its external work's call. External work that
/// returns an error makes the capture fail, as a refused launch does.
cudaError_t capture_node(CudaGraph::Node& node, cudaStream_t capture) {
    if (!node.external) {
        return static_cast<cudaError_t>(node.launcher(node.config, capture, node.params));
    }
    Status ran = Error::torn_down("it threw");
    try {
        ran = node.external->cuda(DeviceWorkContext{capture,
                                                    std::span(node.pointers.data(), node.count),
                                                    std::span(node.sizes.data(), node.count)});
    } catch (...) {  // `ran` says it threw.
    }
    const cudaError_t left = cudaGetLastError();
    return left != cudaSuccess ? left : (ran ? cudaSuccess : cudaErrorUnknown);
}

/// Captures the launches of `nodes` on a stream of its own and instantiates them into `exec`.
cudaError_t instantiate(std::span<CudaGraph::Node> nodes, cudaGraphExec_t* exec) {
    cudaStream_t capture = nullptr;
    if (cudaError_t status = cudaStreamCreateWithFlags(&capture, cudaStreamNonBlocking);
        status != cudaSuccess) {
        return status;
    }
    // Thread-local mode: other threads' calls are not affected by this capture.
    cudaError_t status = cudaStreamBeginCapture(capture, cudaStreamCaptureModeThreadLocal);
    for (std::size_t index = 0; index < nodes.size() && status == cudaSuccess; ++index) {
        status = capture_node(nodes[index], capture);
    }
    cudaGraph_t recorded = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(capture, &recorded);
    cudaStreamDestroy(capture);
    if (status == cudaSuccess) {
        status = ended;
    }
    if (status == cudaSuccess) {
        status = cudaGraphInstantiate(exec, recorded, 0);
    }
    if (recorded != nullptr) {
        cudaGraphDestroy(recorded);
    }
    return status;
}

}  // namespace

Result<std::shared_ptr<CudaGraph>> CudaGraph::build(int ordinal, std::span<Node> nodes,
                                                    std::uint32_t plain_id,
                                                    HeldBindings held) {
    DeviceGuard guard(ordinal);
    std::shared_ptr<CudaGraph> graph(new CudaGraph(ordinal, nodes.size()));
    graph->plain_id_ = plain_id;
    graph->held_ = std::move(held);
    graph->has_external_ =
        std::any_of(nodes.begin(), nodes.end(), [](const Node& node) { return node.external; });
    const std::size_t ticket_bytes = (ticket_words + nodes.size()) * sizeof(std::uint32_t);
    if (cudaError_t status = cudaMalloc(reinterpret_cast<void**>(&graph->ticket_), ticket_bytes);
        status != cudaSuccess) {
        (void)cudaGetLastError();
        return refused("cudaMalloc of its ticket", status);
    }
    if (cudaError_t status =
            cudaMalloc(reinterpret_cast<void**>(&graph->word_), 2 * sizeof(unsigned long long));
        status != cudaSuccess) {
        (void)cudaGetLastError();
        return refused("cudaMalloc of its status word", status);
    }
    if (cudaError_t status = clear_device_words(graph->word_, 2 * sizeof(unsigned long long));
        status != cudaSuccess) {
        (void)cudaGetLastError();
        return refused("clearing its status word", status);
    }
    if (cudaError_t status = cudaEventCreateWithFlags(&graph->ordered_, cudaEventDisableTiming);
        status != cudaSuccess) {
        return refused("cudaEventCreate", status);
    }
    for (std::size_t index = 0; index < nodes.size(); ++index) {
        graph->kernels_.push_back(nodes[index].kernel);
        nodes[index].params.graph_node = ticketed_node;
        nodes[index].params.ticket = graph->ticket_;
        nodes[index].params.replay_index = static_cast<std::uint32_t>(index);
    }
    cudaError_t status = instantiate(nodes, &graph->exec_);
    for (Node& node : nodes) {
        node.params.graph_node = plain_node;
        node.params.ticket = nullptr;  // Plain: nothing to read before computing.
        node.params.status = graph->word_;
        node.params.failed_node = reinterpret_cast<std::uint32_t*>(graph->word_ + 1);
        node.params.launch_id = plain_id;
        node.params.injected_code = 0;
    }
    if (status == cudaSuccess) {
        status = instantiate(nodes, &graph->plain_exec_);
    }
    if (status != cudaSuccess) {
        (void)cudaGetLastError();
        return refused("the stream capture of " + std::to_string(nodes.size()) + " launches",
                       status);
    }
    graph->staging_.assign(ticket_words + nodes.size(), 0);
    return graph;
}

CudaGraph::~CudaGraph() {
    DeviceGuard guard(ordinal_);
    if (ordered_ != nullptr) {
        cudaEventDestroy(ordered_);
    }
    if (exec_ != nullptr) {
        cudaGraphExecDestroy(exec_);
    }
    if (plain_exec_ != nullptr) {
        cudaGraphExecDestroy(plain_exec_);
    }
    cudaFree(ticket_);
    cudaFree(word_);
}

cudaError_t CudaGraph::launch_plain(cudaStream_t stream, unsigned long long* status,
                                    unsigned long long* host_status, std::uint32_t* failed_node) {
    cudaError_t result = cudaGraphLaunch(plain_exec_, stream);
    if (result == cudaSuccess) {
        void* arguments[] = {&word_, &status, &host_status, &failed_node};
        result = cudaLaunchKernel(publish_replay_kernel(), dim3(1), dim3(1), arguments, 0, stream);
    }
    return result;
}

cudaError_t CudaGraph::launch(cudaStream_t stream, cudaStream_t previous,
                              unsigned long long* status, unsigned long long* host_status,
                              std::uint32_t* failed_node, std::uint32_t launch_id,
                              std::span<const std::uint32_t> injected_codes) {
    cudaError_t result = cudaSuccess;
    if (previous != nullptr) {
        // After everything on the previous replay's stream so far: that replay among it.
        result = cudaEventRecord(ordered_, previous);
        if (result == cudaSuccess) {
            result = cudaStreamWaitEvent(stream, ordered_, 0);
        }
    }
    if (result == cudaSuccess && plain(injected_codes)) {
        result = launch_plain(stream, status, host_status, failed_node);
    } else if (result == cudaSuccess) {
        result = launch_ticketed(stream, status, failed_node, launch_id, injected_codes);
    }
    if (result != cudaSuccess) {
        (void)cudaGetLastError();
    }
    return result;
}

cudaError_t CudaGraph::launch_ticketed(cudaStream_t stream, unsigned long long* status,
                                       std::uint32_t* failed_node, std::uint32_t launch_id,
                                       std::span<const std::uint32_t> injected_codes) {
    const ReplayTicket ticket{status, launch_id, static_cast<std::uint32_t>(node_count_),
                              failed_node};
    std::memcpy(staging_.data(), &ticket, sizeof ticket);
    for (std::size_t index = 0; index < node_count_; ++index) {
        staging_[ticket_words + index] = index < injected_codes.size() ? injected_codes[index] : 0;
    }
    // From pageable memory, the copy takes the bytes before it returns: the staging buffer is
    // free for the next replay at once.
    cudaError_t result =
        cudaMemcpyAsync(ticket_, staging_.data(), staging_.size() * sizeof(std::uint32_t),
                        cudaMemcpyHostToDevice, stream);
    if (result == cudaSuccess) {
        result = cudaGraphLaunch(exec_, stream);
    }
    return result;
}

}  // namespace tandem::cuda
