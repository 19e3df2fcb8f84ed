#pragma once

// What a kernel sees on the GPU: thread indices, scalar arguments, `fail(code)` and views that
// are raw pointers. The same catalog functors the simulator checks run here unchecked, at the
// speed of hand-written CUDA. Atomics are system-scope, so a handoff through memory of another
// GPU is ordered as the design requires (rule P6).

#include "tandem/cuda/launch_params.hpp"
#include "tandem/cuda/tma.cuh"

#include <cuda/atomic>

#include <cstdint>

namespace tandem::cuda {

/// A buffer resource as elements of `T`, a raw device pointer: the same calls as the simulator's
/// checked view, unchecked.
template <typename T>
class CudaView {
public:
    /// The view of `count` elements at `pointer`.
    __device__ CudaView(T* pointer, std::uint64_t count) : pointer_(pointer), count_(count) {}

    /// How many whole elements of `T` the resource holds.
    __device__ std::uint64_t size() const { return count_; }
    /// Element `index`.
    __device__ T load(std::uint64_t index) const { return pointer_[index]; }
    /// Writes element `index`.
    __device__ void store(std::uint64_t index, T value) const { pointer_[index] = value; }
    /// Element `index`, read with acquire order at system scope (another GPU's release is seen).
    __device__ T atomic_load_acquire(std::uint64_t index) const {
        return ::cuda::atomic_ref<T, ::cuda::thread_scope_system>(pointer_[index])
            .load(::cuda::memory_order_acquire);
    }
    /// Writes element `index` with release order at system scope.
    __device__ void atomic_store_release(std::uint64_t index, T value) const {
        ::cuda::atomic_ref<T, ::cuda::thread_scope_system>(pointer_[index])
            .store(value, ::cuda::memory_order_release);
    }
    /// Adds `value` to element `index` atomically at system scope; returns the element before.
    __device__ T atomic_fetch_add(std::uint64_t index, T value) const {
        return ::cuda::atomic_ref<T, ::cuda::thread_scope_system>(pointer_[index]).fetch_add(value);
    }

private:
    T* pointer_;
    std::uint64_t count_;
};

/// A tensor-map resource addressed in tiles, with the same descriptor the simulator checks. When
/// the host encoded the launch's maps for the TMA, tiles move through it; otherwise with plain
/// loads and stores.
template <typename T>
class CudaTiledView {
public:
    /// The tiled view of `resource` through `map`; `tma` is its encoded map when the launch's maps
    /// went to the tensor memory accelerator (null otherwise), with `tma_slot_bytes` per thread.
    __device__ CudaTiledView(const DeviceResource& resource, const DeviceTensorMap& map,
                             const EncodedTensorMap* tma, std::uint32_t tma_slot_bytes)
        : bytes_(resource.pointer), map_(map), tma_(tma), tma_slot_bytes_(tma_slot_bytes) {}

    /// How many tiles cover the tensor, counting the partial tiles at its edges.
    __device__ std::uint64_t tile_count() const {
        std::uint64_t tiles = 1;
        for (std::uint32_t dim = 0; dim < map_.rank; ++dim) {
            tiles *= (map_.dims[dim] + map_.box[dim] - 1) / map_.box[dim];
        }
        return tiles;
    }
    /// Copies tile `tile` (row-major over tiles, innermost dimension fastest) into the same tile of
    /// `target`. Elements past the tensor's edge are skipped.
    __device__ void copy_tile_to(std::uint64_t tile, const CudaTiledView& target) const {
        std::uint64_t origin[5] = {};
        for (std::uint32_t dim = 0; dim < map_.rank; ++dim) {
            const std::uint64_t tiles = (map_.dims[dim] + map_.box[dim] - 1) / map_.box[dim];
            origin[dim] = (tile % tiles) * map_.box[dim];
            tile /= tiles;
        }
        if (tma::available && tma_ != nullptr && target.tma_ != nullptr) {
            // The host encoded both maps with one shape and coordinates below 2^31.
            std::int32_t coords[5] = {};
            std::uint32_t tile_bytes = map_.elem_size_bytes;
            for (std::uint32_t dim = 0; dim < map_.rank; ++dim) {
                coords[dim] = static_cast<std::int32_t>(origin[dim]);
                tile_bytes *= map_.box[dim];
            }
            tma::copy_tile(tma_, target.tma_, map_.rank, coords, tma_slot_bytes_, tile_bytes);
            return;
        }
        copy_tile_by_elements(origin, target);
    }

private:
    __device__ void copy_tile_by_elements(const std::uint64_t* origin,
                                          const CudaTiledView& target) const {
        std::uint64_t offset[5] = {};
        while (true) {
            bool inside = true;
            std::uint64_t from = 0;
            std::uint64_t to = 0;
            for (std::uint32_t dim = 0; dim < map_.rank; ++dim) {
                const std::uint64_t coord = origin[dim] + offset[dim];
                inside = inside && coord < map_.dims[dim];
                from +=
                    dim == 0 ? coord * map_.elem_size_bytes : coord * map_.strides_bytes[dim - 1];
                to += dim == 0 ? coord * target.map_.elem_size_bytes
                               : coord * target.map_.strides_bytes[dim - 1];
            }
            if (inside) {
                for (std::uint32_t byte = 0; byte < map_.elem_size_bytes; ++byte) {
                    target.bytes_[to + byte] = bytes_[from + byte];
                }
            }
            std::uint32_t dim = 0;
            while (dim < map_.rank && ++offset[dim] == map_.box[dim]) {
                offset[dim++] = 0;
            }
            if (dim == map_.rank) {
                return;
            }
        }
    }

