// One rank of an MPI job that checks tandem's MPI collectives against what the rules say: run as
// `mpirun -n N mpi_collectives_rank` (ctest runs N = 2 and 3). Each rank opens a simulator
// runtime of one device, named by its MPI rank. Every check that fails prints the rank and what
// it saw, and the job exits non-zero; rank 0 prints "all checks passed on N ranks" otherwise.
#include <tandem/mpi/communicator.hpp>
#include <tandem/open_runtime.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace tandem;

namespace {

int rank = 0;
int failures = 0;

void expect(bool holds, const std::string& what) {
    if (!holds) {
        std::fprintf(stderr, "rank %d: check failed: %s\n", rank, what.c_str());
        ++failures;
    }
}

std::vector<std::byte> floats(const std::vector<float>& values) {
    std::vector<std::byte> bytes(values.size() * sizeof(float));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return bytes;
}

std::vector<float> as_floats(const std::vector<std::byte>& bytes) {
    std::vector<float> values(bytes.size() / sizeof(float));
    std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
    return values;
}

// Every rank's buffer becomes the sum over the ranks, in place.
void a_sum_reaches_every_rank(mpi::Communicator& comm, Client& device) {
    Handle buffer = *device.allocate(16);
    const auto r = static_cast<float>(comm.rank());
    expect(static_cast<bool>(device.write(buffer, floats({r, 1, 2 * r, -r}))), "write");
    const Status reduced = comm.all_reduce(buffer, ElementType::f32, ReduceOp::sum);
    expect(static_cast<bool>(reduced), "all_reduce: " + (reduced ? "" : reduced.error().report()));
    const float n = static_cast<float>(comm.size());
    const float ranks = n * (n - 1) / 2;
    auto read = device.read(buffer);
    expect(read && as_floats(*read) == std::vector<float>{ranks, n, 2 * ranks, -ranks},
           "the sum over the ranks");
}

// A claimed byte on rank 1 is never reduced: every rank's buffer is claimed with rank 1's root,
// named on rank 1, and the collective as the hop; the call succeeds on every rank.
void a_claimed_source_on_rank_1_claims_every_buffer(mpi::Communicator& comm, Client& device) {
    Handle buffer = *device.allocate(16);
    expect(static_cast<bool>(device.write(buffer, floats({1, 2, 3, 4}))), "write");
    if (comm.rank() == 1) {
        expect(static_cast<bool>(device.launch("fail", LaunchConfig::linear(1),
                                               {{buffer, AccessMode::Write}}, KernelArgs().u64(7))),
               "launch of fail");
    }
    const Status reduced = comm.all_reduce(buffer, ElementType::f32, ReduceOp::max);
    expect(static_cast<bool>(reduced), "all_reduce over a claimed source is taken");
    auto read = device.read(buffer);
    expect(!read, "a read of a buffer reduced with a claimed source fails");
    if (read) {
        return;
    }
    const std::string report = read.error().report();
    expect(read.error().kind() == ErrorKind::Unwritten, "Unwritten: " + report);
    expect(report.find("kernel 'fail' failed with code 7 on device 0 of rank 1") != std::string::npos,
           "the root named on rank 1: " + report);
    if (comm.rank() != 1) {
        expect(report.find("skipped 'mpi all_reduce' on device 0 of rank " +
                           std::to_string(comm.rank())) != std::string::npos,
               "the collective as the hop: " + report);
    }
}

// A buffer of another size on one rank is refused on every rank, and nothing changes.
void a_size_mismatch_is_refused_everywhere(mpi::Communicator& comm, Client& device) {
    Handle buffer = *device.allocate(comm.rank() == comm.size() - 1 ? 8 : 16);
    expect(static_cast<bool>(device.write(buffer, floats(comm.rank() == comm.size() - 1
                                                             ? std::vector<float>{5, 5}
                                                             : std::vector<float>{5, 5, 5, 5}))),
           "write");
    const Status refused = comm.all_reduce(buffer, ElementType::f32, ReduceOp::sum);
    expect(!refused && refused.error().kind() == ErrorKind::InvalidArgument,
           "a size mismatch is InvalidArgument on every rank");
    auto read = device.read(buffer);
    expect(read && as_floats(*read)[0] == 5.0f, "a refused collective changes nothing");
}

// A broadcast copies the root's bytes; a claimed root claims every other rank's buffer.
void a_broadcast_copies_the_root_or_spreads_its_failure(mpi::Communicator& comm, Client& device) {
    Handle buffer = *device.allocate(8);
    const auto r = static_cast<float>(comm.rank());
    expect(static_cast<bool>(device.write(buffer, floats({r, r}))), "write");
    expect(static_cast<bool>(comm.broadcast(buffer, 1)), "broadcast from rank 1");
    auto read = device.read(buffer);
    expect(read && as_floats(*read) == std::vector<float>{1, 1}, "rank 1's bytes everywhere");
    if (comm.rank() == 0) {
        expect(static_cast<bool>(device.launch("fail", LaunchConfig::linear(1),
                                               {{buffer, AccessMode::Write}}, KernelArgs().u64(9))),
               "launch of fail");
    }
    expect(static_cast<bool>(comm.broadcast(buffer, 0)), "broadcast of a claimed root is taken");
    auto spread = device.read(buffer);
    expect(!spread && spread.error().report().find("code 9 on device 0 of rank 0") !=
                          std::string::npos,
           "the root's failure everywhere");
    const Status outside = comm.broadcast(buffer, comm.size());
    expect(!outside && outside.error().kind() == ErrorKind::InvalidArgument,
           "a root outside the communicator is InvalidArgument");
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
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
        auto comm = mpi::Communicator::create(MPI_COMM_WORLD, device);
        expect(static_cast<bool>(comm), "create");
        a_sum_reaches_every_rank(*comm, device);
        a_claimed_source_on_rank_1_claims_every_buffer(*comm, device);
        a_size_mismatch_is_refused_everywhere(*comm, device);
        a_broadcast_copies_the_root_or_spreads_its_failure(*comm, device);
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
