#pragma once

// The fixture of the job collectives' fault tests (job_collective_fault_test.cpp,
// job_rank_loss_test.cpp): the ranks of a job in one process (job_ranks.hpp), and what the
// faults' oracle asks of every rank. A claimed source claims every rank's destination with one
// root (K1); a failed step ends every rank's call with the same error; a rank's loss ends every
// other rank's call with `DeviceLost` naming it, never with the `PeerUnreachable` of a wait run
// out (K5).

#include "job_ranks.hpp"

#include <gmock/gmock.h>

#include <functional>
#include <future>
#include <optional>
#include <string>
#include <vector>

namespace tandem::conformance {

/// The ranks of a job, and the expectations of the fault tests.
template <typename Kind>
class JobFaultFixture : public JobRanks<Kind> {
protected:
    /// A collective of every rank: rank r's call, given its buffers.
    using Call = std::function<Status(std::uint32_t rank)>;

    /// Expects rank `rank`'s call to have succeeded (`outcome`) and its `buffer` to read as
    /// claimed, all of it, by the fail kernel's `code` on rank `from`, with the hop of the
    /// reading rank's own copy first in its chain (the chain runs from the reader back to the root)
    /// (K1) unless `hop` is false.
    void expect_claimed_on(std::uint32_t rank, const Status& outcome, const Handle& buffer,
                           std::uint32_t code, std::uint32_t from, bool hop = true) {
        ASSERT_TRUE(outcome) << "rank " << rank << ": " << outcome.error().report();
        std::optional<Error> error = this->read_error(rank, buffer);
        ASSERT_TRUE(error) << "rank " << rank << " took bytes of a claimed source";
        ASSERT_EQ(error->kind(), ErrorKind::Unwritten) << error->report();
        EXPECT_EQ(root_code(*error), code) << error->report();
        const auto* root = root_of(*error)->details_as<KernelFailedDetails>();
        ASSERT_NE(root, nullptr) << error->report();
        EXPECT_EQ(root->device, this->device(from).service()) << error->report();
        EXPECT_THAT(error->report(),
                    ::testing::HasSubstr("code " + std::to_string(code) + " on device 0 of rank " +
                                         std::to_string(from)));
        if (hop) {
            const UnwrittenDetails* details = unwritten(*error);
            ASSERT_FALSE(details->chain.empty()) << error->report();
            EXPECT_EQ(details->chain.front().device, this->device(rank).service())
                << error->report();
        }
    }
    /// `expect_claimed_on` for every rank r, its call's `outcomes[r]` and its `buffers[r]`: the
    /// same root on every rank.
    void expect_claimed_everywhere(const std::vector<Status>& outcomes,
                                   const std::vector<Handle>& buffers, std::uint32_t code,
                                   std::uint32_t from) {
        for (std::uint32_t rank = 0; rank < this->world_size(); ++rank) {
            expect_claimed_on(rank, outcomes[rank], buffers[rank], code, from);
        }
    }

    /// Expects every rank's call to have failed alike: `kind`, the same words on every rank,
    /// saying `words`.
    void expect_the_same_error(const std::vector<Status>& outcomes, ErrorKind kind,
                               const std::string& words) {
        for (std::uint32_t rank = 0; rank < this->world_size(); ++rank) {
            ASSERT_FALSE(outcomes[rank]) << "rank " << rank << " passed";
            EXPECT_EQ(outcomes[rank].error().kind(), kind)
                << "rank " << rank << ": " << outcomes[rank].error().report();
            EXPECT_THAT(outcomes[rank].error().message(), ::testing::HasSubstr(words))
                << "rank " << rank;
            EXPECT_EQ(outcomes[rank].error().message(), outcomes[0].error().message())
                << "rank " << rank << " and rank 0 disagree";
        }
    }