    std::uint8_t* bytes_;
    DeviceTensorMap map_;
    const EncodedTensorMap* tma_;
    std::uint32_t tma_slot_bytes_;
};

/// `Params` is `LaunchParams` (or the smaller `CompactLaunchParams` when the launch fits it), or
/// `TensorLaunchParams` for kernels that read tensor maps. `Linear`: the launch has one dimension
/// (its grid and blocks are all in x), which the host knows when it enqueues it; its indices are
/// then one multiply-add, as a hand-written kernel computes them.
template <typename Params, bool Linear = false>
class CudaKernelContext {
public:
    /// The context of a plain graph node: its status word and id are its block's, and it has no
    /// ticket, producer or injected fault.
    __device__ CudaKernelContext(const Params& params, GraphNode /*plain_node*/)
        : params_(params),
          status_(params.status),
          failed_node_(params.failed_node),
          launch_id_(params.launch_id),
          injected_code_(0) {}

    /// The context of the thread running with `params`: a replay's launch takes its status word, id
    /// and injected code from its ticket; a launch whose maps went to the tensor memory accelerator
    /// sets up its barriers (every thread of the block must construct it).
    __device__ explicit CudaKernelContext(const Params& params)
        : params_(params),
          status_(params.status),
          failed_node_(params.failed_node),
          launch_id_(params.launch_id),
          injected_code_(params.injected_code) {
        if (params.ticket != nullptr) {
            status_ = params.ticket->status;
            failed_node_ = params.ticket->failed_node;
            launch_id_ = params.ticket->launch_id;
            injected_code_ =
                reinterpret_cast<const std::uint32_t*>(params.ticket + 1)[params.replay_index];
        }
        if constexpr (sizeof(Params) == sizeof(TensorLaunchParams)) {
            // Every thread of every block constructs the context first thing, so the block-wide
            // wait inside is reached by all of them; `tma_slot_bytes` is the same for all.
            if (params.tma_slot_bytes != 0) {
                tma::init_barriers(params.tma_slot_bytes);
            }
        }
    }

    // The index arithmetic is 32-bit wherever CUDA's limits keep it below 2^32 (a block's
    // threads, at most 1024; a grid's y and z, at most 65535 each), with one widening multiply
    // for the grid's x: a tiny kernel's time is its wrapper's dependent instructions, and a
    // 64-bit multiply is several.

