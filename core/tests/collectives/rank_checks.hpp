#pragma once

// Checks of collectives between ranks of processes, each rank giving buffers of one device, run
// alike by every rank of a job: the MPI communicator's (mpi/tests) and the NCCL communicator's
// (cuda/tests), and a job's own (sim/tests, through an adapter). A check is a template over the
// communicator, whose calls have the same names and promises on every transport; what differs
// is what reports call the work a claimed source skipped (`hop_name`). Every check that fails
// prints the rank and what it saw.

#include <tandem/core/client.hpp>
#include <tandem/core/collectives.hpp>
#include <tandem/core/fault.hpp>
#include <tandem/job.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace tandem::rank_checks {

/// This process's rank, as failed checks name it.
inline int rank = 0;
/// The checks that failed on this rank.
inline int failures = 0;
/// What the communicator calls its collectives in reports: "mpi" for "mpi all_reduce".
inline const char* prefix = "";
/// What reports call the work on this rank that `collective` ("all_reduce", "recv") skipped:
/// "mpi all_reduce" through MPI (`prefix` and the collective) unless a transport says otherwise.
inline std::function<std::string(const std::string& collective)> hop_name =
    [](const std::string& collective) { return std::string(prefix) + " " + collective; };

inline void expect(bool holds, const std::string& what) {
    if (!holds) {
        std::fprintf(stderr, "rank %d: check failed: %s\n", rank, what.c_str());
        ++failures;
    }
}

template <typename T>
std::vector<std::byte> bytes_of_values(const std::vector<T>& values) {
    std::vector<std::byte> bytes(values.size() * sizeof(T));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return bytes;
}

template <typename T>
std::vector<T> values_of_bytes(const std::vector<std::byte>& bytes) {
    std::vector<T> values(bytes.size() / sizeof(T));
    std::memcpy(values.data(), bytes.data(), values.size() * sizeof(T));
    return values;
}

inline std::vector<std::byte> floats(const std::vector<float>& values) {
    return bytes_of_values(values);
}

inline std::vector<float> as_floats(const std::vector<std::byte>& bytes) {
    return values_of_bytes<float>(bytes);
}

inline std::vector<std::byte> bytes_of(std::size_t count, int value) {
    return std::vector<std::byte>(count, static_cast<std::byte>(value));
}

/// What an all-gather of the checks' inputs gives on each of `n` ranks: rank r's 4 bytes of
/// r + 1, in rank order.
inline std::vector<std::byte> inputs_in_rank_order(int n) {
    std::vector<std::byte> expected;
    for (int r = 0; r < n; ++r) {
        const std::vector<std::byte> part = bytes_of(4, r + 1);
        expected.insert(expected.end(), part.begin(), part.end());
    }
    return expected;
}

