// tandem_cuda_job_peers: what the CUDA backend's memory across processes costs, on a GPU, beside
// the same work in one process and beside plain CUDA. This process is rank 0 of a job of two with
// two devices on one GPU; a copy of it is rank 1, one device on the same GPU (two processes
// sharing one GPU, as a machine of one GPU has them), which publishes a 256-byte and a large
// buffer. Each round measures, alternating which side comes first where there are two:
//   allocate  1 MiB allocated and freed through a client (the pools, over exportable storage),
//             against cudaMallocAsync + cudaFreeAsync on a warm pool: goal at least 10 times faster
//   lookup    `Job::lookup` of the small buffer, its region mapped already (the handle dropped
//             each time): goal under 5 us
//   launch    a one-thread copy kernel binding 256 bytes of the peer's memory, N launches + sync,
//             against the same on memory this process's device 1 shares (a report)
//   read      the copy kernel reading the large buffer of rank 1 into device 0's own, against the
//             same read of device 1's shared buffer in this process: goal at least 0.95 of it
// Prints each round, the medians, the ratios and each goal; exits 0 when every goal is met, 1
// when one is missed, 2 when something failed, and 77 where no GPU is usable.
//
//   tandem_cuda_job_peers [--rounds R] [--launches N] [--large-mib M] [--gpu G]

#include "rank_one.hpp"

#include "tandem/cuda/runtime.hpp"
#include "tandem/job.hpp"

#include <cuda_runtime_api.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

using namespace tandem;

namespace {

using bench::check;
using bench::Clock;
using bench::fail;
using bench::filled;
using bench::seconds_since;

constexpr std::uint64_t allocation_bytes = 1 << 20;
constexpr int allocations_per_round = 2000;

/// A launch configuration that covers GPU `gpu`: eight blocks of 256 threads a multiprocessor.
LaunchConfig covering(int gpu) {
    int processors = 0;
    cudaDeviceGetAttribute(&processors, cudaDevAttrMultiProcessorCount, gpu);
    return LaunchConfig{Dim3{static_cast<std::uint32_t>(std::max(processors, 1) * 8), 1, 1},
                        Dim3{256, 1, 1}};
}

/// `count` allocations of 1 MiB freed at once through `device`: seconds each.
double tandem_allocate_free(Client& device, int count) {
    const Clock::time_point start = Clock::now();
    for (int index = 0; index < count; ++index) {
        Result<Handle> handle = device.allocate(allocation_bytes);
        check(handle ? Status{} : Status(handle.error()), "allocate");
    }
    check(device.sync(), "sync");
    return seconds_since(start) / count;
}

/// The same through cudaMallocAsync and cudaFreeAsync on `stream`, a pool kept warm: seconds each.
double raw_allocate_free(cudaStream_t stream, int count) {
    const Clock::time_point start = Clock::now();
    for (int index = 0; index < count; ++index) {
        void* pointer = nullptr;
        if (cudaMallocAsync(&pointer, allocation_bytes, stream) != cudaSuccess ||
            cudaFreeAsync(pointer, stream) != cudaSuccess) {
            fail("cudaMallocAsync", cudaGetErrorString(cudaGetLastError()));
        }
    }
    cudaStreamSynchronize(stream);
    return seconds_since(start) / count;
}

/// Ten reads of `source` into `target` by the covering copy kernel, then a sync: seconds each.
double read_batch(Client& device, const Handle& source, const Handle& target,
                  const LaunchConfig& config) {
    constexpr int reads = 10;
    const Clock::time_point start = Clock::now();
    for (int index = 0; index < reads; ++index) {
        check(device.launch("copy", config,
                            {{source, AccessMode::Read, std::nullopt},
                             {target, AccessMode::Write, std::nullopt}}),
              "read");
    }
    check(device.sync(), "sync");
    return seconds_since(start) / reads;
}

struct Figures {
    std::vector<double> allocate, allocate_raw, lookup, launch_remote, launch_local, read_remote,
        read_local;
};

struct Options {
    int rounds = 7;
    int launches = 2000;
    std::uint64_t large_mib = 256;
    int gpu = 0;
};

Options parse(int argc, char** argv) {
    Options options;
    for (int index = 1; index + 1 < argc; index += 2) {
        const std::string flag = argv[index];
        const long value = std::atol(argv[index + 1]);
        if (flag == "--rounds") {
            options.rounds = static_cast<int>(std::max(1L, value));
        } else if (flag == "--launches") {
            options.launches = static_cast<int>(std::max(1L, value));
        } else if (flag == "--large-mib") {
            options.large_mib = static_cast<std::uint64_t>(std::max(1L, value));
        } else if (flag == "--gpu") {
            options.gpu = static_cast<int>(std::max(0L, value));
        } else {
            fail("usage",
                 "tandem_cuda_job_peers [--rounds R] [--launches N] [--large-mib M] "
                 "[--gpu G]; unknown " +
                     flag);
        }
    }
    return options;
}

}  // namespace

