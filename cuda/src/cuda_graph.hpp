#pragma once

// A capture window built into a CUDA graph (rule C14 on GPUs): the recorded launches become
// kernel nodes of one executable graph, so a replay is one graph launch instead of one launch per
// kernel. The nodes read their status word, launch id and injected fault from the graph's ticket
// memory, which each replay rewrites first (a graph's parameters are fixed once it is built).
//
// Replays of one graph share that memory, so a replay on another stream first waits for the
// previous replay of the same graph; two replays write the same write set, so running them at
// once would be a race in the program anyway.

#include "launcher.hpp"

#include "tandem/core/result.hpp"

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace tandem::cuda {

class CudaGraph {
public:
    /// One kernel node: the launcher of its kernel, its configuration and its parameters, whose
    /// `ticket` and `replay_index` the builder sets.
    struct Node {
        Launcher launcher;
        LaunchConfig config;
        TensorLaunchParams params;
    };

    /// Builds and instantiates the graph of `nodes` on GPU `ordinal`, through a stream capture on
    /// a stream of its own. `LaunchRefused` naming the CUDA error when the driver refuses.
    static Result<std::shared_ptr<CudaGraph>> build(int ordinal, std::span<Node> nodes);
    ~CudaGraph();
    CudaGraph(const CudaGraph&) = delete;
    CudaGraph& operator=(const CudaGraph&) = delete;

    [[nodiscard]] std::size_t node_count() const { return node_count_; }

    /// Enqueues one replay on `stream`: writes the ticket (status word, launch id, one injected
    /// code per node), then launches the graph. Returns the CUDA error of the first call that
    /// failed, or cudaSuccess.
    cudaError_t launch(cudaStream_t stream, unsigned long long* status, std::uint32_t launch_id,
                       std::span<const std::uint32_t> injected_codes);

private:
    CudaGraph(int ordinal, std::size_t node_count) : ordinal_(ordinal), node_count_(node_count) {}

    int ordinal_;
    std::size_t node_count_;
    cudaGraphExec_t exec_ = nullptr;
    ReplayTicket* ticket_ = nullptr;  // Device memory: the ticket, then one code per node.
    cudaEvent_t replayed_ = nullptr;  // Recorded after each replay.
    cudaStream_t last_stream_ = nullptr;
    std::vector<std::uint32_t> staging_;  // The ticket as the host writes it.
};

}  // namespace tandem::cuda
