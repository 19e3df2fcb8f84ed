#pragma once

// What a launch passes to its kernel on the GPU, as one by-value kernel parameter: the bound
// resources as raw pointers, the scalar arguments, the launch's status word and the status words
// of the launches that produced its inputs (rule C13, checked on the device).
//
// A status word is 64 bits: the launch id in the high half and a code in the low half. A launch
// never clears its word; it owns it only while the high half holds its id, so slots are reused
// without a memset on the launch path. Plain C++ so host code builds it without nvcc.

#include "tandem/core/kernel.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace tandem::cuda {

// A launch binds at most `max_launch_resources`, of which at most `max_launch_tensor_maps` are
// tensor maps (tandem/core/kernel.hpp): the block below holds that many.
/// Producers' status words a launch checks on the device before it computes; the host checks
/// every producer when it resolves, so a launch with more pending producers stays correct and
/// only computes before the host knows.
inline constexpr std::uint32_t max_checked_producers = 4;
/// Shared memory a TMA launch may stage its tiles in: the default dynamic limit of a block.
inline constexpr std::uint32_t tma_shared_bytes_max = 48 * 1024;
/// Per thread of a TMA launch, after the block's tile slots: the barrier it waits on and the
/// parity of that barrier's next phase.
inline constexpr std::uint32_t tma_barrier_bytes = 16;
/// The code a launch writes when it did not run because a producer failed.
inline constexpr std::uint32_t skipped_code = 0xffffffffu;

/// A tensor map as a kernel addresses it on the GPU without the tensor memory accelerator: the
/// fields of a `TensorMapDescriptor` in fixed arrays.
struct DeviceTensorMap {
    /// Dimensions used, from 1 to 5.
    std::uint32_t rank = 0;
    /// The size of one element.
    std::uint32_t elem_size_bytes = 0;
    /// Elements in each dimension, innermost first.
    std::uint64_t dims[5] = {};
    /// Bytes between neighbours in each dimension but the innermost, innermost first.
    std::uint64_t strides_bytes[4] = {};
    /// The tile's elements in each dimension, innermost first.
    std::uint32_t box[5] = {};
};

/// One bound resource as a raw device pointer and its length.
struct DeviceResource {
    /// The first bound byte, in the launching GPU's address space (a peer's memory at its shared
    /// address).
    std::uint8_t* pointer = nullptr;
    /// The bytes bound.
    std::uint64_t size_bytes = 0;
};

/// The status word of a launch that produced an input, and the id that owns it.
struct ProducerStatus {
    /// The producer's status word.
    const unsigned long long* word = nullptr;
    /// The producer's launch id: the word speaks for it only while its high half holds this id.
    std::uint32_t launch_id = 0;
};

/// Where a launch replayed from a CUDA graph finds its status word, its id and the fault injected
/// for it. A graph's parameters are fixed when it is built, so each replay writes a new ticket
/// into the graph's ticket memory before it launches the graph. The injected codes follow the
/// ticket, one per launch of the graph (`LaunchParams::replay_index`).
struct ReplayTicket {
    /// The status word the replay's launches share.
    unsigned long long* status = nullptr;
    /// The replay's launch id.
    std::uint32_t launch_id = 0;
    /// How many launches the graph holds.
    std::uint32_t launch_count = 0;
    /// Where the replay's first launch to fail writes its place in the graph (`replay_index`),
    /// so that the host names the kernel that failed.
    std::uint32_t* failed_node = nullptr;
};

/// What a launch is to the graph that holds it (`TensorLaunchParams::graph_node`).
enum GraphNode : std::uint32_t {
    /// Launched directly, not a node of a graph.
    not_a_node = 0,
    /// A node of a graph whose replays each write a ticket: it reads its status word, id and
    /// injected code there, and runs only while no earlier launch of the replay failed.
    ticketed_node = 1,
    /// A node of a graph replayed with nothing injected: its status word and id are fixed in its
    /// block, it checks no producer and no ticket, and its wrapper compiles to the kernel alone
    /// with its status word beside it (a graph of tiny kernels runs at the wrapper's speed).
    plain_node = 2,
};

/// A launch's block with room for `Resources` buffers, `Producers` producers checked and `Words`
/// scalar words: `LaunchParams`, which most launches receive, and the smaller
/// `CompactLaunchParams` of graph nodes.
template <std::size_t Resources, std::size_t Producers, std::size_t Words>
struct BasicLaunchParams {
    /// The bound resources, in the order the kernel takes them.
    DeviceResource resources[Resources];
    /// How many of `resources` are bound.
    std::uint32_t resource_count = 0;
    /// The scalar arguments, as 64-bit words.
    std::uint64_t args[Words] = {};
    /// The launch's status word, which a failing kernel sets.
    unsigned long long* status = nullptr;
    /// The launch's id, written to the high half of its status word.
    std::uint32_t launch_id = 0;
    /// A fault injected for this launch: the kernel reports it without computing.
    std::uint32_t injected_code = 0;
    /// The status words of producers this launch checks before it computes.
    ProducerStatus producers[Producers];
    /// How many of `producers` are set.
    std::uint32_t producer_count = 0;
    /// Launches of a CUDA graph: their ticket, which replaces `status`, `launch_id` and
    /// `injected_code`; the launches of one replay share its word, so after a failed one the
    /// rest do not run.
    const ReplayTicket* ticket = nullptr;
    /// Launches of a plain graph (no ticket): where the first of a replay's launches to fail
    /// writes its `replay_index` (beside the graph's status word). Null for a launch that is no
    /// node of a graph.
    std::uint32_t* failed_node = nullptr;
    /// The launch's position in its graph, which picks its injected code from the ticket and
    /// names the kernel when it fails.
    std::uint32_t replay_index = 0;