    /// Ends rank `dying` while every other rank is inside `call`: each survivor's call fails with
    /// `DeviceLost` naming it, and so does the survivors' next call. `published`: the names the
    /// survivors' calls publish first; once `dying` found every one, each survivor is inside its
    /// call. The dying rank waits at a gate the test opens then, never for a time.
    void expect_a_rank_ended_mid_call_fails_the_others(std::uint32_t dying, const Call& call,
                                                       const std::vector<std::string>& published) {
        std::promise<void> gate;
        std::shared_future<void> opened = gate.get_future().share();
        std::vector<std::uint32_t> survivors;
        for (std::uint32_t rank = 0; rank < this->world_size(); ++rank) {
            if (rank != dying) {
                survivors.push_back(rank);
            }
        }
        auto death = std::async(std::launch::async, [&] {
            opened.wait();
            this->job(dying).abandon();
        });
        auto outcomes =
            std::async(std::launch::async, [&] { return this->on_every_rank(call, survivors); });
        for (const std::string& name : published) {
            Result<Handle> inside = this->job(dying).lookup(name, call_timeout);
            EXPECT_TRUE(inside) << inside.error().report();
        }
        gate.set_value();
        death.get();
        expect_survivors_lost(outcomes.get(), dying, survivors);
        expect_survivors_lost(this->on_every_rank(call, survivors), dying, survivors);
    }

    /// Ends rank `dying` after it took part in the first step of the job's first collective,
    /// while every other rank is in a later step of `call`: each survivor's call fails with
    /// `DeviceLost` naming it. The dying rank's part of the first step is what its own call
    /// would do (job_collectives.cpp): publish `input` under the protocol's name, then meet the
    /// others at the barrier that is the step's agreement. Its death waits at a gate the test
    /// opens once rank 0 published the result (the survivors are past the first step).
    void expect_a_rank_ended_after_step_one_fails_the_others(std::uint32_t dying,
                                                             const Handle& input,
                                                             const Call& call) {
        std::promise<void> gate;
        std::vector<std::uint32_t> survivors;
        for (std::uint32_t rank = 0; rank < this->world_size(); ++rank) {
            if (rank != dying) {
                survivors.push_back(rank);
            }
        }
        auto death = std::async(std::launch::async, [&, opened = gate.get_future()]() mutable {
            Job& job = this->job(dying);
            EXPECT_TRUE(job.publish(input_name(1, dying), input));
            EXPECT_TRUE(job.barrier(call_timeout));  // The first step's agreement.
            opened.wait();
            job.abandon();
        });
        auto outcomes =
            std::async(std::launch::async, [&] { return this->on_every_rank(call, survivors); });
        {
            Result<Handle> built =
                this->job(dying).lookup("tandem.collective.1.rank0.result", call_timeout);
            EXPECT_TRUE(built) << built.error().report();
        }  // The handle is let go before the death.
        gate.set_value();
        death.get();
        expect_survivors_lost(outcomes.get(), dying, survivors);
    }

    /// Expects each of `survivors`' outcomes to be `DeviceLost` naming rank `dying`.
    static void expect_survivors_lost(const std::vector<Status>& outcomes, std::uint32_t dying,
                                      const std::vector<std::uint32_t>& survivors) {
        for (std::uint32_t rank : survivors) {
            ASSERT_FALSE(outcomes[rank]) << "rank " << rank << " passed without rank " << dying;
            EXPECT_EQ(outcomes[rank].error().kind(), ErrorKind::DeviceLost)
                << "rank " << rank << ": " << outcomes[rank].error().report();
            EXPECT_THAT(outcomes[rank].error().message(),
                        ::testing::HasSubstr("rank " + std::to_string(dying)))
                << "rank " << rank;
        }
    }

