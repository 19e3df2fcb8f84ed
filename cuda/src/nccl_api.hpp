#pragma once

// NCCL's C interface as tandem calls it: the handful of types and entry points a collective layer
// needs, declared here from NCCL's documented ABI rather than taken from its header, because the
// build and CI machines have no NCCL (it is not a Debian package) and the library is loaded at run
// time (nccl_library.hpp). Nothing here needs the CUDA toolkit either: a stream crosses as the
// pointer it is.
//
// The ABI facts these declarations rest on, stable across NCCL 2.x: a communicator is a pointer
// to an opaque struct; a unique id is 128 bytes passed by value; results, data types and
// reduction operators are C enums (int-sized) with the values below; every entry point returns a
// result but the error string. Only the values tandem uses are named.

#include <cstddef>

namespace tandem::cuda::nccl {

/// NCCL's communicator (`ncclComm_t`): opaque, created and destroyed by NCCL only.
struct OpaqueCommunicator;
/// A communicator handle as NCCL's entry points take it.
using Communicator = OpaqueCommunicator*;

/// The bytes of a unique id (`NCCL_UNIQUE_ID_BYTES`).
inline constexpr std::size_t unique_id_bytes = 128;

/// What one rank creates (`ncclGetUniqueId`) and every rank passes, by value, to initialise one
/// communicator (`ncclUniqueId`). Its bytes mean nothing to tandem; they travel between ranks.
struct UniqueId {
    /// NCCL's bytes, copied as they are.
    char internal[unique_id_bytes];
};
static_assert(sizeof(UniqueId) == unique_id_bytes, "NCCL passes a unique id as 128 bytes");

/// NCCL's per-communicator options (`ncclConfig_t`). Opaque here: its layout grows with NCCL's
/// versions, and tandem passes none yet (a null config means NCCL's defaults).
struct Config;

/// A CUDA stream as NCCL takes it (`cudaStream_t` is a pointer to an opaque struct).
using Stream = void*;

/// The result of an NCCL call (`ncclResult_t`).
enum class Result : int {
    success = 0,               ///< Done (or, for a non-blocking communicator, started).
    unhandled_cuda_error = 1,  ///< A CUDA call inside NCCL failed.
    system_error = 2,          ///< A system call failed (a socket, memory, a file).
    internal_error = 3,        ///< NCCL's own bug, or memory corrupted under it.
    invalid_argument = 4,      ///< A bad argument (a null pointer, a rank out of range).
    invalid_usage = 5,         ///< Calls in the wrong order, or an aborted communicator used.
    remote_error = 6,          ///< Another rank (or the network) failed.
    in_progress = 7,           ///< A non-blocking communicator's operation is not done yet.
};

/// An element type of a collective (`ncclDataType_t`), for those tandem reduces.
enum class DataType : int {
    int8 = 0,      ///< `int8_t`.
    uint8 = 1,     ///< `uint8_t`.
    int32 = 2,     ///< `int32_t`.
    uint32 = 3,    ///< `uint32_t`.
    int64 = 4,     ///< `int64_t`.
    uint64 = 5,    ///< `uint64_t`.
    float16 = 6,   ///< IEEE half precision.
    float32 = 7,   ///< `float`.
    float64 = 8,   ///< `double`.
    bfloat16 = 9,  ///< bfloat16.
};

/// A reduction of a collective (`ncclRedOp_t`), for the built-in ones.
enum class ReduceOp : int {
    sum = 0,      ///< Sum.
    product = 1,  ///< Product.
    max = 2,      ///< Maximum.
    min = 3,      ///< Minimum.
    average = 4,  ///< Sum divided by the rank count.
};

// The entry points, as function pointer types. NCCL exports them with C linkage; on the ABIs
// tandem runs on (x86-64 and AArch64 Linux) a C function is called through such a pointer alike.

/// `ncclGetVersion(int*)`: the library's version code (see decode_nccl_version).
using GetVersionFunction = Result (*)(int* version);
/// `ncclGetUniqueId(ncclUniqueId*)`.
using GetUniqueIdFunction = Result (*)(UniqueId* unique_id);
/// `ncclCommInitRank(comm*, nranks, id, rank)`.
using CommInitRankFunction = Result (*)(Communicator* communicator, int rank_count,
                                        UniqueId unique_id, int rank);
/// `ncclCommInitRankConfig(comm*, nranks, id, rank, config*)` (not in the oldest 2.x).
using CommInitRankConfigFunction = Result (*)(Communicator* communicator, int rank_count,
                                              UniqueId unique_id, int rank, Config* config);
/// `ncclCommDestroy(comm)` and `ncclCommAbort(comm)`.
using CommEndFunction = Result (*)(Communicator communicator);
/// `ncclCommGetAsyncError(comm, ncclResult_t*)`.
using CommGetAsyncErrorFunction = Result (*)(Communicator communicator, Result* async_error);
/// `ncclAllReduce(send, recv, count, type, op, comm, stream)`.
using AllReduceFunction = Result (*)(const void* send, void* receive, std::size_t count,
                                     DataType type, ReduceOp op, Communicator communicator,
                                     Stream stream);
/// `ncclBroadcast(send, recv, count, type, root, comm, stream)`.
using BroadcastFunction = Result (*)(const void* send, void* receive, std::size_t count,
                                     DataType type, int root, Communicator communicator,
                                     Stream stream);
/// `ncclAllGather(send, recv, sendcount, type, comm, stream)`.
using AllGatherFunction = Result (*)(const void* send, void* receive, std::size_t send_count,
                                     DataType type, Communicator communicator, Stream stream);
/// `ncclReduceScatter(send, recv, recvcount, type, op, comm, stream)`.
using ReduceScatterFunction = Result (*)(const void* send, void* receive, std::size_t receive_count,
                                         DataType type, ReduceOp op, Communicator communicator,
                                         Stream stream);
/// `ncclSend(send, count, type, peer, comm, stream)`.
using SendFunction = Result (*)(const void* send, std::size_t count, DataType type, int peer,
                                Communicator communicator, Stream stream);
/// `ncclRecv(recv, count, type, peer, comm, stream)`.
using ReceiveFunction = Result (*)(void* receive, std::size_t count, DataType type, int peer,
                                   Communicator communicator, Stream stream);
/// `ncclGroupStart()` and `ncclGroupEnd()`.
using GroupFunction = Result (*)();
/// `ncclGetErrorString(result)`: a static string, never null.
using GetErrorStringFunction = const char* (*)(Result result);
/// `ncclCommRevoke(comm, flags)` (newer NCCL only): stops the communicator's work so survivors
/// can shrink it; flags 0.
using CommRevokeFunction = Result (*)(Communicator communicator, int revoke_flags);
/// `ncclCommShrink(comm, excluded*, excluded_count, newcomm*, config*, flags)` (NCCL 2.27 and
/// later): a communicator of the ranks not excluded.
using CommShrinkFunction = Result (*)(Communicator communicator, int* excluded_ranks,
                                      int excluded_count, Communicator* shrunk, Config* config,
                                      int shrink_flags);

}  // namespace tandem::cuda::nccl
