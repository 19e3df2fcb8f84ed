// NCCL under tandem against NCCL alone, side by side in one run, on one GPU:
//   nccl_pair_all_reduce/BYTES  `NcclCommunicator::all_reduce` of a buffer (a communicator of
//                               one rank), against `ncclAllReduce` of a cudaMalloc buffer on a
//                               communicator of its own followed by a stream sync, as tandem's
//                               call returns once the collective ran. `added_ns` is the host time
//                               tandem adds to each: the source's check, the agreement (an NCCL
//                               all-reduce of five words, and its copies) and the wait.
// Paired as the other CUDA benchmarks are (bench_pairs.hpp). Skipped without a GPU or NCCL.

#include "bench_pairs.hpp"
#include "nccl_library.hpp"

#include "tandem/cuda/nccl.hpp"

#include <optional>

namespace tandem::bench {
namespace {

/// Collectives per timed batch: each waits for its end, so fewer than launches.
constexpr int collectives_per_batch = 100;

/// A communicator of one rank made by NCCL alone on GPU 0, and its stream.
class RawNccl {
public:
    explicit RawNccl(benchmark::State& state) : nccl_(cuda::nccl_library()) {
        if (!nccl_.usable) {
            state.SkipWithError(("NCCL: " + nccl_.problem).c_str());
            return;
        }
        cudaSetDevice(0);
        cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
        cuda::nccl::UniqueId id{};
        if (nccl_.entry_points.get_unique_id(&id) != cuda::nccl::Result::success ||
            nccl_.entry_points.comm_init_rank(&comm_, 1, id, 0) != cuda::nccl::Result::success) {
            state.SkipWithError("NCCL could not make a communicator of one rank");
            comm_ = nullptr;
        }
    }
    ~RawNccl() {
        if (comm_ != nullptr) {
            nccl_.entry_points.comm_destroy(comm_);
        }
        if (stream_ != nullptr) {
            cudaStreamDestroy(stream_);
        }
    }
    RawNccl(const RawNccl&) = delete;
    RawNccl& operator=(const RawNccl&) = delete;

    [[nodiscard]] bool ok() const { return comm_ != nullptr; }
    /// One all-reduce of `count` floats at `buffer`, waited for.
    void all_reduce(void* buffer, std::size_t count) {
        nccl_.entry_points.all_reduce(buffer, buffer, count, cuda::nccl::DataType::float32,
                                      cuda::nccl::ReduceOp::sum, comm_, stream_);
        cudaStreamSynchronize(stream_);
    }

private:
    const cuda::NcclLoad& nccl_;
    cuda::nccl::Communicator comm_ = nullptr;
    cudaStream_t stream_ = nullptr;
};

/// A batch of `collectives_per_batch` calls of `call`; each waits, so `sync` has nothing left.
template <typename Call>
struct CallBatch {
    Call call;
    void enqueue() {
        for (int each = 0; each < collectives_per_batch; ++each) {
            call();
        }
    }
    void sync() {}
};
template <typename Call>
CallBatch(Call) -> CallBatch<Call>;

void nccl_pair_all_reduce(benchmark::State& state) {
    const auto bytes = static_cast<std::uint64_t>(state.range(0));
    auto cuda_runtime = runtime(state, 1);
    if (!cuda_runtime) {
        return;
    }
    RawNccl raw(state);
    RawMemory memory(state, 1, bytes);
    if (!raw.ok() || !memory.ok(1)) {
        return;
    }
    Client client = cuda_runtime->client(0);
    Result<cuda::NcclUniqueId> id = cuda::NcclCommunicator::unique_id();
    Result<cuda::NcclCommunicator> comm = id ? cuda::NcclCommunicator::create(client, 0, 1, *id)
                                             : Result<cuda::NcclCommunicator>(id.error());
    Result<Handle> buffer = client.allocate(bytes);
    if (!comm || !buffer || !client.write(*buffer, std::vector<std::byte>(bytes))) {
        state.SkipWithError(comm ? "allocation failed" : comm.error().message().c_str());
        return;
    }
    CallBatch tandem_batch{
        [&] { (void)comm->all_reduce(*buffer, ElementType::f32, ReduceOp::sum); }};
    CallBatch raw_batch{[&] { raw.all_reduce(memory[0], bytes / sizeof(float)); }};
    launch_pair(state, tandem_batch, raw_batch, collectives_per_batch);
    if (Result<std::vector<std::byte>> read = client.read(*buffer); !read) {
        state.SkipWithError(read.error().message().c_str());  // Every call must have landed.
    }
}
BENCHMARK(nccl_pair_all_reduce)
    ->Arg(8)
    ->Arg(64 << 20)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tandem::bench
