// One rank of a job that checks the NCCL communicator against what the rules say, between GPUs:
// run as `tandem launch -n N --backend cuda -- nccl_collectives_rank` (ctest runs N = 2). Each
// rank joins the job (its GPU placed by its local rank), makes the communicator through the job
// and runs the checks the MPI communicator passes too (core/tests/collectives/rank_checks.hpp).
// NCCL takes one GPU per rank: with fewer GPUs than ranks, or no NCCL, every rank says
// "skipped:" and why. A device lost in the middle is not among the checks: a rank whose device
// is lost cannot take part in NCCL's work, and the others learn of it when its process ends (the
// job's death notice aborts the communicator) or at the time limit.
#include "collectives/rank_checks.hpp"

#include <tandem/cuda/nccl.hpp>
#include <tandem/job.hpp>

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace tandem;
using namespace tandem::rank_checks;

namespace {

/// Why this machine cannot run the job's checks; empty when it can.
std::string why_not() {
    int gpus = 0;
    if (cudaGetDeviceCount(&gpus) != cudaSuccess) {
        gpus = 0;
    }
    const char* world = std::getenv("TANDEM_WORLD_SIZE");
    const int ranks = world != nullptr ? std::atoi(world) : 1;
    if (gpus < ranks) {
        return std::to_string(gpus) + " GPUs for " + std::to_string(ranks) +
               " ranks, and NCCL takes one GPU per rank";
    }
    Result<cuda::NcclUniqueId> id = cuda::NcclCommunicator::unique_id();
    return id ? std::string() : id.error().message();
}

}  // namespace

int main() {
    if (const std::string reason = why_not(); !reason.empty()) {
        std::printf("skipped: %s\n", reason.c_str());
        return 0;
    }
    JoinOptions options;
    options.runtime.backend = "cuda";
    Result<Job> job = Job::join(options);
    if (!job) {
        std::fprintf(stderr, "%s", job.error().report().c_str());
        return 2;
    }
    rank = static_cast<int>(job->rank());
    prefix = "nccl";
    Client device = job->runtime()->client(0);
    {
        Result<cuda::NcclCommunicator> comm = cuda::NcclCommunicator::create(*job, device);
        expect(static_cast<bool>(comm), "create: " + (comm ? "" : comm.error().report()));
        if (comm) {
            a_sum_reaches_every_rank(*comm, device);
            a_bf16_sum_rounds_to_nearest_even_on_every_rank(*comm, device);
            bf16_max_and_min_let_a_nan_give_way(*comm, device);
            a_claimed_source_on_rank_1_claims_every_buffer(*comm, device);
            a_size_mismatch_is_refused_everywhere(*comm, device);
            a_broadcast_copies_the_root_or_spreads_its_failure(*comm, device);
            all_gather_orders_inputs_by_rank(*comm, device);
            reduce_scatter_sums_each_ranks_chunk(*comm, device);
            send_and_recv_follow_k2(*comm, device);
        }
    }
    Result<std::vector<std::string>> all = job->exchange(std::to_string(failures));
    int total = all ? 0 : 1;
    for (const std::string& each : all ? *all : std::vector<std::string>{}) {
        total += std::atoi(each.c_str());
    }
    if (rank == 0 && total == 0) {
        std::printf("all checks passed on %u ranks\n", job->world_size());
    }
    return total == 0 ? 0 : 1;
}