namespace {

/// What rank 0 measures with: its devices, rank 1's buffers, its own, and a stream for the raw
/// allocations.
struct Setup {
    Client device;
    Client owner;
    Handle remote_small, remote_large, local_small, local_large, small_out, large_out;
    LaunchConfig config;
    cudaStream_t stream = nullptr;
};

Setup set_up(Job& job, const Options& options) {
    Client device = job.runtime()->client(0);
    Client owner = job.runtime()->client(1);
    check(owner.grant_peer_access(device.service()), "grant");
    const LaunchConfig config = covering(options.gpu);
    const std::uint64_t large = options.large_mib << 20;
    Result<Handle> remote_small = job.lookup("small");
    Result<Handle> remote_large = job.lookup("large");
    check(remote_small ? Status{} : Status(remote_small.error()), "lookup small");
    check(remote_large ? Status{} : Status(remote_large.error()), "lookup large");
    Result<Handle> local_small = owner.share_with_peers(filled(owner, 256, 3, config));
    Result<Handle> local_large = owner.share_with_peers(filled(owner, large, 3, config));
    check(local_small && local_large ? Status{} : Status(Error::invalid_argument("share")),
          "share");
    Setup setup{device,
                owner,
                *remote_small,
                *remote_large,
                *local_small,
                *local_large,
                filled(device, 256, 0, config),
                filled(device, large, 0, config),
                config,
                nullptr};
    check(job.runtime()->sync_all(), "sync");  // The fills run now, not inside a round.
    // The bytes of the other process, read where they are mapped here: what every figure uses.
    (void)read_batch(device, setup.remote_large, setup.large_out, config);
    Result<std::vector<std::byte>> read = device.read(*setup.large_out.slice(large - 64, 64));
    check(read ? Status{} : Status(read.error()), "read back");
    for (const std::byte byte : *read) {
        if (byte != std::byte{3}) {
            fail("read back", "a kernel here did not read rank 1's bytes through the mapping");
        }
    }
    cudaSetDevice(options.gpu);
    cudaStreamCreateWithFlags(&setup.stream, cudaStreamNonBlocking);
    cudaMemPool_t pool = nullptr;
    cudaDeviceGetDefaultMemPool(&pool, options.gpu);
    std::uint64_t keep_all = std::numeric_limits<std::uint64_t>::max();
    cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all);  // Warm, fair.
    (void)raw_allocate_free(setup.stream, 100);
    (void)tandem_allocate_free(device, 100);
    return setup;
}

void measure_round(Job& job, Setup& setup, const Options& options, int round, Figures& figures) {
    // Each first in every other round: neither gains from coming second.
    const bool remote_first = round % 2 == 0;
    for (int side = 0; side < 2; ++side) {
        if ((side == 0) == remote_first) {
            figures.allocate.push_back(tandem_allocate_free(setup.device, allocations_per_round));
            figures.launch_remote.push_back(bench::launch_batch(setup.device, setup.remote_small,
                                                                setup.small_out, options.launches));
            figures.read_remote.push_back(
                read_batch(setup.device, setup.remote_large, setup.large_out, setup.config));
        } else {
            figures.allocate_raw.push_back(raw_allocate_free(setup.stream, allocations_per_round));
            figures.launch_local.push_back(bench::launch_batch(setup.device, setup.local_small,
                                                               setup.small_out, options.launches));
            figures.read_local.push_back(
                read_batch(setup.device, setup.local_large, setup.large_out, setup.config));
        }
    }
    for (int lookup = 0; lookup < 50; ++lookup) {
        figures.lookup.push_back(bench::lookup_once(job, "small"));
    }
    std::printf("round %d: allocate %.3f / %.3f us, launch %.2f / %.2f us, read %.3f / %.3f ms\n",
                round + 1, figures.allocate.back() * 1e6, figures.allocate_raw.back() * 1e6,
                figures.launch_remote.back() * 1e6, figures.launch_local.back() * 1e6,
                figures.read_remote.back() * 1e3, figures.read_local.back() * 1e3);
}

