// The collectives of a job on its ranks simulated in this process (job_ranks.hpp), two and three
// ranks under both of the simulator's schedulers, each rank's call on a thread of its own. The
// oracle: each collective's result, computed on the host from every rank's input, is what every
// rank reads back, and every rank's call succeeds. The faults are job_collective_fault_test.cpp.

#include "bf16_cases.hpp"
#include "job_ranks.hpp"

#include <gmock/gmock.h>

#include <algorithm>
#include <array>
#include <limits>

namespace tandem::conformance {
namespace {

template <typename Kind>
class JobCollectives : public JobRanks<Kind> {};
TYPED_TEST_SUITE(JobCollectives, JobRanksKinds, JobRanksNames);

/// The elements in each rank's buffer of these tests.
constexpr std::size_t elements = 6;

/// Rank `rank`'s input at element `index`: distinct per rank and element, negative at odd
/// elements, so that a sum, a max and a min of the ranks all differ.
template <typename T>
T input_value(std::uint32_t rank, std::size_t index) {
    const T magnitude = static_cast<T>((rank + 1) * 10 + index);
    return index % 2 == 1 ? static_cast<T>(-magnitude) : magnitude;
}

/// Rank `rank`'s input, `count` elements from `first`.
template <typename T>
std::vector<T> input_of(std::uint32_t rank, std::size_t count, std::size_t first = 0) {
    std::vector<T> values(count);
    for (std::size_t index = 0; index < count; ++index) {
        values[index] = input_value<T>(rank, first + index);
    }
    return values;
}

/// `op` of `a` and `b`, as the collectives fold them.
template <typename T>
T reduce(ReduceOp op, T a, T b) {
    switch (op) {
        case ReduceOp::sum:
            return static_cast<T>(a + b);
        case ReduceOp::max:
            return std::max(a, b);
        case ReduceOp::min:
            return std::min(a, b);
    }
    return a;
}

/// `op` of every rank's input, `count` elements from `first`, in rank order.
template <typename T>
std::vector<T> expected_reduction(std::uint32_t ranks, ReduceOp op, std::size_t count,
                                  std::size_t first = 0) {
    std::vector<T> result = input_of<T>(0, count, first);
    for (std::uint32_t rank = 1; rank < ranks; ++rank) {
        const std::vector<T> theirs = input_of<T>(rank, count, first);
        for (std::size_t index = 0; index < count; ++index) {
            result[index] = reduce(op, result[index], theirs[index]);
        }
    }
    return result;
}

/// An all-reduce by `op` of elements of `T` (as `type` names them) on every rank: every rank's
/// call succeeds and every rank reads the reduction of all inputs.
template <typename T, typename Fixture>
void expect_all_reduce(Fixture& test, ElementType type, ReduceOp op) {
    std::vector<Handle> buffers;
    for (std::uint32_t rank = 0; rank < test.world_size(); ++rank) {
        buffers.push_back(test.template values_on<T>(rank, input_of<T>(rank, elements)));
    }
    const std::vector<Status> outcomes = test.on_every_rank([&](std::uint32_t rank) {
        return test.job(rank).all_reduce(buffers[rank], type, op, call_timeout);
    });
    const std::vector<T> expected = expected_reduction<T>(test.world_size(), op, elements);
    for (std::uint32_t rank = 0; rank < test.world_size(); ++rank) {
        ASSERT_TRUE(outcomes[rank]) << "rank " << rank << ": " << outcomes[rank].error().report();
        EXPECT_EQ(test.template read_values<T>(rank, buffers[rank]), expected)
            << "rank " << rank << ", op " << static_cast<int>(op);
    }
}

TYPED_TEST(JobCollectives, an_all_reduce_gives_every_rank_the_sum_max_and_min_of_every_type) {
    for (const ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min}) {
        expect_all_reduce<float>(*this, ElementType::f32, op);
        expect_all_reduce<double>(*this, ElementType::f64, op);
        expect_all_reduce<std::int32_t>(*this, ElementType::i32, op);
        expect_all_reduce<std::int64_t>(*this, ElementType::i64, op);
    }
}

/// An all-reduce by `op` of bf16 on every rank, rank r's buffer holding `inputs[r]`: every
/// rank's call succeeds and every rank reads `expected`.
template <typename Fixture>
void expect_bf16_all_reduce(Fixture& test, ReduceOp op,
                            const std::array<bf16_cases::Values, 3>& inputs,
                            const bf16_cases::Values& expected) {
    std::vector<Handle> buffers;
    for (std::uint32_t rank = 0; rank < test.world_size(); ++rank) {
        buffers.push_back(test.template values_on<std::uint16_t>(rank, inputs[rank]));
    }
    const std::vector<Status> outcomes = test.on_every_rank([&](std::uint32_t rank) {
        return test.job(rank).all_reduce(buffers[rank], ElementType::bf16, op, call_timeout);
    });
    for (std::uint32_t rank = 0; rank < test.world_size(); ++rank) {
        ASSERT_TRUE(outcomes[rank]) << "rank " << rank << ": " << outcomes[rank].error().report();
        EXPECT_EQ(test.template read_values<std::uint16_t>(rank, buffers[rank]), expected)
            << "rank " << rank << ", op " << static_cast<int>(op);
    }
}

// Rank 0 folds in rank order, each step rounded to nearest even: bf16_cases.hpp's sums of three
// ranks come out otherwise in any other order. The bytes are those of the devices of one
// runtime (collective_test.cpp): the same kernel folds.
TYPED_TEST(JobCollectives, a_bf16_sum_folds_in_rank_order_rounding_each_step_to_nearest_even) {
    expect_bf16_all_reduce(*this, ReduceOp::sum, bf16_cases::sum_inputs,
                           bf16_cases::sum_of_first(this->world_size()));
}

TYPED_TEST(JobCollectives, bf16_max_and_min_skip_nans_and_order_minus_zero_below_plus_zero) {
    expect_bf16_all_reduce(*this, ReduceOp::max, bf16_cases::order_inputs,
                           bf16_cases::max_of_first(this->world_size()));
    expect_bf16_all_reduce(*this, ReduceOp::min, bf16_cases::order_inputs,
                           bf16_cases::min_of_first(this->world_size()));
}

// The sum of integers wraps, as their addition on the device does.
TYPED_TEST(JobCollectives, an_all_reduce_sum_of_integers_wraps) {
    std::vector<Handle> buffers;
    for (std::uint32_t rank = 0; rank < this->world_size(); ++rank) {
        buffers.push_back(this->template values_on<std::int32_t>(
            rank, {std::numeric_limits<std::int32_t>::max(), 1}));
    }
    const std::vector<Status> outcomes = this->on_every_rank([&](std::uint32_t rank) {
        return this->job(rank).all_reduce(buffers[rank], ElementType::i32, ReduceOp::sum,
                                          call_timeout);
    });
    const auto max = static_cast<std::uint32_t>(std::numeric_limits<std::int32_t>::max());
    const auto wrapped = static_cast<std::int32_t>(max * this->world_size());
    for (std::uint32_t rank = 0; rank < this->world_size(); ++rank) {
        ASSERT_TRUE(outcomes[rank]) << outcomes[rank].error().report();
        EXPECT_EQ(
            this->template read_values<std::int32_t>(rank, buffers[rank]),
            (std::vector<std::int32_t>{wrapped, static_cast<std::int32_t>(this->world_size())}));
    }
}

TYPED_TEST(JobCollectives, a_broadcast_gives_every_rank_the_roots_bytes_from_every_root) {
    std::vector<Handle> buffers;
    for (std::uint32_t rank = 0; rank < this->world_size(); ++rank) {
        buffers.push_back(this->bytes_on(rank, 24, static_cast<std::uint8_t>(rank + 1)));
    }
    for (std::uint32_t root = 0; root < this->world_size(); ++root) {
        ASSERT_TRUE(this->device(root).write(buffers[root],
                                             filled(24, static_cast<std::uint8_t>(40 + root))));
        const std::vector<Status> outcomes = this->on_every_rank([&](std::uint32_t rank) {
            return this->job(rank).broadcast(buffers[rank], root, call_timeout);
        });
        for (std::uint32_t rank = 0; rank < this->world_size(); ++rank) {
            ASSERT_TRUE(outcomes[rank]) << outcomes[rank].error().report();
            EXPECT_EQ(this->read_bytes(rank, buffers[rank]),
                      filled(24, static_cast<std::uint8_t>(40 + root)))
                << "rank " << rank << ", root " << root;
        }
    }
}

TYPED_TEST(JobCollectives, an_all_gather_puts_rank_rs_input_at_chunk_r_of_every_output) {
    constexpr std::uint64_t chunk = 16;
    std::vector<Handle> inputs;
    std::vector<Handle> outputs;
    std::vector<std::byte> expected;
    for (std::uint32_t rank = 0; rank < this->world_size(); ++rank) {
        inputs.push_back(this->bytes_on(rank, chunk, static_cast<std::uint8_t>(rank + 1)));
        outputs.push_back(this->bytes_on(rank, chunk * this->world_size(), 0));
        const std::vector<std::byte> mine = filled(chunk, static_cast<std::uint8_t>(rank + 1));
        expected.insert(expected.end(), mine.begin(), mine.end());
    }
    const std::vector<Status> outcomes = this->on_every_rank([&](std::uint32_t rank) {
        return this->job(rank).all_gather(inputs[rank], outputs[rank], call_timeout);
    });
    for (std::uint32_t rank = 0; rank < this->world_size(); ++rank) {
        ASSERT_TRUE(outcomes[rank]) << outcomes[rank].error().report();
        EXPECT_EQ(this->read_bytes(rank, outputs[rank]), expected) << "rank " << rank;
    }
}

// In place: each rank's input is its own chunk of its output.
TYPED_TEST(JobCollectives, an_all_gather_in_place_gathers_every_chunk) {
    constexpr std::uint64_t chunk = 8;
    std::vector<Handle> outputs;
    std::vector<std::byte> expected;
    for (std::uint32_t rank = 0; rank < this->world_size(); ++rank) {
        outputs.push_back(this->bytes_on(rank, chunk * this->world_size(), 0));
        ASSERT_TRUE(this->device(rank).write(*outputs[rank].slice(rank * chunk, chunk),
                                             filled(chunk, static_cast<std::uint8_t>(9 + rank))));
        const std::vector<std::byte> mine = filled(chunk, static_cast<std::uint8_t>(9 + rank));
        expected.insert(expected.end(), mine.begin(), mine.end());
    }
    const std::vector<Status> outcomes = this->on_every_rank([&](std::uint32_t rank) {
        return this->job(rank).all_gather(*outputs[rank].slice(rank * chunk, chunk), outputs[rank],
                                          call_timeout);
    });
    for (std::uint32_t rank = 0; rank < this->world_size(); ++rank) {
        ASSERT_TRUE(outcomes[rank]) << outcomes[rank].error().report();
        EXPECT_EQ(this->read_bytes(rank, outputs[rank]), expected) << "rank " << rank;
    }
}

/// A reduce-scatter by `op` of elements of `T`: rank r reads chunk r of the reduction.
template <typename T, typename Fixture>
void expect_reduce_scatter(Fixture& test, ElementType type, ReduceOp op) {
    const std::size_t total = elements * test.world_size();
    std::vector<Handle> inputs;
    std::vector<Handle> outputs;
    for (std::uint32_t rank = 0; rank < test.world_size(); ++rank) {
        inputs.push_back(test.template values_on<T>(rank, input_of<T>(rank, total)));
        outputs.push_back(test.template values_on<T>(rank, std::vector<T>(elements)));
    }
    const std::vector<Status> outcomes = test.on_every_rank([&](std::uint32_t rank) {
        return test.job(rank).reduce_scatter(inputs[rank], outputs[rank], type, op, call_timeout);
    });
    for (std::uint32_t rank = 0; rank < test.world_size(); ++rank) {
        ASSERT_TRUE(outcomes[rank]) << outcomes[rank].error().report();
        EXPECT_EQ(test.template read_values<T>(rank, outputs[rank]),
                  expected_reduction<T>(test.world_size(), op, elements, rank * elements))
            << "rank " << rank << ", op " << static_cast<int>(op);
    }
}

TYPED_TEST(JobCollectives, a_reduce_scatter_gives_rank_r_chunk_r_of_the_reduction) {
    expect_reduce_scatter<float>(*this, ElementType::f32, ReduceOp::sum);
    expect_reduce_scatter<double>(*this, ElementType::f64, ReduceOp::min);
    expect_reduce_scatter<std::int32_t>(*this, ElementType::i32, ReduceOp::max);
    expect_reduce_scatter<std::int64_t>(*this, ElementType::i64, ReduceOp::sum);
}

// A ring: rank r sends to rank r + 1 and receives from rank r - 1. Rank 0 sends first and every
// other rank receives first, since a send returns only once its receive has copied it.
TYPED_TEST(JobCollectives, sends_around_a_ring_land_in_the_matching_receives) {
    const std::uint32_t ranks = this->world_size();
    std::vector<Handle> sources;
    std::vector<Handle> targets;
    for (std::uint32_t rank = 0; rank < ranks; ++rank) {
        sources.push_back(this->bytes_on(rank, 32, static_cast<std::uint8_t>(20 + rank)));
        targets.push_back(this->bytes_on(rank, 32, 0));
    }
    const std::vector<Status> outcomes = this->on_every_rank([&](std::uint32_t rank) {
        Job& job = this->job(rank);
        const std::uint32_t next = (rank + 1) % ranks;
        const std::uint32_t previous = (rank + ranks - 1) % ranks;
        auto send = [&] { return job.send(next, sources[rank], call_timeout); };
        auto receive = [&] { return job.recv(previous, targets[rank], call_timeout); };
        const Status first = rank == 0 ? send() : receive();
        if (!first) {
            return first;
        }
        return rank == 0 ? receive() : send();
    });
    for (std::uint32_t rank = 0; rank < ranks; ++rank) {
        ASSERT_TRUE(outcomes[rank]) << outcomes[rank].error().report();
        const std::uint32_t previous = (rank + ranks - 1) % ranks;
        EXPECT_EQ(this->read_bytes(rank, targets[rank]),
                  filled(32, static_cast<std::uint8_t>(20 + previous)))
            << "rank " << rank;
        EXPECT_EQ(this->read_bytes(rank, sources[rank]),
                  filled(32, static_cast<std::uint8_t>(20 + rank)));
    }
}

// Collectives one after another keep the job's order of calls: the results of the first do not
// leak into the second.
TYPED_TEST(JobCollectives, collectives_one_after_another_each_give_their_own_result) {
    std::vector<Handle> buffers;
    for (std::uint32_t rank = 0; rank < this->world_size(); ++rank) {
        buffers.push_back(this->template values_on<std::int64_t>(rank, {rank + 1}));
    }
    const std::vector<Status> outcomes = this->on_every_rank([&](std::uint32_t rank) {
        Job& job = this->job(rank);
        Status status =
            job.all_reduce(buffers[rank], ElementType::i64, ReduceOp::sum, call_timeout);
        if (status) {
            status = job.all_reduce(buffers[rank], ElementType::i64, ReduceOp::max, call_timeout);
        }
        return status ? job.broadcast(buffers[rank], this->last_rank(), call_timeout) : status;
    });
    const auto sum = static_cast<std::int64_t>(this->world_size() * (this->world_size() + 1) / 2);
    for (std::uint32_t rank = 0; rank < this->world_size(); ++rank) {
        ASSERT_TRUE(outcomes[rank]) << outcomes[rank].error().report();
        EXPECT_EQ(this->template read_values<std::int64_t>(rank, buffers[rank]),
                  std::vector<std::int64_t>{sum});
    }
}

}  // namespace
}  // namespace tandem::conformance
