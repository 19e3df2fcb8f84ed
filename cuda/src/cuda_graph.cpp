#include "cuda_graph.hpp"

#include "engine.hpp"

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

Result<std::shared_ptr<CudaGraph>> CudaGraph::build(int ordinal, std::span<Node> nodes) {
    DeviceGuard guard(ordinal);
    std::shared_ptr<CudaGraph> graph(new CudaGraph(ordinal, nodes.size()));
    const std::size_t ticket_bytes = (ticket_words + nodes.size()) * sizeof(std::uint32_t);
    if (cudaError_t status = cudaMalloc(reinterpret_cast<void**>(&graph->ticket_), ticket_bytes);
        status != cudaSuccess) {
        (void)cudaGetLastError();
        return refused("cudaMalloc of its ticket", status);
    }
    if (cudaError_t status = cudaEventCreateWithFlags(&graph->replayed_, cudaEventDisableTiming);
        status != cudaSuccess) {
        return refused("cudaEventCreate", status);
    }
    cudaStream_t capture = nullptr;
    if (cudaError_t status = cudaStreamCreateWithFlags(&capture, cudaStreamNonBlocking);
        status != cudaSuccess) {
        return refused("cudaStreamCreate", status);
    }
    // Thread-local mode: other threads' calls are not affected by this capture.
    cudaError_t status = cudaStreamBeginCapture(capture, cudaStreamCaptureModeThreadLocal);
    for (std::size_t index = 0; index < nodes.size() && status == cudaSuccess; ++index) {
        nodes[index].params.ticket = graph->ticket_;
        nodes[index].params.replay_index = static_cast<std::uint32_t>(index);
        status = static_cast<cudaError_t>(
            nodes[index].launcher(nodes[index].config, capture, nodes[index].params));
    }
    cudaGraph_t recorded = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(capture, &recorded);
    cudaStreamDestroy(capture);
    if (status == cudaSuccess) {
        status = ended;
    }
    if (status == cudaSuccess) {
        status = cudaGraphInstantiate(&graph->exec_, recorded, 0);
    }
    if (recorded != nullptr) {
        cudaGraphDestroy(recorded);
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
    if (replayed_ != nullptr) {
        cudaEventSynchronize(replayed_);  // A replay still running reads the ticket.
        cudaEventDestroy(replayed_);
    }
    if (exec_ != nullptr) {
        cudaGraphExecDestroy(exec_);
    }
    cudaFree(ticket_);
}

cudaError_t CudaGraph::launch(cudaStream_t stream, unsigned long long* status,
                              std::uint32_t launch_id,
                              std::span<const std::uint32_t> injected_codes) {
    const ReplayTicket ticket{status, launch_id, static_cast<std::uint32_t>(node_count_)};
    std::memcpy(staging_.data(), &ticket, sizeof ticket);
    for (std::size_t index = 0; index < node_count_; ++index) {
        staging_[ticket_words + index] = index < injected_codes.size() ? injected_codes[index] : 0;
    }
    cudaError_t result = cudaSuccess;
    if (last_stream_ != nullptr && last_stream_ != stream) {
        result = cudaStreamWaitEvent(stream, replayed_, 0);
    }
    // From pageable memory, the copy takes the bytes before it returns: the staging buffer is
    // free for the next replay at once.
    if (result == cudaSuccess) {
        result = cudaMemcpyAsync(ticket_, staging_.data(), staging_.size() * sizeof(std::uint32_t),
                                 cudaMemcpyHostToDevice, stream);
    }
    if (result == cudaSuccess) {
        result = cudaGraphLaunch(exec_, stream);
    }
    if (result == cudaSuccess) {
        result = cudaEventRecord(replayed_, stream);
        last_stream_ = stream;
    }
    if (result != cudaSuccess) {
        (void)cudaGetLastError();
    }
    return result;
}

}  // namespace tandem::cuda
