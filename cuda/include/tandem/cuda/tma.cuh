#pragma once

// Tiles moved by the GPU's tensor memory accelerator (TMA), for tensor-map resources whose maps
// the host encoded (`TensorLaunchParams::tma`). Device code only; `CudaTiledView` calls it.

#include "tandem/cuda/launch_params.hpp"

#include <cstddef>
#include <cstdint>

namespace tandem::cuda {

/// Moves tiles with the tensor memory accelerator: each thread loads its tile into its own slot
/// of dynamic shared memory (waiting on its own barrier), then stores it through the target's
/// map. One thread, one tile at a time: the same per-thread loop the simulator runs.
namespace tma {

// Bulk tensor copies and transaction barriers exist from compute capability 9.0; a build for an
// older GPU compiles without them and every tile moves by elements.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
/// Whether this build moves tiles with the tensor memory accelerator (compute capability 9.0 and
/// later).
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
/// Whether this build moves tiles with the tensor memory accelerator: not in a build for a GPU
/// older than compute capability 9.0, nor on the host.
inline constexpr bool available = false;
/// Nothing to set up where the accelerator is not used.
__device__ inline void init_barriers(std::uint32_t) {}
/// Never called where the accelerator is not used (`available` is false); moves nothing.
__device__ inline void copy_tile(const EncodedTensorMap*, const EncodedTensorMap*, std::uint32_t,
                                 const std::int32_t*, std::uint32_t, std::uint32_t) {}
#endif

}  // namespace tma

}  // namespace tandem::cuda
