#pragma once

// What a kernel sees on the GPU: thread indices, scalar arguments, `fail(code)` and views that
// are raw pointers. The same catalog functors the simulator checks run here unchecked, at the
// speed of hand-written CUDA. Atomics are system-scope, so a handoff through memory of another
// GPU is ordered as the design requires (rule P6).

#include "tandem/cuda/launch_params.hpp"

#include <cuda/atomic>

#include <cstdint>

namespace tandem::cuda {

template <typename T>
class CudaView {
public:
    __device__ CudaView(T* pointer, std::uint64_t count) : pointer_(pointer), count_(count) {}

    __device__ std::uint64_t size() const { return count_; }
    __device__ T load(std::uint64_t index) const { return pointer_[index]; }
    __device__ void store(std::uint64_t index, T value) const { pointer_[index] = value; }
    __device__ T atomic_load_acquire(std::uint64_t index) const {
        return ::cuda::atomic_ref<T, ::cuda::thread_scope_system>(pointer_[index])
            .load(::cuda::memory_order_acquire);
    }
    __device__ void atomic_store_release(std::uint64_t index, T value) const {
        ::cuda::atomic_ref<T, ::cuda::thread_scope_system>(pointer_[index])
            .store(value, ::cuda::memory_order_release);
    }
    __device__ T atomic_fetch_add(std::uint64_t index, T value) const {
        return ::cuda::atomic_ref<T, ::cuda::thread_scope_system>(pointer_[index]).fetch_add(value);
    }

private:
    T* pointer_;
    std::uint64_t count_;
};

/// Moves tiles with the tensor memory accelerator: each thread loads its tile into its own slot
/// of dynamic shared memory (waiting on its own barrier), then stores it through the target's
/// map. One thread, one tile at a time: the same per-thread loop the simulator runs.
namespace tma {

// Bulk tensor copies and transaction barriers exist from compute capability 9.0; a build for an
// older GPU compiles without them and every tile moves by elements.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
inline constexpr bool available = true;

__device__ inline std::uint32_t shared_address(const void* pointer) {
    return static_cast<std::uint32_t>(__cvta_generic_to_shared(pointer));
}

__device__ inline void load(const EncodedTensorMap* map, std::uint32_t rank, const std::int32_t* c,
                            std::uint32_t slot, std::uint32_t barrier) {
    const auto descriptor = reinterpret_cast<std::uint64_t>(map);
    switch (rank) {
        case 1:
            asm volatile(
                "cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes"
                " [%0], [%1, {%2}], [%3];" ::"r"(slot), "l"(descriptor), "r"(c[0]), "r"(barrier)
                : "memory");
            break;
        case 2:
            asm volatile(
                "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                " [%0], [%1, {%2, %3}], [%4];" ::"r"(slot), "l"(descriptor), "r"(c[0]), "r"(c[1]),
                "r"(barrier)
                : "memory");
            break;
        case 3:
            asm volatile(
                "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
                " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(slot), "l"(descriptor), "r"(c[0]),
                "r"(c[1]), "r"(c[2]), "r"(barrier)
                : "memory");
            break;
        case 4:
            asm volatile(
                "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
                " [%0], [%1, {%2, %3, %4, %5}], [%6];" ::"r"(slot), "l"(descriptor), "r"(c[0]),
                "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(barrier)
                : "memory");
            break;
        default:
            asm volatile(
                "cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes"
                " [%0], [%1, {%2, %3, %4, %5, %6}], [%7];" ::"r"(slot), "l"(descriptor),
                "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]), "r"(barrier)
                : "memory");
            break;
    }
}

__device__ inline void store(const EncodedTensorMap* map, std::uint32_t rank,
                             const std::int32_t* c, std::uint32_t slot) {
    const auto descriptor = reinterpret_cast<std::uint64_t>(map);
    switch (rank) {
        case 1:
            asm volatile("cp.async.bulk.tensor.1d.global.shared::cta.bulk_group [%0, {%2}], [%1];" ::
                             "l"(descriptor), "r"(slot), "r"(c[0])
                         : "memory");
            break;
        case 2:
            asm volatile(
                "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"(
                    descriptor),
                "r"(slot), "r"(c[0]), "r"(c[1])
                : "memory");
            break;
        case 3:
            asm volatile(
                "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];" ::
                    "l"(descriptor),
                "r"(slot), "r"(c[0]), "r"(c[1]), "r"(c[2])
                : "memory");
            break;
        case 4:
            asm volatile(
                "cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], "
                "[%1];" ::"l"(descriptor),
                "r"(slot), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3])
                : "memory");
            break;
        default:
            asm volatile(
                "cp.async.bulk.tensor.5d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5, %6}], "
                "[%1];" ::"l"(descriptor),
                "r"(slot), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4])
                : "memory");
            break;
    }
}

/// A thread's place in a TMA launch's dynamic shared memory: its tile slot, then, after every
/// slot of the block, its barrier and the parity of the barrier's next phase.
struct Staging {
    std::uint32_t slot;
    std::uint32_t barrier;
    std::uint32_t* phase;
};

__device__ inline Staging staging_of(std::uint32_t thread, std::uint32_t slot_bytes) {
    extern __shared__ __align__(128) unsigned char staging[];
    const std::uint32_t threads = blockDim.x * blockDim.y * blockDim.z;
    unsigned char* barrier =
        staging + std::size_t{threads} * slot_bytes + std::size_t{thread} * tma_barrier_bytes;
    return Staging{shared_address(staging + std::size_t{thread} * slot_bytes),
                   shared_address(barrier), reinterpret_cast<std::uint32_t*>(barrier + 8)};
}