    /// Whether `block` fits: no more resources, producers or nonzero words than this holds.
    template <std::size_t R, std::size_t P, std::size_t W>
    static bool fits(const BasicLaunchParams<R, P, W>& block) {
        if (block.resource_count > Resources || block.producer_count > Producers) {
            return false;
        }
        for (std::size_t word = Words; word < W; ++word) {
            if (block.args[word] != 0) {
                return false;
            }
        }
        return true;
    }
    /// `block`'s fields, as far as they fit (`fits`).
    template <std::size_t R, std::size_t P, std::size_t W>
    static BasicLaunchParams of(const BasicLaunchParams<R, P, W>& block) {
        BasicLaunchParams small;
        std::copy_n(block.resources, std::min(R, Resources), small.resources);
        std::copy_n(block.args, std::min(W, Words), small.args);
        std::copy_n(block.producers, std::min(P, Producers), small.producers);
        small.resource_count = block.resource_count;
        small.status = block.status;
        small.launch_id = block.launch_id;
        small.injected_code = block.injected_code;
        small.producer_count = block.producer_count;
        small.ticket = block.ticket;
        small.failed_node = block.failed_node;
        small.replay_index = block.replay_index;
        return small;
    }
};

/// What most kernels receive. The block is copied into every launch; tensor maps, which few
/// kernels read, live in the larger block below.
using LaunchParams =
    BasicLaunchParams<max_launch_resources, max_checked_producers, KernelArgs::max_words>;

/// The block of a graph node small enough for it: two buffers, two producers, four scalar words
/// (152 bytes, under half of `LaunchParams`). A node's parameters are read by every run of the
/// graph, and most bind a few buffers.
using CompactLaunchParams = BasicLaunchParams<2, 2, 4>;

/// A tensor map encoded for the GPU's tensor memory accelerator (the driver's `CUtensorMap`,
/// opaque here so that host code builds the block without CUDA headers).
struct alignas(128) EncodedTensorMap {
    /// The driver's encoded map, 128 bytes.
    std::uint64_t opaque[16];  // Left unset until encoded: it is never read unless encoded.
};

/// What kernels that read tensor maps receive, and what the host fills for every launch: the
/// launcher of any other kernel passes only the `LaunchParams` part.
struct TensorLaunchParams : LaunchParams {
    /// The tensor maps, for plain loads and stores.
    DeviceTensorMap tensor_maps[max_launch_tensor_maps];
    /// For each resource that is a tensor map, its index in `tensor_maps`.
    std::uint8_t tensor_map_of[max_launch_resources] = {};
    /// Bytes of dynamic shared memory each thread stages one tile in, when the launch's tensor
    /// maps went to the TMA: all of them encoded (`tma`), with the same shape. Zero otherwise,
    /// and tiles move with plain loads and stores.
    std::uint32_t tma_slot_bytes = 0;
    /// Nonzero for a node of a CUDA graph (`GraphNode`): it takes the compact block when it fits.
    /// A launch enqueued directly takes `LaunchParams`, which measured faster to launch than the
    /// compact block on H200 hosts (about 110 ns a launch, paired in one run), while a graph of
    /// tiny kernels ran faster with the smaller one.
    std::uint32_t graph_node = 0;
    /// Read by the host only: how many of `tensor_maps` the last launch encoded, so that the next
    /// one clears only those (the block is reused from launch to launch).
    std::uint32_t tensor_maps_encoded = 0;
    /// Read by the host only: the driver context current on the launching thread (a
    /// `CUcontext`) where the caller knows it, so that the launcher finds its kernel's function
    /// without asking the driver again; null otherwise.
    void* current_context = nullptr;
    /// The tensor maps encoded for the tensor memory accelerator, when `tma_slot_bytes` is not
    /// zero.
    EncodedTensorMap tma[max_launch_tensor_maps];
};

/// Enqueues one launch on `stream` (a cudaStream_t); returns the cudaError_t of the launch. The
/// kernel receives `params` whole if it reads tensor maps, and its `LaunchParams` part otherwise.
/// Called with a config of no threads (which no launch has: the backend enqueues nothing for
/// one), it launches nothing and loads the kernel's wrappers into the current context instead.
using Launcher = int (*)(const LaunchConfig& config, void* stream,
                         const TensorLaunchParams& params);

}  // namespace tandem::cuda
