// One rank of a job that checks the job's own collectives against what the rules say, each rank
// a process of its own, on the backend `tandem launch --backend` names (TANDEM_BACKEND): run as
// `tandem launch -n N [--backend cuda] -- job_collectives_rank`. ctest runs N = 2 and 3 on the
// simulator, and 2 ranks sharing GPU 0 on CUDA, which is what runs between ranks of one GPU
// (NCCL refuses two ranks on one GPU); tools/gpu-check-jobs starts those two by hand where no
// tandem tool is built. It runs the checks the MPI and NCCL communicators pass too
// (core/tests/collectives/rank_checks.hpp) through an adapter that gives a `Job` their calls.
// Every check that fails prints the rank and what it saw, and the rank exits non-zero; rank 0
// prints "all checks passed on N ranks" otherwise. A device lost in the middle is checked by
// the job's own tests (sim_job_collective_test.cpp), whose words differ. Where the backend has
// no usable device (CUDA without a GPU) the join's error says so and ctest skips the test.
#include "collectives/rank_checks.hpp"

#include <tandem/job.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace tandem;
using namespace tandem::rank_checks;

namespace {

/// A job's collectives with the names and argument order of the communicators the checks take.
class JobCommunicator {
public:
    explicit JobCommunicator(Job& job) : job_(job) {}
    [[nodiscard]] int rank() const { return static_cast<int>(job_.rank()); }
    [[nodiscard]] int size() const { return static_cast<int>(job_.world_size()); }
    Status all_reduce(const Handle& buffer, ElementType type, ReduceOp op) {
        return job_.all_reduce(buffer, type, op);
    }
    Status broadcast(const Handle& buffer, int root) {
        return job_.broadcast(buffer, rank_of(root));
    }
    Status all_gather(const Handle& input, const Handle& output) {
        return job_.all_gather(input, output);
    }
    Status reduce_scatter(const Handle& input, const Handle& output, ElementType type,
                          ReduceOp op) {
        return job_.reduce_scatter(input, output, type, op);
    }
    Status send(const Handle& source, int to) { return job_.send(rank_of(to), source); }
    Status recv(const Handle& target, int from) { return job_.recv(rank_of(from), target); }

private:
    /// A rank as the job takes it; a negative one as a rank no job has.
    static std::uint32_t rank_of(int rank) {
        return rank < 0 ? job_ranks_max : static_cast<std::uint32_t>(rank);
    }
    Job& job_;
};

}  // namespace

int main() {
    JoinOptions options;  // The backend from the environment, as `tandem launch` sets it.
    options.runtime.devices = 1;
    Result<Job> job = Job::join(options);
    if (!job) {
        std::fprintf(stderr, "%s", job.error().report().c_str());
        return 2;
    }
    rank = static_cast<int>(job->rank());
    // A job moves a claimed source's failure by a copy of the memory another rank published.
    hop_name = [](const std::string&) { return std::string("peer copy from device 0"); };
    Client device = job->runtime()->client(0);
    JobCommunicator comm(*job);
    every_check(comm, device);
    return job_verdict(*job);
}