/// Sets up every thread's barrier, once per block, before any thread copies: one thread
/// initialises them all and the block waits for it. Called by every thread of the block.
__device__ inline void init_barriers(std::uint32_t slot_bytes) {
    const std::uint32_t threads = blockDim.x * blockDim.y * blockDim.z;
    if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
        for (std::uint32_t thread = 0; thread < threads; ++thread) {
            const Staging place = staging_of(thread, slot_bytes);
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(place.barrier) : "memory");
            *place.phase = 0;
        }
        // The TMA unit completes the barriers: make their initialisation visible to it.
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();
}

/// Copies the tile at `coords` from `from` to `to` through this thread's slot.
__device__ inline void copy_tile(const EncodedTensorMap* from, const EncodedTensorMap* to,
                                 std::uint32_t rank, const std::int32_t* coords,
                                 std::uint32_t slot_bytes, std::uint32_t tile_bytes) {
    const std::uint32_t thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const Staging place = staging_of(thread, slot_bytes);
    const std::uint32_t phase = *place.phase;
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(place.barrier),
                 "r"(tile_bytes)
                 : "memory");
    load(from, rank, coords, place.slot, place.barrier);
    std::uint32_t done = 0;
    while (done == 0) {
        asm volatile(
            "{\n .reg .pred complete;\n"
            " mbarrier.try_wait.parity.shared::cta.b64 complete, [%1], %2;\n"
            " selp.u32 %0, 1, 0, complete;\n}"
            : "=r"(done)
            : "r"(place.barrier), "r"(phase)
            : "memory");
    }
    *place.phase = phase ^ 1;
    store(to, rank, coords, place.slot);
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    // The slot is reused for the next tile and the launch's outcome follows its last store:
    // wait until the store has written global memory.
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

#else
inline constexpr bool available = false;
__device__ inline void init_barriers(std::uint32_t) {}
__device__ inline void copy_tile(const EncodedTensorMap*, const EncodedTensorMap*, std::uint32_t,
                                 const std::int32_t*, std::uint32_t, std::uint32_t) {}
#endif

}  // namespace tma

/// A tensor-map resource addressed in tiles, with the same descriptor the simulator checks. When
/// the host encoded the launch's maps for the TMA, tiles move through it; otherwise with plain
/// loads and stores.
template <typename T>
class CudaTiledView {
public:
    __device__ CudaTiledView(const DeviceResource& resource, const DeviceTensorMap& map,
                             const EncodedTensorMap* tma, std::uint32_t tma_slot_bytes)
        : bytes_(resource.pointer), map_(map), tma_(tma), tma_slot_bytes_(tma_slot_bytes) {}

    __device__ std::uint64_t tile_count() const {
        std::uint64_t tiles = 1;
        for (std::uint32_t dim = 0; dim < map_.rank; ++dim) {
            tiles *= (map_.dims[dim] + map_.box[dim] - 1) / map_.box[dim];
        }
        return tiles;
    }
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
                from += dim == 0 ? coord * map_.elem_size_bytes : coord * map_.strides_bytes[dim - 1];
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

/// `Params` is `LaunchParams`, or `TensorLaunchParams` for kernels that read tensor maps.
template <typename Params>
class CudaKernelContext {
public:
    __device__ explicit CudaKernelContext(const Params& params)
        : params_(params),
          status_(params.status),
          launch_id_(params.launch_id),
          injected_code_(params.injected_code) {
        if (params.ticket != nullptr) {
            status_ = params.ticket->status;
            launch_id_ = params.ticket->launch_id;
            injected_code_ = reinterpret_cast<const std::uint32_t*>(params.ticket + 1)[params.replay_index];
        }
        if constexpr (sizeof(Params) == sizeof(TensorLaunchParams)) {
            // Every thread of every block constructs the context first thing, so the block-wide
            // wait inside is reached by all of them; `tma_slot_bytes` is the same for all.
            if (params.tma_slot_bytes != 0) {
                tma::init_barriers(params.tma_slot_bytes);
            }
        }
    }

    __device__ std::uint64_t thread_index() const {
        const std::uint64_t block = blockIdx.x + std::uint64_t{gridDim.x} *
                                                     (blockIdx.y + std::uint64_t{gridDim.y} * blockIdx.z);
        const std::uint64_t within = threadIdx.x + std::uint64_t{blockDim.x} *
                                                       (threadIdx.y + std::uint64_t{blockDim.y} * threadIdx.z);
        return block * (std::uint64_t{blockDim.x} * blockDim.y * blockDim.z) + within;
    }
    __device__ std::uint64_t thread_count() const {
        return std::uint64_t{gridDim.x} * gridDim.y * gridDim.z * blockDim.x * blockDim.y *
               blockDim.z;
    }
    template <typename T>
    __device__ CudaView<T> buffer(std::size_t index) const {
        const DeviceResource& resource = params_.resources[index];
        return CudaView<T>(reinterpret_cast<T*>(resource.pointer), resource.size_bytes / sizeof(T));
    }
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
    __device__ std::uint64_t u64(std::size_t index) const { return params_.args[index]; }
    __device__ double f64(std::size_t index) const {
        return __longlong_as_double(static_cast<long long>(params_.args[index]));
    }

    /// Reports failure `code`; the first code a launch reports is kept.
    __device__ void fail(std::uint32_t code) const { claim_status(code); }

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
            const unsigned long long word = *static_cast<const volatile unsigned long long*>(producer.word);
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
    std::uint32_t launch_id_;
    std::uint32_t injected_code_;
};

}  // namespace tandem::cuda
