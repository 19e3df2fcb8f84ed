// One rank of an MPI job that makes an NCCL communicator by MPI's bootstrap
// (`tandem::mpi::nccl_communicator`), run as `mpirun -n N mpi_nccl_rank MODE`:
//   --refused  NCCL is a stand-in that refuses to make a unique id: every rank must fail alike,
//              naming rank 0's reason, and none may wait (ctest runs it with N = 2 and 3)
//   --gpu      the machine's NCCL on one GPU a rank: the communicator is made and an all-reduce
//              sums every rank's values; prints "skipped: ..." without a GPU or NCCL
// Rank 0 prints "all checks passed on N ranks" when every rank's checks held.
#include "collectives/rank_checks.hpp"

#include <tandem/mpi/nccl.hpp>
#include <tandem/open_runtime.hpp>

#include <cstdio>
#include <cstring>
#include <string>

using namespace tandem;
using namespace tandem::rank_checks;

namespace {

void every_rank_is_refused_alike(Client device) {
    Result<cuda::NcclCommunicator> made = mpi::nccl_communicator(MPI_COMM_WORLD, device);
    expect(!made.ok(), "a communicator was made with a stand-in NCCL");
    if (made.ok()) {
        return;
    }
    const std::string message = made.error().message();
    expect(made.error().kind() == ErrorKind::InvalidArgument, "refused as " + message);
    expect(message.find("rank 0 could not make NCCL's unique id, so no rank makes the "
                        "communicator: NCCL: ncclGetUniqueId failed: refused by the stand-in "
                        "for NCCL") != std::string::npos,
           "refused for another reason: " + message);
}

/// Returns false, having said why, where this rank has no GPU.
bool a_sum_over_nccl(int size) {
    RuntimeOptions options;
    options.backend = "cuda";
    options.gpus = {0};
    options.rank = static_cast<std::uint32_t>(rank);
    Result<std::shared_ptr<Runtime>> runtime = open_runtime(options);
    if (!runtime) {
        std::printf("skipped: rank %d has no GPU: %s\n", rank, runtime.error().message().c_str());
        return false;
    }
    Client device = (*runtime)->client(0);
    Result<cuda::NcclCommunicator> comm = mpi::nccl_communicator(MPI_COMM_WORLD, device);
    if (!comm && comm.error().message().find("could not make") != std::string::npos) {
        std::printf("skipped: %s\n", comm.error().message().c_str());
        return false;
    }
    expect(comm.ok(), "create: " + (comm ? std::string() : comm.error().report()));
    if (!comm) {
        return true;
    }
    Result<Handle> buffer = device.allocate(64);
    expect(buffer.ok() && device.write(*buffer, bytes_of(64, rank + 1)).ok(), "the buffer");
    expect(comm->all_reduce(*buffer, ElementType::i32, ReduceOp::sum).ok(), "all_reduce");
    Result<std::vector<std::byte>> sum = device.read(*buffer);
    int expected = 0;
    for (int r = 0; r < size; ++r) {
        expected += r + 1;
    }
    expect(sum.ok() && *sum == bytes_of(64, expected), "the sum of every rank's values");
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    prefix = "mpi-nccl";
    const std::string mode = argc > 1 ? argv[1] : "";
    bool ran = true;
    if (mode == "--refused") {
        RuntimeOptions options;
        options.backend = "reference";
        options.rank = static_cast<std::uint32_t>(rank);
        Result<std::shared_ptr<Runtime>> runtime = open_runtime(options);
        expect(runtime.ok(), "a reference runtime");
        if (runtime) {
            every_rank_is_refused_alike((*runtime)->client(0));
        }
    } else if (mode == "--gpu") {
        ran = a_sum_over_nccl(size);
    } else {
        std::fprintf(stderr, "mpi_nccl_rank: give --refused or --gpu\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && total == 0 && ran) {
        std::printf("all checks passed on %d ranks\n", size);
    }
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
