#include "nccl_library.hpp"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <string>

namespace tandem::cuda {
namespace {

/// Looks `name` up in `handle` into `slot`; false when the library does not export it.
template <typename Function>
bool resolve(void* handle, const char* name, Function& slot) {
    slot = reinterpret_cast<Function>(::dlsym(handle, name));
    return slot != nullptr;
}

/// Resolves every required entry point, recording each one missing in `load.missing` in the
/// order below (the order a person checks them in: the version first).
void resolve_required(void* handle, NcclLoad& load) {
    NcclEntryPoints& entry = load.entry_points;
    const auto need = [&](const char* name, auto& slot) {
        if (!resolve(handle, name, slot)) {
            load.missing.emplace_back(name);
        }
    };
    need("ncclGetVersion", entry.get_version);
    need("ncclGetErrorString", entry.get_error_string);
    need("ncclGetUniqueId", entry.get_unique_id);
    need("ncclCommInitRank", entry.comm_init_rank);
    need("ncclCommDestroy", entry.comm_destroy);
    need("ncclCommAbort", entry.comm_abort);
    need("ncclCommGetAsyncError", entry.comm_get_async_error);
    need("ncclAllReduce", entry.all_reduce);
    need("ncclBroadcast", entry.broadcast);
    need("ncclAllGather", entry.all_gather);
    need("ncclReduceScatter", entry.reduce_scatter);
    need("ncclSend", entry.send);
    need("ncclRecv", entry.receive);
    need("ncclGroupStart", entry.group_start);
    need("ncclGroupEnd", entry.group_end);
}

/// Resolves the entry points that older NCCL lacks; a missing one leaves its slot null.
void resolve_optional(void* handle, NcclEntryPoints& entry) {
    resolve(handle, "ncclCommInitRankConfig", entry.comm_init_rank_config);
    resolve(handle, "ncclCommRevoke", entry.comm_revoke);
    resolve(handle, "ncclCommShrink", entry.comm_shrink);
}

/// The file the loader opened for `handle`, or empty where it cannot say.
std::string opened_path(void* handle) {
    link_map* map = nullptr;
    if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr || map->l_name == nullptr) {
        return {};
    }
    return map->l_name;
}

/// Asks the library its version; on failure says why in `load.problem`.
void read_version(NcclLoad& load) {
    int code = 0;
    const nccl::Result result = load.entry_points.get_version(&code);
    if (result != nccl::Result::success) {
        load.problem =
            "ncclGetVersion failed: " + std::string(load.entry_points.get_error_string(result)) +
            " (result " + std::to_string(static_cast<int>(result)) + ")";
        return;
    }
    load.version = decode_nccl_version(code);
}

}  // namespace

std::string NcclVersion::text() const {
    return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

NcclVersion decode_nccl_version(int code) {
    NcclVersion version;
    version.code = code;
    if (code < 0) {
        return version;
    }
    // Codes from 2.9 on give the major version ten thousands; older ones gave it thousands, and
    // never reached 10000 (the last, 2.8.x, is 28xx).
    const int major_unit = code < 10000 ? 1000 : 10000;
    version.major = code / major_unit;
    version.minor = (code % major_unit) / 100;
    version.patch = code % 100;
    return version;
}

std::string nccl_library_name() {
    const char* value = std::getenv("TANDEM_NCCL_LIBRARY");
    // An empty variable counts as unset, as for every TANDEM_ variable.
    return value != nullptr && *value != '\0' ? value : nccl_default_library;
}

NcclLoad load_nccl(const std::string& library) {
    NcclLoad load;
    load.library = library;
    ::dlerror();  // Clears an older message, so the one read below is this load's.
    // RTLD_LOCAL keeps NCCL's symbols out of the program's namespace: a program that links its
    // own NCCL (PyTorch does) keeps resolving to its own.
    void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        const char* message = ::dlerror();
        load.problem = message != nullptr ? message : library + ": cannot be opened";
        return load;
    }
    load.opened = true;
    load.path = opened_path(handle);
    resolve_required(handle, load);
    resolve_optional(handle, load.entry_points);
    if (!load.missing.empty()) {
        load.problem = library + " lacks " + load.missing.front() +
                       ": not NCCL, or an NCCL older than tandem needs";
    } else {
        read_version(load);
    }
    load.usable = load.problem.empty();
    if (!load.usable) {
        // Nothing of it may be called: close it, and leave no pointer into it behind.
        load.entry_points = NcclEntryPoints{};
        ::dlclose(handle);
    }
    return load;
}

const NcclLoad& nccl_library() {
    // A function-local static: initialised once, by the first caller, while others wait.
    static const NcclLoad load = load_nccl(nccl_library_name());
    return load;
}

}  // namespace tandem::cuda
