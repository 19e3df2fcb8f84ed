#pragma once

// NCCL, loaded at run time. NCCL is on the GPU machines but is not a Debian package, so the build
// and CI machines lack it: tandem links nothing of it and opens `libnccl.so.2` (or the library
// `TANDEM_NCCL_LIBRARY` names) with `dlopen` the first time something asks, once per process.
// What the load found is a value (`NcclLoad`): the collective layer takes its entry points from
// it, and `tandem doctor` prints it, so both give the same answer for the same machine.
//
// The loader needs neither the CUDA toolkit nor a GPU, only the dynamic loader: it is built on
// every machine, also where the CUDA backend is not, and the tool reports NCCL there too.
//
// Cost: one `dlopen` and about twenty `dlsym` calls, on first use only; a library that loaded is
// never closed, since NCCL keeps threads and handlers that would outlive an unload.

#include "nccl_api.hpp"

#include <optional>
#include <string>
#include <vector>

namespace tandem::cuda {

/// The library `dlopen` is given when `TANDEM_NCCL_LIBRARY` is unset or empty: found through the
/// dynamic loader's search path, as a program linked against NCCL would find it.
inline constexpr const char* nccl_default_library = "libnccl.so.2";

/// The library to load: `TANDEM_NCCL_LIBRARY` where it is set and not empty (a path, or a name
/// for the loader's search path), `nccl_default_library` otherwise.
std::string nccl_library_name();

/// An NCCL version, decoded from the code `ncclGetVersion` returns.
struct NcclVersion {
    int major = 0;  ///< 2 for every NCCL 2.x.
    int minor = 0;  ///< 28 for 2.28.5.
    int patch = 0;  ///< 5 for 2.28.5.
    int code = 0;   ///< The code as NCCL gave it: 22805 for 2.28.5, 2804 for 2.8.4.

    /// "2.28.5".
    std::string text() const;
};

/// Decodes a version code by NCCL's rule: from 2.9 on a code is major*10000 + minor*100 + patch
/// (22805 is 2.28.5); before, it was major*1000 + minor*100 + patch (2804 is 2.8.4), so a code
/// below 10000 is of the older form. A negative code decodes to zeros with the code kept.
NcclVersion decode_nccl_version(int code);

/// The entry points tandem calls. Every required one is non-null in a usable load, and the
/// optional ones where the loaded NCCL has them; all are null in a load that is not usable.
struct NcclEntryPoints {
    nccl::GetVersionFunction get_version = nullptr;                  ///< ncclGetVersion
    nccl::GetUniqueIdFunction get_unique_id = nullptr;               ///< ncclGetUniqueId
    nccl::CommInitRankFunction comm_init_rank = nullptr;             ///< ncclCommInitRank
    nccl::CommEndFunction comm_destroy = nullptr;                    ///< ncclCommDestroy
    nccl::CommEndFunction comm_abort = nullptr;                      ///< ncclCommAbort
    nccl::CommGetAsyncErrorFunction comm_get_async_error = nullptr;  ///< ncclCommGetAsyncError
    nccl::AllReduceFunction all_reduce = nullptr;                    ///< ncclAllReduce
    nccl::BroadcastFunction broadcast = nullptr;                     ///< ncclBroadcast
    nccl::AllGatherFunction all_gather = nullptr;                    ///< ncclAllGather
    nccl::ReduceScatterFunction reduce_scatter = nullptr;            ///< ncclReduceScatter
    nccl::SendFunction send = nullptr;                               ///< ncclSend
    nccl::ReceiveFunction receive = nullptr;                         ///< ncclRecv
    nccl::GroupFunction group_start = nullptr;                       ///< ncclGroupStart
    nccl::GroupFunction group_end = nullptr;                         ///< ncclGroupEnd
    nccl::GetErrorStringFunction get_error_string = nullptr;         ///< ncclGetErrorString
    /// ncclCommInitRankConfig (optional).
    nccl::CommInitRankConfigFunction comm_init_rank_config = nullptr;
    nccl::CommRevokeFunction comm_revoke = nullptr;  ///< ncclCommRevoke (optional, newer NCCL)
    nccl::CommShrinkFunction comm_shrink = nullptr;  ///< ncclCommShrink (optional, 2.27 on)
};

/// What loading NCCL found.
struct NcclLoad {
    /// The name or path given to `dlopen`.
    std::string library;
    /// Whether the library opened (it may still lack entry points).
    bool opened = false;
    /// Whether it opened, has every required entry point and told its version: collectives
    /// may use `entry_points`.
    bool usable = false;
    /// The file the loader opened, once it opened (a name on the search path becomes a path).
    std::string path;
    /// The version, once `ncclGetVersion` answered.
    std::optional<NcclVersion> version;
    /// The required entry points the library lacks, in the order tandem looks them up.
    std::vector<std::string> missing;
    /// Why the load is not usable: the loader's message when the library did not open, the
    /// first missing entry point, or a failed `ncclGetVersion`. Empty when usable.
    std::string problem;
    /// The entry points found; none when the load is not usable (the library is closed again).
    NcclEntryPoints entry_points;

    /// Whether the optional ncclCommInitRankConfig was found.
    bool has_comm_init_rank_config() const { return entry_points.comm_init_rank_config != nullptr; }
    /// Whether the optional ncclCommRevoke was found.
    bool has_comm_revoke() const { return entry_points.comm_revoke != nullptr; }
    /// Whether the optional ncclCommShrink was found.
    bool has_comm_shrink() const { return entry_points.comm_shrink != nullptr; }
};

/// NCCL for this process: `load_nccl(nccl_library_name())` on the first call, from any thread;
/// every later call returns the same load, whatever the environment says by then.
const NcclLoad& nccl_library();

/// Loads `library` now, bypassing the process's load: for tests and for `nccl_library`. A
/// library that opens but is not usable is closed again.
NcclLoad load_nccl(const std::string& library);

}  // namespace tandem::cuda
