// One rank of an MPI job that checks tandem's MPI collectives against what the rules say: run as
// `mpirun -n N mpi_collectives_rank` (ctest runs N = 2 and 3, on one host and across two
// emulated hosts). Each rank opens a simulator runtime of one device, named by its MPI rank.
// Every check that fails prints the rank and what it saw, and the job exits non-zero; rank 0
// prints "all checks passed on N ranks" otherwise. With `--hosts`, the ranks are on several
// hosts and first check that a `Job` refuses them at once, naming MPI as what carries data
// between hosts. With `--die`, the last rank kills itself while the others are in an
// all-reduce (it prints "rank R dies at T" first, T in nanoseconds of the system clock): Open
// MPI must end them, never leave them waiting.
#include "collectives/rank_checks.hpp"

#include <tandem/job.hpp>
#include <tandem/mpi/communicator.hpp>
#include <tandem/open_runtime.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace tandem;
using namespace tandem::rank_checks;

namespace {

/// A job whose ranks are on several hosts cannot meet in one host's folder: `Job::join` says so
/// at once, rather than failing with `PeerUnreachable` once its wait for them ends.
void a_job_across_hosts_is_refused_at_once() {
    JoinOptions options;
    options.open_runtime = false;
    options.timeout = std::chrono::seconds(20);
    Result<Job> job = Job::join(options);
    expect(!job.ok(), "a job across hosts joined");
    if (job.ok()) {
        return;
    }
    expect(job.error().kind() == ErrorKind::InvalidArgument,
           "a join across hosts failed with " + job.error().report());
    expect(job.error().message().find("ranks on several hosts cannot join one") !=
               std::string::npos,
           "a join across hosts was refused for another reason: " + job.error().message());
}

/// The last rank dies as the others wait in an all-reduce for it; returns only on the others,
/// should the all-reduce ever end.
void the_last_rank_dies_in_an_all_reduce(mpi::Communicator& comm, Client& device) {
    Result<Handle> buffer = device.allocate(1 << 20);
    expect(buffer.ok() && device.write(*buffer, bytes_of(1 << 20, 1)).ok(), "the buffer");
    if (rank == comm.size() - 1) {
        const auto now = std::chrono::system_clock::now().time_since_epoch();
        std::printf("rank %d dies at %lld\n", rank,
                    static_cast<long long>(
                        std::chrono::duration_cast<std::chrono::nanoseconds>(now).count()));
        std::fflush(stdout);
        ::raise(SIGKILL);
    }
    const Status reduced = comm.all_reduce(*buffer, ElementType::i32, ReduceOp::sum);
    expect(false, "an all-reduce without the dead rank ended: " +
                      (reduced.ok() ? std::string("success") : reduced.error().report()));
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    prefix = "mpi";
    if (argc > 1 && std::strcmp(argv[1], "--hosts") == 0) {
        ::setenv("TANDEM_JOB_ID", "emulated-hosts", 1);
        a_job_across_hosts_is_refused_at_once();
    }
    RuntimeOptions options;
    options.backend = "sim";
    options.devices = 1;
    options.rank = static_cast<std::uint32_t>(rank);
    auto runtime = open_runtime(options);
    if (!runtime) {
        std::fprintf(stderr, "rank %d: %s", rank, runtime.error().report().c_str());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    Client device = (*runtime)->client(0);
    if (argc > 1 && std::strcmp(argv[1], "--die") == 0) {
        auto comm = mpi::Communicator::create(MPI_COMM_WORLD, device);
        expect(static_cast<bool>(comm), "create");
        the_last_rank_dies_in_an_all_reduce(*comm, device);
        MPI_Finalize();
        return 1;
    }
    {
        // MPI through a staging buffer, as on a GPU, then in place in the simulator's memory.
        auto staged = mpi::Communicator::create(MPI_COMM_WORLD, device,
                                                {.host_memory_in_place = false});
        expect(static_cast<bool>(staged), "create");
        every_check(*staged, device);
        auto comm = mpi::Communicator::create(MPI_COMM_WORLD, device);
        expect(static_cast<bool>(comm), "create");
        every_check(*comm, device);
        a_lost_device_on_rank_1_claims_every_other_buffer(*comm, device);
    }
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0 && total == 0) {
        std::printf("all checks passed on %d ranks\n", size);
    }
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
