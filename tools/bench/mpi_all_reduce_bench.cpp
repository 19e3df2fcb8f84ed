// tandem's MPI all-reduce against MPI_Allreduce of the same buffer, in the same run: run as an MPI
// job of two processes on one machine,
//   mpirun -n 2 build/default/tools/bench/tandem_mpi_bench --benchmark_repetitions=5
// (tools/bench/mpi says the same and adds what Open MPI needs to run as root or past the cores).
// Rank 0 prints the figures. Every rank runs the same benchmarks the same number of times, in
// the same order (fixed iterations, no random interleaving), since each iteration is a
// collective call; an iteration's time is the slowest rank's, agreed by an MPI_Allreduce.
//   mpi_raw_all_reduce/B         MPI_Allreduce in place on a host buffer of B bytes (floats)
//   tandem_mpi_all_reduce/B/1    Communicator::all_reduce of a simulator buffer of B bytes: the
//                                agreement, the wait for the buffer's writers and its claims,
//                                MPI_Allreduce in place in the simulator's memory
//   tandem_mpi_all_reduce/B/0    the same through a staging buffer, as on a GPU: the read of
//                                the buffer into it and the write back
// The ratio the issue sets a goal for is the raw time over tandem's at 64 MiB (at least 0.9 of
// MPI_Allreduce's throughput); at 8 bytes the difference of the two is tandem's added latency.

#include <tandem/mpi/communicator.hpp>
#include <tandem/open_runtime.hpp>

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <vector>

namespace {

constexpr std::int64_t small_bytes = 8;
constexpr std::int64_t large_bytes = std::int64_t{64} << 20;

/// Runs `body` once between barriers and reports the slowest rank's time as the iteration's.
template <typename Body>
void timed(benchmark::State& state, Body&& body) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto start = std::chrono::steady_clock::now();
    body();
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    state.SetIterationTime(seconds);
}

void mpi_raw_all_reduce(benchmark::State& state) {
    std::vector<float> buffer(static_cast<std::size_t>(state.range(0)) / sizeof(float), 1.0f);
    for (auto _ : state) {
        timed(state, [&] {
            MPI_Allreduce(MPI_IN_PLACE, buffer.data(), static_cast<int>(buffer.size()), MPI_FLOAT,
                          MPI_SUM, MPI_COMM_WORLD);
        });
    }
    state.SetBytesProcessed(state.iterations() * state.range(0));
}

void tandem_mpi_all_reduce(benchmark::State& state) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    tandem::RuntimeOptions options;
    options.backend = "sim";
    options.devices = 1;
    options.rank = static_cast<std::uint32_t>(rank);
    options.from_environment = false;
    auto runtime = tandem::open_runtime(options);
    if (!runtime) {
        state.SkipWithError(runtime.error().message().c_str());
        return;
    }
    tandem::Client device = (*runtime)->client(0);
    auto comm = tandem::mpi::Communicator::create(MPI_COMM_WORLD, device,
                                                  {.host_memory_in_place = state.range(1) != 0});
    auto buffer = device.allocate(static_cast<std::uint64_t>(state.range(0)));
    if (!comm || !buffer) {
        state.SkipWithError("no communicator or buffer");
        return;
    }
    const std::vector<float> ones(static_cast<std::size_t>(state.range(0)) / sizeof(float), 1.0f);
    (void)device.write(*buffer, std::as_bytes(std::span(ones)));
    tandem::Status reduced;
    for (auto _ : state) {
        timed(state, [&] {
            reduced = comm->all_reduce(*buffer, tandem::ElementType::f32, tandem::ReduceOp::sum);
        });
    }
    if (!reduced) {
        state.SkipWithError(reduced.error().message().c_str());
    }
    state.SetBytesProcessed(state.iterations() * state.range(0));
}

BENCHMARK(mpi_raw_all_reduce)->Arg(small_bytes)->Iterations(2000)->UseManualTime();
BENCHMARK(tandem_mpi_all_reduce)->Args({small_bytes, 1})->Iterations(2000)->UseManualTime();
BENCHMARK(tandem_mpi_all_reduce)->Args({small_bytes, 0})->Iterations(2000)->UseManualTime();
BENCHMARK(mpi_raw_all_reduce)->Arg(large_bytes)->Iterations(10)->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(tandem_mpi_all_reduce)->Args({large_bytes, 1})->Iterations(10)->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(tandem_mpi_all_reduce)->Args({large_bytes, 0})->Iterations(10)->UseManualTime()
    ->Unit(benchmark::kMillisecond);

/// Prints nothing: the ranks past 0 run every benchmark but report none.
class Quiet : public benchmark::BenchmarkReporter {
public:
    bool ReportContext(const Context&) override { return true; }
    void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    benchmark::Initialize(&argc, argv);
    if (rank == 0) {
        benchmark::RunSpecifiedBenchmarks();
    } else {
        Quiet quiet;
        benchmark::RunSpecifiedBenchmarks(&quiet);
    }
    benchmark::Shutdown();
    MPI_Finalize();
    return 0;
}
