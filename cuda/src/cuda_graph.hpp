#pragma once

// A capture window built into a CUDA graph (rule C14 on GPUs): the recorded launches become
// kernel nodes of one executable graph, so a replay is one graph launch instead of one launch per
// kernel. The nodes read their status word, launch id and injected fault from the graph's ticket
// memory, which each replay rewrites first (a graph's parameters are fixed once it is built).
//
// Replays of one graph share that memory, so a replay on another stream first waits for the
// previous replay of the same graph (the device orders them: `launch`'s `previous`); two replays
// write the same write set, so running them at once would be a race in the program anyway.
//
// Reading the ticket costs every node dependent loads before it computes (a replay of 1000
// tiny launches took 1.8 times the same graph without them). So each window is built twice: the
// ticket graph, for replays with a fault injected, and a plain graph whose nodes read nothing
// before they compute: they share a status word the graph owns, under an id of its own. After
// the graph, one tiny kernel copies that word into the replay's status slot and clears it for
// the next replay: one stream operation where a clear before the graph and a copy after it were
// two, the clear delaying the graph's start. (Making that copy a node of the graph, its slot set
// for each replay with `cudaGraphExecKernelNodeSetParams`, cost more: a replay of 1000 nodes then
// took 1.15 times the raw graph, against 1.03, measured side by side, as if an updated graph were
// uploaded again.) A plain replay runs all its nodes even after one failed; its whole write set
// is claimed then, so what they write is never read (C14).
//
// A replay in flight holds its graph (`PendingOp::keep_alive`) until its outcome is known, so the
// graph is never destroyed under a running replay.

#include "launcher.hpp"

#include "tandem/backend/held_bindings.hpp"
#include "tandem/core/ids.hpp"
#include "tandem/core/kernel_resource.hpp"
#include "tandem/core/result.hpp"

#include <cuda_runtime.h>

#include "tandem/core/external_work.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
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
        /// External work recorded in the window: called on the capture stream instead of a
        /// launcher, with the raw pointers and sizes of its bindings (`count` of them).
        ExternalRef external;
        std::array<void*, max_launch_resources> pointers{};
        std::array<std::uint64_t, max_launch_resources> sizes{};
        std::size_t count = 0;
        /// The name of the node's kernel (or external work), as a failure names it.
        std::string kernel;
    };

    /// Builds and instantiates the graphs of `nodes` on GPU `ordinal`, through stream captures
    /// on a stream of its own; a plain replay reports under `plain_id`, and the graph keeps
    /// `held` (the launches' bindings) reserved while it exists. `LaunchRefused` naming the CUDA
    /// error when the driver refuses.
    static Result<std::shared_ptr<CudaGraph>> build(int ordinal, std::span<Node> nodes,
                                                    std::uint32_t plain_id,
                                                    HeldBindings held);
    ~CudaGraph();
    CudaGraph(const CudaGraph&) = delete;
    CudaGraph& operator=(const CudaGraph&) = delete;

    [[nodiscard]] std::size_t node_count() const { return node_count_; }
    /// Whether a node is external work, which reads no ticket: an injected fault on it cannot be
    /// delivered through the graph.
    [[nodiscard]] bool has_external() const { return has_external_; }
    /// The id a plain replay reports under: the replay's launch id when `plain(codes)`.
    [[nodiscard]] std::uint32_t plain_id() const { return plain_id_; }
    /// The kernel of node `index` (its `replay_index`), or an empty name past the last.
    [[nodiscard]] const std::string& kernel_of(std::uint32_t index) const {
        static const std::string none;
        return index < kernels_.size() ? kernels_[index] : none;
    }
    /// The stream of the graph's previous replay, if any.
    [[nodiscard]] std::optional<StreamId> last_stream() const { return last_stream_; }
    /// Whether a replay with `injected_codes` runs the plain graph: nothing is injected.
    [[nodiscard]] static bool plain(std::span<const std::uint32_t> injected_codes) {
        for (std::uint32_t code : injected_codes) {
            if (code != 0) {
                return false;
            }
        }
        return true;
    }

    /// Enqueues one replay on `stream`, after the work so far on `previous` (the stream of the
    /// graph's previous replay, when that was another stream that still exists; null
    /// otherwise). With a fault injected, writes the ticket (status word, launch id, one
    /// injected code per node) and launches the ticket graph; otherwise launches the plain graph
    /// and then the copy of its word into `status` (the replay then reports under `plain_id`).
    /// Returns the CUDA error of the first call that failed, or cudaSuccess.
    /// A plain replay also writes the word into `host_status` (the slot's host copy, as the GPU
    /// reaches it), unless it is null; the ticket graph does not. Either way the place of the
    /// replay's first failing node lands in `failed_node`.
    cudaError_t launch(cudaStream_t stream, cudaStream_t previous, unsigned long long* status,
                       unsigned long long* host_status, std::uint32_t* failed_node,
                       std::uint32_t launch_id, std::span<const std::uint32_t> injected_codes);
    /// Notes that the graph was just replayed on `stream`.
    void replayed_on(StreamId stream) { last_stream_ = stream; }

private:
    CudaGraph(int ordinal, std::size_t node_count) : ordinal_(ordinal), node_count_(node_count) {}

    /// Enqueues the plain graph on `stream`, then the kernel that copies its word into `status`
    /// and clears it.
    cudaError_t launch_plain(cudaStream_t stream, unsigned long long* status,
                             unsigned long long* host_status, std::uint32_t* failed_node);
    /// Writes the ticket and enqueues the ticket graph on `stream`.
    cudaError_t launch_ticketed(cudaStream_t stream, unsigned long long* status,
                                std::uint32_t* failed_node, std::uint32_t launch_id,
                                std::span<const std::uint32_t> injected_codes);

    int ordinal_;
    std::size_t node_count_;
    cudaGraphExec_t exec_ = nullptr;
    cudaGraphExec_t plain_exec_ = nullptr;
    /// Device memory: the plain graph's status word, then the place of its first failing node.
    unsigned long long* word_ = nullptr;
    std::vector<std::string> kernels_;  // Each node's kernel, in node order.
    std::uint32_t plain_id_ = 0;
    bool has_external_ = false;
    HeldBindings held_;
    ReplayTicket* ticket_ = nullptr;  // Device memory: the ticket, then one code per node.
    /// Recorded on the previous replay's stream when a replay comes on another one.
    cudaEvent_t ordered_ = nullptr;
    std::optional<StreamId> last_stream_;
    std::vector<std::uint32_t> staging_;  // The ticket as the host writes it.
};

}  // namespace tandem::cuda