// Every rank's buffer becomes the sum over the ranks, in place.
template <typename Communicator>
void a_sum_reaches_every_rank(Communicator& comm, Client& device) {
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

/// `values` (bf16 bits) on `device`, reduced by `op` through `comm`: what the buffer holds
/// after, or nothing when a step failed (each failure is counted).
template <typename Communicator>
std::vector<std::uint16_t> reduced_bf16(Communicator& comm, Client& device,
                                        const std::vector<std::uint16_t>& values, ReduceOp op) {
    Handle buffer = *device.allocate(values.size() * 2);
    expect(static_cast<bool>(device.write(buffer, bytes_of_values(values))), "write");
    const Status reduced = comm.all_reduce(buffer, ElementType::bf16, op);
    expect(static_cast<bool>(reduced),
           "bf16 all_reduce: " + (reduced ? "" : reduced.error().report()));
    auto read = device.read(buffer);
    return read ? values_of_bytes<std::uint16_t>(*read) : std::vector<std::uint16_t>{};
}

// A bf16 sum over the ranks rounds to nearest even, the same bytes as a device's `combine`.
// Only ranks 0 and 1 give numbers and the others +0, which changes no sum, so the bytes are
// the same whatever order the library folds the ranks in: 1 + 2^-8 and -1 - 2^-8 are ties that
// go to even (1, -1), as (1 + 2^-7) + 2^-8 does, up, and 256 + 3 (260); 2^24 + 1 loses the 1,
// and the largest finite value twice is infinity.
template <typename Communicator>
void a_bf16_sum_rounds_to_nearest_even_on_every_rank(Communicator& comm, Client& device) {
    std::vector<std::uint16_t> mine(6, 0x0000);
    if (comm.rank() == 0) {
        mine = {0x3F80, 0x3F81, 0x4380, 0xBF80, 0x7F7F, 0x4B80};
    } else if (comm.rank() == 1) {
        mine = {0x3B80, 0x3B80, 0x4040, 0xBB80, 0x7F7F, 0x3F80};
    }
    const std::vector<std::uint16_t> sum{0x3F80, 0x3F82, 0x4382, 0xBF80, 0x7F80, 0x4B80};
    expect(reduced_bf16(comm, device, mine, ReduceOp::sum) == sum,
           "the bf16 sum over the ranks, rounded to nearest even");
    // A reduce-scatter of `mine` once for every rank gives every rank the same sum.
    std::vector<std::uint16_t> chunks;
    for (int r = 0; r < comm.size(); ++r) {
        chunks.insert(chunks.end(), mine.begin(), mine.end());
    }
    Handle input = *device.allocate(chunks.size() * 2);
    Handle output = *device.allocate(mine.size() * 2);
    expect(static_cast<bool>(device.write(input, bytes_of_values(chunks))), "write");
    expect(static_cast<bool>(comm.reduce_scatter(input, output, ElementType::bf16, ReduceOp::sum)),
           "bf16 reduce_scatter");
    auto read = device.read(output);
    expect(read && values_of_bytes<std::uint16_t>(*read) == sum,
           "chunk r of the bf16 sum on rank r");
}

// bf16 max and min let a NaN give way to a number, order -0 below +0, and give the canonical NaN
// only when every rank has a NaN. Ranks past 1 give NaNs, which give way to every number.
template <typename Communicator>
void bf16_max_and_min_let_a_nan_give_way(Communicator& comm, Client& device) {
    std::vector<std::uint16_t> mine(4, 0x7FC0);
    if (comm.rank() == 0) {
        mine = {0x7FC1, 0xBF80, 0x8000, 0x7FC0};
    } else if (comm.rank() == 1) {
        mine = {0xBF80, 0xC000, 0x0000, 0xFFC1};
    }
    expect(reduced_bf16(comm, device, mine, ReduceOp::max) ==
               std::vector<std::uint16_t>{0xBF80, 0xBF80, 0x0000, 0x7FFF},
           "the bf16 max over the ranks");
    expect(reduced_bf16(comm, device, mine, ReduceOp::min) ==
               std::vector<std::uint16_t>{0xBF80, 0xC000, 0x8000, 0x7FFF},
           "the bf16 min over the ranks");
    Handle odd = *device.allocate(7);
    expect(static_cast<bool>(device.write(odd, bytes_of(7, 1))), "write");
    const Status refused = comm.all_reduce(odd, ElementType::bf16, ReduceOp::max);
    expect(!refused && refused.error().kind() == ErrorKind::InvalidArgument &&
               refused.error().message().find("2-byte elements") != std::string::npos,
           "a bf16 buffer of an odd number of bytes is refused, naming the element size");
}

// A claimed byte on rank 1 is never reduced: every rank's buffer is claimed with rank 1's root,
// named on rank 1, and the collective as the hop; the call succeeds on every rank.
template <typename Communicator>
void a_claimed_source_on_rank_1_claims_every_buffer(Communicator& comm, Client& device) {
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
    expect(
        report.find("kernel 'fail' failed with code 7 on device 0 of rank 1") != std::string::npos,
        "the root named on rank 1: " + report);
    if (comm.rank() != 1) {
        expect(report.find("skipped '" + hop_name("all_reduce") + "' on device 0 of rank " +
                           std::to_string(comm.rank())) != std::string::npos,
               "the collective as the hop: " + report);
    }
}

// A buffer of another size on one rank is refused on every rank, and nothing changes.
template <typename Communicator>
void a_size_mismatch_is_refused_everywhere(Communicator& comm, Client& device) {
    Handle buffer = *device.allocate(comm.rank() == comm.size() - 1 ? 8 : 16);
    expect(static_cast<bool>(device.write(
               buffer, floats(comm.rank() == comm.size() - 1 ? std::vector<float>{5, 5}
                                                             : std::vector<float>{5, 5, 5, 5}))),
           "write");
    const Status refused = comm.all_reduce(buffer, ElementType::f32, ReduceOp::sum);
    expect(!refused && refused.error().kind() == ErrorKind::InvalidArgument,
           "a size mismatch is InvalidArgument on every rank");
    auto read = device.read(buffer);
    expect(read && as_floats(*read)[0] == 5.0f, "a refused collective changes nothing");
}

// A broadcast copies the root's bytes; a claimed root claims every other rank's buffer.
template <typename Communicator>
void a_broadcast_copies_the_root_or_spreads_its_failure(Communicator& comm, Client& device) {
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
    expect(!spread &&
               spread.error().report().find("code 9 on device 0 of rank 0") != std::string::npos,
           "the root's failure everywhere");
    const Status outside = comm.broadcast(buffer, comm.size());
    expect(!outside && outside.error().kind() == ErrorKind::InvalidArgument,
           "a root outside the communicator is InvalidArgument");
}

// Every rank's output is every rank's input in rank order; a claimed input on the last rank
// claims every output, its own included.
template <typename Communicator>
void all_gather_orders_inputs_by_rank(Communicator& comm, Client& device) {
    const int n = comm.size();
    Handle input = *device.allocate(4);
    Handle output = *device.allocate(4 * static_cast<std::uint64_t>(n));
    expect(static_cast<bool>(device.write(input, bytes_of(4, comm.rank() + 1))), "write");
    expect(static_cast<bool>(comm.all_gather(input, output)), "all_gather");
    const std::vector<std::byte> expected = inputs_in_rank_order(n);
    auto read = device.read(output);
    expect(read && *read == expected, "the inputs in rank order");
    if (comm.rank() == n - 1) {
        expect(static_cast<bool>(device.launch("fail", LaunchConfig::linear(1),
                                               {{input, AccessMode::Write}}, KernelArgs().u64(5))),
               "launch of fail");
    }
    expect(static_cast<bool>(comm.all_gather(input, output)), "all_gather of a claimed input");
    auto claimed = device.read(output);
    expect(!claimed && claimed.error().report().find("code 5 on device 0 of rank " +
                                                     std::to_string(n - 1)) != std::string::npos,
           "every output claimed with the last rank's root");
    const Status refused = comm.all_gather(input, input);
    expect(!refused && refused.error().kind() == ErrorKind::InvalidArgument,
           "an output that is not size() times the input is refused");
}

// Each rank's output is the sum of its chunk over the ranks.
template <typename Communicator>
void reduce_scatter_sums_each_ranks_chunk(Communicator& comm, Client& device) {
    const int n = comm.size();
    Handle input = *device.allocate(8 * static_cast<std::uint64_t>(n));
    Handle output = *device.allocate(8);
    std::vector<float> values;
    for (int r = 0; r < n; ++r) {
        values.push_back(static_cast<float>(comm.rank() + 1));
        values.push_back(static_cast<float>(r));
    }
    expect(static_cast<bool>(device.write(input, floats(values))), "write");
    expect(static_cast<bool>(comm.reduce_scatter(input, output, ElementType::f32, ReduceOp::sum)),
           "reduce_scatter");
    const auto total = static_cast<float>(n * (n + 1) / 2);
    auto read = device.read(output);
    expect(
        read && as_floats(*read) == std::vector<float>{total, static_cast<float>(n * comm.rank())},
        "chunk r of the sum on rank r");
}

// Rank 0 sends to rank 1: the bytes land; a claimed source is refused by the sender with its
// Unwritten error and claims the receiver's target; a size mismatch is refused on both sides.
template <typename Communicator>
void send_and_recv_follow_k2(Communicator& comm, Client& device) {
    if (comm.rank() > 1) {
        return;  // Only ranks 0 and 1 meet.
    }
    Handle buffer = *device.allocate(8);
    expect(static_cast<bool>(device.write(buffer, bytes_of(8, 1))), "write");
    if (comm.rank() == 0) {
        expect(static_cast<bool>(device.write(buffer, bytes_of(8, 6))), "write");
        expect(static_cast<bool>(comm.send(buffer, 1)), "a clean send");
        expect(static_cast<bool>(device.launch("fail", LaunchConfig::linear(1),
                                               {{buffer, AccessMode::Write}}, KernelArgs().u64(8))),
               "launch of fail");
        const Status refused = comm.send(buffer, 1);
        expect(!refused && refused.error().kind() == ErrorKind::Unwritten,
               "a claimed source is refused with its Unwritten error");
        Handle wide = *device.allocate(16);
        (void)device.write(wide, bytes_of(16, 2));
        const Status mismatch = comm.send(wide, 1);
        expect(!mismatch && mismatch.error().kind() == ErrorKind::InvalidArgument,
               "a source of another size than the target is refused");
        const Status self = comm.send(wide, 0);
        expect(!self && self.error().kind() == ErrorKind::InvalidArgument, "no send to itself");
        return;
    }
    expect(static_cast<bool>(comm.recv(buffer, 0)), "a clean recv");
    auto landed = device.read(buffer);
    expect(landed && *landed == bytes_of(8, 6), "the sent bytes land");
    expect(static_cast<bool>(comm.recv(buffer, 0)), "a recv of a claimed source succeeds");
    auto claimed = device.read(buffer);
    expect(!claimed &&
               claimed.error().report().find("skipped '" + hop_name("recv") +
                                             "' on device 0 of rank 1") != std::string::npos &&
               claimed.error().report().find("code 8 on device 0 of rank 0") != std::string::npos,
           "the target claimed with the sender's root and the hop: " +
               (claimed ? std::string() : claimed.error().report()));
    (void)device.write(buffer, bytes_of(8, 3));
    const Status mismatch = comm.recv(buffer, 0);
    expect(!mismatch && mismatch.error().kind() == ErrorKind::InvalidArgument,
           "a recv of a source of another size is refused");
    auto unchanged = device.read(buffer);
    expect(unchanged && *unchanged == bytes_of(8, 3), "a refused recv changes nothing");
}

// A collective that lands releases the claims its destination had (C3): an all-gather's output
// and a broadcast's buffers past the root, each claimed before by a failing kernel.
template <typename Communicator>
void a_collective_that_lands_releases_a_claimed_destination(Communicator& comm, Client& device) {
    const int n = comm.size();
    Handle input = *device.allocate(4);
    Handle output = *device.allocate(4 * static_cast<std::uint64_t>(n));
    expect(static_cast<bool>(device.write(input, bytes_of(4, comm.rank() + 1))), "write");
    expect(static_cast<bool>(device.launch("fail", LaunchConfig::linear(1),
                                           {{output, AccessMode::Write}}, KernelArgs().u64(4))),
           "launch of fail");
    expect(static_cast<bool>(comm.all_gather(input, output)), "all_gather into a claimed output");
    const std::vector<std::byte> expected = inputs_in_rank_order(n);
    auto gathered = device.read(output);
    expect(gathered && *gathered == expected,
           "the claimed output released, holding the inputs: " +
               (gathered ? std::string() : gathered.error().report()));
    Handle buffer = *device.allocate(8);
    if (comm.rank() == 0) {
        expect(static_cast<bool>(device.write(buffer, bytes_of(8, 7))), "write");
    } else {
        expect(static_cast<bool>(device.launch("fail", LaunchConfig::linear(1),
                                               {{buffer, AccessMode::Write}}, KernelArgs().u64(4))),
               "launch of fail");
    }
    expect(static_cast<bool>(comm.broadcast(buffer, 0)), "broadcast into claimed buffers");
    auto broadcast = device.read(buffer);
    expect(broadcast && *broadcast == bytes_of(8, 7),
           "every claimed buffer released, holding the root's bytes: " +
               (broadcast ? std::string() : broadcast.error().report()));
}

// A destination is written after the work enqueued before the collective that reads it: a copy
// of the output enqueued just before an all-gather copies the bytes the output held then.
template <typename Communicator>
void a_destination_is_written_after_the_work_reading_it(Communicator& comm, Client& device) {
    const std::uint64_t bytes = 4 * static_cast<std::uint64_t>(comm.size());
    Handle input = *device.allocate(4);
    Handle output = *device.allocate(bytes);
    Handle before = *device.allocate(bytes);
    expect(static_cast<bool>(device.write(input, bytes_of(4, comm.rank() + 1))), "write");
    expect(static_cast<bool>(device.write(output, bytes_of(bytes, 9))), "write");
    expect(static_cast<bool>(device.copy(output, before)), "copy of the output");
    expect(static_cast<bool>(comm.all_gather(input, output)), "all_gather");
    auto copied = device.read(before);
    expect(copied && *copied == bytes_of(bytes, 9),
           "the copy enqueued first holds the output's earlier bytes");
}

// An all-gather whose input is its own rank's part of the output (in place, as NCCL allows)
// gives every rank the inputs in rank order.
template <typename Communicator>
void an_all_gather_in_place_orders_inputs_by_rank(Communicator& comm, Client& device) {
    const int n = comm.size();
    Handle output = *device.allocate(4 * static_cast<std::uint64_t>(n));
    expect(static_cast<bool>(device.write(output, bytes_of(4 * static_cast<std::size_t>(n), 0))),
           "write");
    Handle input = *output.slice(4 * static_cast<std::uint64_t>(comm.rank()), 4);
    expect(static_cast<bool>(device.write(input, bytes_of(4, comm.rank() + 1))), "write");
    const Status gathered = comm.all_gather(input, output);
    expect(static_cast<bool>(gathered),
           "all_gather in place: " + (gathered ? std::string() : gathered.error().report()));
    const std::vector<std::byte> expected = inputs_in_rank_order(n);
    auto read = device.read(output);
    expect(read && *read == expected, "the inputs in rank order, in place");
}

// Last, as it loses rank 1's device for good: a lost device is a failed source (D1) like a
// claimed byte, so every other rank's buffer is claimed with the loss, named on rank 1.
template <typename Communicator>
void a_lost_device_on_rank_1_claims_every_other_buffer(Communicator& comm, Client& device) {
    Handle buffer = *device.allocate(8);
    expect(static_cast<bool>(device.write(buffer, floats({1, 1}))), "write");
    if (comm.rank() == 1) {
        expect(static_cast<bool>(device.inject(DeviceLossFault{0})), "the loss of rank 1's device");
    }
    const Status reduced = comm.all_reduce(buffer, ElementType::f32, ReduceOp::sum);
    if (comm.rank() == 1) {
        return;  // Its own calls fail from now on (D1); what it said is what the others got.
    }
    expect(static_cast<bool>(reduced), "all_reduce beside a lost device is taken");
    auto read = device.read(buffer);
    expect(!read && read.error().report().find("device 0 of rank 1 is lost") != std::string::npos,
           "the loss named on rank 1: " + (read ? std::string() : read.error().report()));
}

/// Every check above but the lost device's (which ends the device it loses), in order.
template <typename Communicator>
void every_check(Communicator& comm, Client& device) {
    a_sum_reaches_every_rank(comm, device);
    a_bf16_sum_rounds_to_nearest_even_on_every_rank(comm, device);
    bf16_max_and_min_let_a_nan_give_way(comm, device);
    a_claimed_source_on_rank_1_claims_every_buffer(comm, device);
    a_size_mismatch_is_refused_everywhere(comm, device);
    a_broadcast_copies_the_root_or_spreads_its_failure(comm, device);
    all_gather_orders_inputs_by_rank(comm, device);
    reduce_scatter_sums_each_ranks_chunk(comm, device);
    send_and_recv_follow_k2(comm, device);
    a_collective_that_lands_releases_a_claimed_destination(comm, device);
    a_destination_is_written_after_the_work_reading_it(comm, device);
    an_all_gather_in_place_orders_inputs_by_rank(comm, device);
}

/// The job's verdict, the same on every rank: the failed checks of every rank, counted through
/// `Job::exchange`; rank 0 prints "all checks passed on N ranks" when there are none. The exit
/// code of the rank: 0, or 1.
inline int job_verdict(Job& job) {
    Result<std::vector<std::string>> all = job.exchange(std::to_string(failures));
    int total = all ? 0 : 1;
    for (const std::string& each : all ? *all : std::vector<std::string>{}) {
        total += std::atoi(each.c_str());
    }
    if (rank == 0 && total == 0) {
        std::printf("all checks passed on %u ranks\n", job.world_size());
    }
    return total == 0 ? 0 : 1;
}

}  // namespace tandem::rank_checks
