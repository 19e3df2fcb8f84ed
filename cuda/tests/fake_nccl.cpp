// A stand-in for libnccl.so.2, built as a shared library, so the loader's "found" path runs on
// machines without NCCL: it exports every entry point the loader looks up, with the signatures
// of nccl_api.hpp, and the version and optional entry points chosen when it is compiled.
// Everything but the version and the error string refuses (a test never calls the rest).
//
// FAKE_NCCL_VERSION_CODE: the code ncclGetVersion gives. FAKE_NCCL_NEWER_ENTRY_POINTS: 1 to
// export ncclCommInitRankConfig, ncclCommRevoke and ncclCommShrink as well.

#include "nccl_api.hpp"

using namespace tandem::cuda::nccl;

namespace {
constexpr Result refused = Result::invalid_usage;
}  // namespace

extern "C" {

Result ncclGetVersion(int* version) {
    *version = FAKE_NCCL_VERSION_CODE;
    return Result::success;
}
const char* ncclGetErrorString(Result result) {
    return result == Result::success ? "no error" : "refused by the stand-in for NCCL";
}
Result ncclGetUniqueId(UniqueId*) { return refused; }
Result ncclCommInitRank(Communicator*, int, UniqueId, int) { return refused; }
Result ncclCommDestroy(Communicator) { return refused; }
Result ncclCommAbort(Communicator) { return refused; }
Result ncclCommGetAsyncError(Communicator, Result*) { return refused; }
Result ncclAllReduce(const void*, void*, std::size_t, DataType, ReduceOp, Communicator, Stream) {
    return refused;
}
Result ncclBroadcast(const void*, void*, std::size_t, DataType, int, Communicator, Stream) {
    return refused;
}
Result ncclAllGather(const void*, void*, std::size_t, DataType, Communicator, Stream) {
    return refused;
}
Result ncclReduceScatter(const void*, void*, std::size_t, DataType, ReduceOp, Communicator,
                         Stream) {
    return refused;
}
Result ncclSend(const void*, std::size_t, DataType, int, Communicator, Stream) { return refused; }
Result ncclRecv(void*, std::size_t, DataType, int, Communicator, Stream) { return refused; }
Result ncclGroupStart() { return refused; }
Result ncclGroupEnd() { return refused; }

#if FAKE_NCCL_NEWER_ENTRY_POINTS
Result ncclCommInitRankConfig(Communicator*, int, UniqueId, int, Config*) { return refused; }
Result ncclCommRevoke(Communicator, int) { return refused; }
Result ncclCommShrink(Communicator, int*, int, Communicator*, Config*, int) { return refused; }
#endif

}  // extern "C"