/// Prints the medians and the goals; whether every goal is met.
bool report(const Figures& figures, std::uint64_t large_mib) {
    const double allocate = bench::median(figures.allocate);
    const double raw = bench::median(figures.allocate_raw);
    const double lookup = bench::median(figures.lookup);
    const double launch_remote = bench::median(figures.launch_remote);
    const double launch_local = bench::median(figures.launch_local);
    const double read_remote = bench::median(figures.read_remote);
    const double read_local = bench::median(figures.read_local);
    const double speed = read_local / read_remote;  // Of the in-process read's speed.
    const bool allocate_met = raw / allocate >= 10;
    const bool lookup_met = lookup < 5e-6;
    const bool read_met = speed >= 0.95;
    std::printf(
        "allocate+free 1 MiB: tandem %.3f us, cudaMallocAsync+cudaFreeAsync %.3f us: "
        "%.1f times faster (goal at least 10): %s\n",
        allocate * 1e6, raw * 1e6, raw / allocate, allocate_met ? "met" : "MISSED");
    std::printf(
        "lookup of a buffer whose region is mapped: median %.2f us over %zu (goal under "
        "5 us): %s\n",
        lookup * 1e6, figures.lookup.size(), lookup_met ? "met" : "MISSED");
    std::printf(
        "launch binding 256 bytes: other process %.2f us, this process %.2f us, ratio "
        "%.3f\n",
        launch_remote * 1e6, launch_local * 1e6, launch_remote / launch_local);
    std::printf(
        "read of %llu MiB: other process %.3f ms (%.0f GB/s), this process %.3f ms: %.3f "
        "of in-process speed (goal at least 0.95): %s\n",
        static_cast<unsigned long long>(large_mib), read_remote * 1e3,
        static_cast<double>(large_mib << 20) / read_remote / 1e9, read_local * 1e3, speed,
        read_met ? "met" : "MISSED");
    return allocate_met && lookup_met && read_met;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 4 && std::strcmp(argv[1], "--as-rank-one") == 0) {
        return bench::be_rank_one(std::strtoull(argv[2], nullptr, 10),
                                  covering(std::atoi(argv[3])));
    }
    const Options options = parse(argc, argv);
    if (const cuda::GpuReport gpus = cuda::probe_gpus(); !gpus.problem.empty()) {
        std::printf("skipped: no usable GPU here: %s\n", gpus.problem.c_str());
        return 77;
    }
    const std::string gpu = std::to_string(options.gpu);
    const std::string id = new_job_id();
    const auto [pid, gate] =
        bench::start_rank_one(id, {"--as-rank-one", std::to_string(options.large_mib << 20), gpu},
                              {"TANDEM_BACKEND=cuda", "TANDEM_DEVICES=1", "TANDEM_GPUS=" + gpu});
    JoinOptions join;
    join.environment = JobEnvironment{0, 2, 0, id, job_folder_path(id)};
    join.runtime.backend = "cuda";
    join.runtime.gpus = {options.gpu, options.gpu};
    Result<Job> job = Job::join(join);
    check(job ? Status{} : Status(job.error()), "join");
    char byte = 0;
    if (::read(gate, &byte, 1) != 1) {
        fail("rank 1", "it did not publish");
    }
    Setup setup = set_up(*job, options);
    Figures figures;
    for (int round = 0; round < options.rounds; ++round) {
        measure_round(*job, setup, options, round, figures);
    }
    const bool met = report(figures, options.large_mib);
    cudaStreamDestroy(setup.stream);
    check(job->barrier(std::chrono::minutes(1)), "barrier");
    ::waitpid(pid, nullptr, 0);
    return met ? 0 : 1;
}
