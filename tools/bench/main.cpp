// The entry point of tandem_bench. It is Google Benchmark's own main with the simulator's
// settings added to the context, so a JSON report says which seed and scheduler produced it.

#include "bench_support.hpp"

#include <benchmark/benchmark.h>

#include <string>

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
        return 1;
    }
    benchmark::AddCustomContext("tandem_sim_seed", std::to_string(tandem::bench::bench_seed));
    benchmark::AddCustomContext("tandem_sim_scheduler", "deterministic");
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
