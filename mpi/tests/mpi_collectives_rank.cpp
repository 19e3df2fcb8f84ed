// One rank of an MPI job that checks tandem's MPI collectives against what the rules say: run as
// `mpirun -n N mpi_collectives_rank` (ctest runs N = 2 and 3). Each rank opens a simulator
// runtime of one device, named by its MPI rank. Every check that fails prints the rank and what
// it saw, and the job exits non-zero; rank 0 prints "all checks passed on N ranks" otherwise.
#include "collectives/rank_checks.hpp"

#include <tandem/mpi/communicator.hpp>
#include <tandem/open_runtime.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace tandem;
using namespace tandem::rank_checks;

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    prefix = "mpi";
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
    {
        // MPI through a staging buffer, as on a GPU, then in place in the simulator's memory.
        auto staged = mpi::Communicator::create(MPI_COMM_WORLD, device, {.host_memory_in_place = false});
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
