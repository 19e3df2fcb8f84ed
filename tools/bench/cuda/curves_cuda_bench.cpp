// The cost curves (curves.hpp) on the CUDA backend: every family on a fresh runtime of GPU 0,
// the read family's pending work on K other streams of that GPU (one GPU has no other device to
// hold it). Without a usable GPU every family is skipped, saying why.
//
//   tandem_cuda_bench --benchmark_filter=cuda_curve --benchmark_repetitions=3
//       --benchmark_out=curves_cuda.json --benchmark_out_format=json   (one command line)
//   tools/bench/plot_curves.py curves_cuda.json curves_cuda.svg

#include "curves.hpp"

#include "tandem/cuda/runtime.hpp"

#include <string>

namespace tandem::bench {
namespace {

/// Why no GPU can run the curves, asked of the driver once; empty when one can.
const std::string& missing_gpu() {
    static const std::string problem = [] {
        const cuda::GpuReport report = cuda::probe_gpus();
        return report.problem.empty()
                   ? std::string{}
                   : "no usable GPU (" + report.problem + "): the CUDA cost curves need one";
    }();
    return problem;
}

/// A runtime of GPU 0 alone: the curves measure one device, and a second GPU would only take
/// memory and set-up time.
std::shared_ptr<Runtime> cuda_runtime(benchmark::State& state, std::uint32_t /*devices*/) {
    if (!missing_gpu().empty()) {
        state.SkipWithError(missing_gpu().c_str());
        return nullptr;
    }
    cuda::CudaOptions options;
    options.devices = 1;
    auto runtime = cuda::CudaRuntime::create(options);
    if (!runtime) {
        state.SkipWithError(runtime.error().report().c_str());
        return nullptr;
    }
    return *runtime;
}

/// `others` new streams of GPU 0, on its one client.
std::vector<std::pair<Client, StreamId>> other_streams(benchmark::State& state, Runtime& runtime,
                                                       std::uint32_t others) {
    std::vector<std::pair<Client, StreamId>> sources;
    Client client = runtime.client(0);
    for (std::uint32_t index = 0; index < others; ++index) {
        Result<StreamId> stream = client.create_stream();
        if (!stream) {
            state.SkipWithError(stream.error().report().c_str());
            return {};
        }
        sources.emplace_back(client, *stream);
    }
    return sources;
}

const bool registered = [] {
    curves::register_families(curves::Backend{
        .name = "cuda",
        .make_runtime = cuda_runtime,
        .read_devices = [](std::uint32_t /*others*/) { return std::uint32_t{1}; },
        .pending_sources = other_streams,
    });
    return true;
}();

}  // namespace
}  // namespace tandem::bench
