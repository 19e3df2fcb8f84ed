// A captured window replayed through its CUDA graph, against the same graph built and launched
// with plain CUDA, side by side in one run (C14 at its limit):
//   replay_pair_1000_launches   a window of 1000 typed launches of the program's own kernel
//                               (user_kernel.hpp) on two bindings, replayed with
//                               `Client::replay` and a sync, against a CUDA graph of the same
//                               1000 raw launches, captured from a stream and launched with
//                               cudaGraphLaunch and a stream sync             goal: at most 1.02
//   replay_pair_raw_padded_against_raw
//                               the raw graph whose kernel takes its arguments in a block the
//                               size of tandem's graph-node block, against the raw graph: what
//                               the block's size alone costs a replay
// `ratio` is tandem's time over the raw time; `added_ns` what tandem adds to one replay.

#include "bench_pairs.hpp"
#include "raw_kernels.hpp"
#include "user_kernel.hpp"

#include <optional>

namespace tandem::bench {
namespace {

constexpr std::uint64_t replay_bytes = 256;
constexpr std::uint32_t replay_threads = 256;
constexpr LaunchConfig replay_config = LaunchConfig::linear(replay_threads, replay_threads);
constexpr int launches_per_window = 1000;

/// Replays of one captured window through tandem: one replay and a sync a batch.
class TandemReplay {
public:
    TandemReplay(Client client, StreamId stream, CaptureGraph graph)
        : client_(std::move(client)), stream_(stream), graph_(std::move(graph)) {}
    void enqueue() { (void)client_.replay(graph_, stream_); }
    void sync() { (void)client_.sync_stream(stream_); }

private:
    Client client_;
    StreamId stream_;
    CaptureGraph graph_;
};

/// The same launches captured into a CUDA graph with plain CUDA: one graph launch and a stream
/// sync a batch.
class RawReplay {
public:
    /// `launch_copy` enqueues one raw launch (`launch_raw_user_copy` or a variant of it).
    RawReplay(benchmark::State& state, const void* from, void* to,
              int (*launch_copy)(void*, const void*, void*, std::uint64_t, std::uint32_t,
                                 std::uint32_t) = launch_raw_user_copy) {
        cudaSetDevice(0);
        cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
        cudaGraph_t graph = nullptr;
        if (cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
            state.SkipWithError("cudaStreamBeginCapture failed");
            return;
        }
        for (int launch = 0; launch < launches_per_window; ++launch) {
            (void)launch_copy(stream_, from, to, replay_bytes, 1, replay_threads);
        }
        if (cudaStreamEndCapture(stream_, &graph) != cudaSuccess ||
            cudaGraphInstantiate(&exec_, graph, 0) != cudaSuccess) {
            state.SkipWithError("the raw graph could not be built");
        }
        cudaGraphDestroy(graph);
    }
    ~RawReplay() {
        if (exec_ != nullptr) {
            cudaGraphExecDestroy(exec_);
        }
        cudaStreamDestroy(stream_);
    }
    RawReplay(const RawReplay&) = delete;
    RawReplay& operator=(const RawReplay&) = delete;

    [[nodiscard]] bool ok() const { return exec_ != nullptr; }
    void enqueue() { cudaGraphLaunch(exec_, stream_); }
    void sync() { cudaStreamSynchronize(stream_); }

private:
    cudaStream_t stream_ = nullptr;
    cudaGraphExec_t exec_ = nullptr;
};

/// A window of `launches_per_window` typed launches on `stream`, from the first of `arguments`
/// into the second, ended into its graph.
std::optional<CaptureGraph> capture_window(benchmark::State& state, Client& client,
                                           StreamId stream,
                                           const std::vector<LaunchArgument>& arguments) {
    if (!client.begin_capture(stream)) {
        state.SkipWithError("begin_capture failed");
        return std::nullopt;
    }
    for (int launch = 0; launch < launches_per_window; ++launch) {
        (void)client.launch<UserCopy>(replay_config, arguments, {}, stream);
    }
    Result<CaptureGraph> graph = client.end_capture(stream);
    if (!graph) {
        state.SkipWithError(graph.error().report().c_str());
        return std::nullopt;
    }
    return *graph;
}

void replay_pair_1000_launches(benchmark::State& state) {
    auto rt = runtime(state, 1);
    if (!rt) {
        return;
    }
    Client client = rt->client(0);
    auto from = client.allocate(replay_bytes);
    auto to = client.allocate(replay_bytes);
    Result<StreamId> stream = client.create_stream();
    if (!from || !to || !stream || !client.write(*from, std::vector<std::byte>(replay_bytes)) ||
        !client.sync()) {
        state.SkipWithError("set-up failed");
        return;
    }
    const std::vector<LaunchArgument> arguments = {{*from, AccessMode::Read, std::nullopt},
                                                   {*to, AccessMode::Write, std::nullopt}};
    std::optional<CaptureGraph> graph = capture_window(state, client, *stream, arguments);
    // The raw graph copies between the same two buffers, through their raw pointers. On buffers
    // of its own (cudaMalloc) it measured 935 us a replay in one run and 1090 us in another, on
    // the same kind of machine, while tandem's graph did not move with it: a chain of tiny
    // kernels runs at the latency of the memory it touches, so the pair keeps that the same.
    Result<NativeView> raw_from = client.native(*from);
    Result<NativeView> raw_to = client.native(*to);
    if (!raw_from || !raw_to) {
        state.SkipWithError("the buffers' raw pointers are not available");
        return;
    }
    RawReplay raw(state, raw_from->pointer, raw_to->pointer);
    if (graph && raw.ok()) {
        TandemReplay tandem(client, *stream, std::move(*graph));
        launch_pair(state, tandem, raw, 1);
        state.counters["launches_per_replay"] = launches_per_window;
    }
}

/// Two raw CUDA graphs of 1000 launches each: of the padded kernel, and of the plain one.
void replay_pair_raw_padded_against_raw(benchmark::State& state) {
    if (!runtime(state, 1)) {
        return;
    }
    const RawMemory memory(state, 4, replay_bytes);
    if (!memory.ok(4)) {
        return;
    }
    RawReplay padded(state, memory[0], memory[1], launch_raw_user_copy_padded);
    RawReplay plain(state, memory[2], memory[3]);
    if (padded.ok() && plain.ok()) {
        launch_pair(state, padded, plain, 1);
    }
}

BENCHMARK(replay_pair_1000_launches)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(replay_pair_raw_padded_against_raw)->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tandem::bench
