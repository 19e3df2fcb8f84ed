// The ranks of an MPI job, which may sit on several hosts (`mpirun -n 2 ./tandem_mpi_all_reduce`):
// each rank's buffer is summed into every rank's through tandem's MPI communicator. Then a kernel
// on the last rank fails writing its buffer: no rank sums the bytes that kernel should have
// written, and every rank's read fails on that cause, named on the rank it came from, instead of
// returning a sum. The runtime is the simulator, or the backend TANDEM_BACKEND names.
#include "example_runtime.hpp"

#include <tandem/mpi/communicator.hpp>

#include <cstdio>
#include <cstring>
#include <vector>

using namespace tandem;

namespace {

constexpr std::size_t element_count = 1024;

/// Prints `error` as rank `rank` saw it: 1, the exit code of a rank that failed.
int fail(int rank, const Error& error) {
    std::printf("rank %d: %s", rank, error.report().c_str());
    return 1;
}

/// Sums every rank's `rank + 1` and checks the result on this rank: 1 when it is wrong. Every
/// rank makes each collective call, whatever happened before it, or the others would wait.
int sum_of_every_rank(mpi::Communicator& comm, Client& device, const Handle& buffer) {
    const std::vector<float> mine(element_count, static_cast<float>(comm.rank() + 1));
    const Status written = device.write(buffer, as_bytes(mine));
    const Status reduced = comm.all_reduce(buffer, ElementType::f32, ReduceOp::sum);
    const Result<std::vector<std::byte>> read = device.read(buffer);
    if (!written || !reduced || !read) {
        return fail(comm.rank(), !written ? written.error()
                                 : !reduced ? reduced.error()
                                            : read.error());
    }
    const float expected = static_cast<float>(comm.size() * (comm.size() + 1) / 2);
    std::vector<float> sums(element_count);
    std::memcpy(sums.data(), read->data(), read->size());
    for (const float sum : sums) {
        if (sum != expected) {
            std::printf("rank %d: an element summed to %g, not %g\n", comm.rank(), sum, expected);
            return 1;
        }
    }
    return 0;
}

/// A kernel on the last rank fails writing its buffer, and every rank sums: every rank's read
/// must fail on that kernel's failure. 1 when a read returns bytes.
int a_failed_part_claims_every_rank(mpi::Communicator& comm, Client& device,
                                    const Handle& buffer) {
    Status launched;
    if (comm.rank() == comm.size() - 1) {
        // The kernel reports failure code 7 from inside, so its bytes are claimed (C1).
        launched = device.launch("fail", LaunchConfig::linear(1), {{buffer, AccessMode::Write}},
                                 KernelArgs().u64(7));
    }
    // The call succeeds on every rank, as a launch whose input was claimed does: the ranks
    // agree that a source is claimed, reduce nothing, and claim every rank's buffer.
    const Status reduced = comm.all_reduce(buffer, ElementType::f32, ReduceOp::sum);
    if (!launched || !reduced) {
        return fail(comm.rank(), !launched ? launched.error() : reduced.error());
    }
    const Result<std::vector<std::byte>> read = device.read(buffer);
    if (read) {
        std::printf("rank %d: the read returned a sum of bytes a failed kernel should have "
                    "written\n", comm.rank());
        return 1;
    }
    if (comm.rank() == 0) {
        std::printf("%s", read.error().report().c_str());
    }
    return 0;
}

/// Every rank's part of the example, once MPI is up: the exit code.
int run(int rank) {
    RuntimeOptions options;
    options.devices = 1;
    // Reports name this rank's device "device 0 of rank R", and the simulator keeps each rank's
    // device at addresses of its own.
    options.rank = static_cast<std::uint32_t>(rank);
    int exit_code = 0;
    std::shared_ptr<Runtime> runtime = open_example_runtime(&exit_code, options);
    if (!runtime) {
        // The others would wait in `create` for this rank: end the job with this rank's code.
        MPI_Abort(MPI_COMM_WORLD, exit_code);
    }
    Client device = runtime->client(0);
    Result<mpi::Communicator> comm = mpi::Communicator::create(MPI_COMM_WORLD, device);
    Result<Handle> buffer = device.allocate(element_count * sizeof(float));
    if (!comm || !buffer) {
        MPI_Abort(MPI_COMM_WORLD, fail(rank, comm ? buffer.error() : comm.error()));
    }
    int failed = sum_of_every_rank(*comm, device, *buffer);
    failed |= a_failed_part_claims_every_rank(*comm, device, *buffer);
    return failed;
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const int failed = run(rank);  // Its communicator is freed before MPI ends.
    int any_failed = 0;
    MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0 && any_failed == 0) {
        std::puts("every rank summed, then every rank's read failed on the failed kernel");
    }
    MPI_Finalize();
    return any_failed;
}