    /// The running thread's index across the grid, from 0 to `thread_count() - 1`.
    __device__ std::uint64_t thread_index() const {
        if constexpr (Linear) {
            return std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
        }
        const std::uint32_t block_yz = blockIdx.y + gridDim.y * blockIdx.z;
        const std::uint64_t block = std::uint64_t{gridDim.x} * block_yz + blockIdx.x;
        const std::uint32_t within =
            threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
        return block * threads_per_block() + within;
    }
    /// How many threads the launch runs.
    __device__ std::uint64_t thread_count() const {
        if constexpr (Linear) {
            return std::uint64_t{gridDim.x} * blockDim.x;
        }
        return std::uint64_t{gridDim.x} * (gridDim.y * gridDim.z) * threads_per_block();
    }
    /// How many threads each block runs (at most 1024).
    __device__ std::uint32_t threads_per_block() const {
        return blockDim.x * blockDim.y * blockDim.z;
    }
    /// Buffer resource `index` (below `LaunchParams::resource_count`) as elements of `T`.
    template <typename T>
    __device__ CudaView<T> buffer(std::size_t index) const {
        if (index >= sizeof(params_.resources) / sizeof(params_.resources[0])) {
            return CudaView<T>(nullptr, 0);  // Not bound, as a resource past the count reads.
        }
        const DeviceResource& resource = params_.resources[index];
        return CudaView<T>(reinterpret_cast<T*>(resource.pointer), resource.size_bytes / sizeof(T));
    }
    /// Tensor-map resource `index`; only for kernels launched with `TensorLaunchParams`.
    template <typename T>
    __device__ CudaTiledView<T> tensor_map(std::size_t index) const {
        static_assert(sizeof(Params) == sizeof(TensorLaunchParams),
                      "this kernel reads tensor maps: list it in the launcher's ReadsTensorMaps");
        const DeviceResource& resource = params_.resources[index];
        const std::uint8_t map = params_.tensor_map_of[index];
        return CudaTiledView<T>(resource, params_.tensor_maps[map],
                                params_.tma_slot_bytes != 0 ? &params_.tma[map] : nullptr,
                                params_.tma_slot_bytes);
    }
    /// Scalar argument `index` (below `KernelArgs::max_words`) as an integer; 0 past the arguments
    /// given.
    __device__ std::uint64_t u64(std::size_t index) const {
        // A small block holds fewer words; it is taken only when the others are zero.
        return index < sizeof(params_.args) / sizeof(params_.args[0]) ? params_.args[index] : 0;
    }
    /// Scalar argument `index` (below `KernelArgs::max_words`) as a double.
    __device__ double f64(std::size_t index) const {
        return __longlong_as_double(static_cast<long long>(u64(index)));
    }

    /// Reports failure `code`; the first code a launch reports is kept.
    __device__ void fail(std::uint32_t code) const { claim_status(code); }
    /// A trap: a sticky error of the GPU, which loses the device (D1).
    __device__ void trap() const { __trap(); }

    /// Waits, polling with acquire order, until element `index` of `view` equals `value`.
    template <typename T>
    __device__ void wait_until_equal(const CudaView<T>& view, std::uint64_t index, T value) const {
        while (view.atomic_load_acquire(index) != value) {
            __nanosleep(100);
        }
    }

    /// Sets the status word to `code` unless this launch already set it.
    __device__ void claim_status(std::uint32_t code) const {
        const unsigned long long mine = (static_cast<unsigned long long>(launch_id_) << 32) | code;
        unsigned long long seen = *status_;
        while ((seen >> 32) != launch_id_) {
            const unsigned long long before = atomicCAS(status_, seen, mine);
            if (before == seen) {
                if (failed_node_ != nullptr) {
                    *failed_node_ = params_.replay_index;  // This launch is the replay's first.
                }
                return;
            }
            seen = before;
        }
    }
    /// Whether a producer of an input failed or was skipped: this launch must not compute.
    __device__ bool producer_failed() const {
        if (params_.ticket != nullptr &&
            (*static_cast<const volatile unsigned long long*>(status_) >> 32) == launch_id_) {
            return true;  // An earlier launch of this replay failed.
        }
        for (std::uint32_t index = 0; index < params_.producer_count; ++index) {
            const ProducerStatus& producer = params_.producers[index];
            const unsigned long long word =
                *static_cast<const volatile unsigned long long*>(producer.word);
            if ((word >> 32) == producer.launch_id) {
                return true;
            }
        }
        return false;
    }

    /// A fault injected for this launch, reported without computing; 0 for none.
    __device__ std::uint32_t injected_code() const { return injected_code_; }

private:
    const Params& params_;
    unsigned long long* status_;
    /// Where a replay's first failing launch writes its place in the graph; null outside one.
    std::uint32_t* failed_node_;
    std::uint32_t launch_id_;
    std::uint32_t injected_code_;
};

}  // namespace tandem::cuda