    /// Every rank's `elements` floats, rank r's all r + 1, as buffers of all-reduces.
    std::vector<Handle> float_buffers(std::size_t elements) {
        std::vector<Handle> buffers;
        for (std::uint32_t rank = 0; rank < this->world_size(); ++rank) {
            buffers.push_back(this->template values_on<float>(
                rank, std::vector<float>(elements, static_cast<float>(rank + 1))));
        }
        return buffers;
    }
    /// The all-reduce (a sum of floats) of `buffers[r]` on rank r.
    Call sum_of(const std::vector<Handle>& buffers) {
        return [this, &buffers](std::uint32_t rank) {
            return this->job(rank).all_reduce(buffers[rank], ElementType::f32, ReduceOp::sum,
                                              call_timeout);
        };
    }
    /// Every rank's `size` bytes, all `value`, written and settled.
    std::vector<Handle> same_bytes_on_every_rank(std::uint64_t size, std::uint8_t value) {
        std::vector<Handle> buffers;
        for (std::uint32_t rank = 0; rank < this->world_size(); ++rank) {
            buffers.push_back(this->bytes_on(rank, size, value));
        }
        return buffers;
    }
    /// Every rank's `size` bytes, rank r's all r + 1, written and settled.
    std::vector<Handle> ranked_bytes_on_every_rank(std::uint64_t size) {
        std::vector<Handle> buffers;
        for (std::uint32_t rank = 0; rank < this->world_size(); ++rank) {
            buffers.push_back(this->bytes_on(rank, size, static_cast<std::uint8_t>(rank + 1)));
        }
        return buffers;
    }
    /// The buffers of a collective that takes an input and an output on every rank.
    struct InputsAndOutputs {
        std::vector<Handle> inputs;
        std::vector<Handle> outputs;
    };
    /// An all-gather's buffers: rank r's input `chunk` bytes all r + 1, its output world size
    /// times `chunk` bytes of zeros.
    InputsAndOutputs gather_buffers(std::uint64_t chunk) {
        InputsAndOutputs buffers;
        for (std::uint32_t rank = 0; rank < this->world_size(); ++rank) {
            buffers.inputs.push_back(
                this->bytes_on(rank, chunk, static_cast<std::uint8_t>(rank + 1)));
            buffers.outputs.push_back(this->bytes_on(rank, chunk * this->world_size(), 0));
        }
        return buffers;
    }
    /// A reduce-scatter's buffers: every rank's input two floats a rank, all 1, and its output
    /// two floats of zero.
    InputsAndOutputs scatter_buffers() {
        InputsAndOutputs buffers;
        for (std::uint32_t rank = 0; rank < this->world_size(); ++rank) {
            buffers.inputs.push_back(this->template values_on<float>(
                rank, std::vector<float>(2 * this->world_size(), 1.0F)));
            buffers.outputs.push_back(this->template values_on<float>(rank, {0, 0}));
        }
        return buffers;
    }
    /// The broadcast of rank `root`'s `buffers[root]` into `buffers[r]` on rank r.
    Call broadcast_of(const std::vector<Handle>& buffers, std::uint32_t root) {
        return [this, &buffers, root](std::uint32_t rank) {
            return this->job(rank).broadcast(buffers[rank], root, call_timeout);
        };
    }
    /// The all-gather of `buffers.inputs[r]` into `buffers.outputs[r]` on rank r.
    Call all_gather_of(const InputsAndOutputs& buffers) {
        return [this, &buffers](std::uint32_t rank) {
            return this->job(rank).all_gather(buffers.inputs[rank], buffers.outputs[rank],
                                              call_timeout);
        };
    }
    /// The reduce-scatter (a sum of floats) of `buffers.inputs[r]` into `buffers.outputs[r]` on
    /// rank r.
    Call reduce_scatter_of(const InputsAndOutputs& buffers) {
        return [this, &buffers](std::uint32_t rank) {
            return this->job(rank).reduce_scatter(buffers.inputs[rank], buffers.outputs[rank],
                                                  ElementType::f32, ReduceOp::sum, call_timeout);
        };
    }
    /// Rank `sender` sends `source` to rank 0, which receives it into `target`, each on a thread
    /// of its own; both outcomes, in rank order (a default `Status` for the ranks left out).
    std::vector<Status> send_and_receive(std::uint32_t sender, const Handle& source,
                                         const Handle& target) {
        return this->on_every_rank(
            [&](std::uint32_t rank) {
                return rank == sender ? this->job(rank).send(0, source, call_timeout)
                                      : this->job(rank).recv(sender, target, call_timeout);
            },
            {0, sender});
    }
    /// The sum every rank's all-reduce of `float_buffers` gives.
    static float sum_of_ranks() {
        return static_cast<float>(JobRanks<Kind>::world_size() *
                                  (JobRanks<Kind>::world_size() + 1) / 2);
    }
    /// The name rank `rank` publishes its input of the job's `call`th collective under: the
    /// protocol's own name (job_collectives.cpp), which tells a test that the rank is inside.
    static std::string input_name(std::uint64_t call, std::uint32_t rank) {
        return "tandem.collective." + std::to_string(call) + ".rank" + std::to_string(rank) +
               ".input";
    }
    /// The input names of every rank but `dying` in the job's first collective.
    static std::vector<std::string> inputs_but(std::uint32_t dying) {
        std::vector<std::string> names;
        for (std::uint32_t rank = 0; rank < JobRanks<Kind>::world_size(); ++rank) {
            if (rank != dying) {
                names.push_back(input_name(1, rank));
            }
        }
        return names;
    }
};

}  // namespace tandem::conformance
