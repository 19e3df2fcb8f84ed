// The collectives of a job (job.hpp says what each promises): one protocol that every rank runs,
// and each collective a description of which buffer the root reads, how it takes each rank's
// input into the result, and which part of the result each rank copies. A send and its receive
// are the same steps between two ranks alone: the sender publishes, the receiver copies, and
// the two meet after each step (meetings.cpp).
//
// Three steps, each ended by an agreement (a barrier that is also a vote): every rank publishes
// the buffer the root reads; the root builds the result of them and publishes it; every rank
// copies its part of the result into its output. The result is built once and copied whole, so
// a claimed byte of any rank's input claims every rank's output (rule K1), and an agreement
// after each step makes a rank's failure, or its loss, every rank's outcome before any goes on.

#include "api/collective_steps.hpp"

#include "tandem/job.hpp"

#include <functional>
#include <span>
#include <string>

namespace tandem {
namespace job_detail {

/// One collective call as every rank runs it.
struct Collective {
    /// What messages call it: "all-reduce".
    std::string_view name;
    /// This rank's buffer the root reads, published first; null when the root reads only its
    /// own output (a broadcast).
    const Handle* input = nullptr;
    /// This rank's buffer its part of the result lands in.
    const Handle* output = nullptr;
    /// The size the input must have, in bytes.
    std::uint64_t input_bytes = 0;
    /// The size the output must have, in bytes: the size of this rank's part of the result.
    std::uint64_t output_bytes = 0;
    /// The size of an element: every buffer holds whole elements.
    std::uint64_t element_bytes = 1;
    /// The rank that builds the result.
    std::uint32_t root = 0;
    /// The result's size in bytes, the same on every rank.
    std::uint64_t result_bytes = 0;
    /// Where this rank's part of the result begins.
    std::uint64_t part_offset = 0;
    /// How the root takes rank r's input into the result (of its `device`), in rank order; none
    /// when the result is the root's own output (a broadcast).
    std::function<Status(Client& device, const Handle& input, std::uint32_t rank,
                         const Handle& result)>
        take;
};

}  // namespace job_detail

namespace {

using job_detail::Collective;

/// The name the buffer of `role` of rank `rank` in collective call `call` is published under.
std::string collective_name(std::uint64_t call, std::uint32_t rank, std::string_view role) {
    return "tandem.collective." + std::to_string(call) + ".rank" + std::to_string(rank) + "." +
           std::string(role);
}

/// `InvalidArgument` when rank `rank`'s `role` has `size_bytes` where this rank expects
/// `expected_bytes`.
Status same_size(std::string_view collective, std::string_view role, std::uint32_t rank,
                 std::uint64_t size_bytes, std::uint64_t expected_bytes) {
    if (size_bytes == expected_bytes) {
        return {};
    }
    return Error::invalid_argument(std::string(collective) + ": rank " + std::to_string(rank) +
                                   "'s " + std::string(role) + " has " +
                                   std::to_string(size_bytes) + " bytes, where " +
                                   std::to_string(expected_bytes) + " were expected");
}

/// `InvalidArgument` unless `input` and `output` are buffers of one device of `runtime`.
Status check_device(const std::shared_ptr<Runtime>& runtime, std::string_view call,
                    const Handle& input, const Handle& output) {
    if (!runtime || input.empty() || output.empty() ||
        input.service().runtime_id != runtime->runtime_id() ||
        output.service() != input.service()) {
        return Error::invalid_argument("a job's " + std::string(call) +
                                       " takes buffers of one of this rank's devices");
    }
    return {};
}

/// `InvalidArgument` unless `collective`'s buffers are of one device of `runtime` and of the
/// sizes it expects.
Status check_own(const std::shared_ptr<Runtime>& runtime, const Collective& collective) {
    const Handle& output = *collective.output;
    const Handle& input = collective.input ? *collective.input : output;
    Status valid = check_device(runtime, collective.name, input, output);
    if (valid) {
        valid = detail::check_buffer_size(collective.name, "output", output,
                                          collective.output_bytes, collective.element_bytes);
    }
    return valid && collective.input
               ? detail::check_buffer_size(collective.name, "input", input, collective.input_bytes,
                                           collective.element_bytes)
               : valid;
}

/// `InvalidArgument` unless `rank` is another rank of `job` and `buffer` a buffer of bytes of
/// one of this rank's devices.
Status check_transfer(const Job& job, std::string_view call, std::uint32_t rank,
                      const Handle& buffer) {
    if (rank >= job.world_size() || rank == job.rank()) {
        return Error::invalid_argument(std::string(call) + ": rank " + std::to_string(rank) +
                                       " is not another rank of this job of " +
                                       std::to_string(job.world_size()));
    }
    Status valid = check_device(job.runtime(), call, buffer, buffer);
    return valid ? detail::check_buffer_size(call, "buffer", buffer, buffer.size_in_use(), 1)
                 : valid;
}

/// The name the `count`th transfer from rank `from` to rank `to` is published under.
std::string transfer_name(std::uint32_t from, std::uint32_t to, std::uint64_t count) {
    return "tandem.transfer." + std::to_string(from) + ".to" + std::to_string(to) + "." +
           std::to_string(count);
}

/// The receiver's step: copies what rank `from` published as `name` into `target`.
Status receive(Job& job, std::uint32_t from, const std::string& name, const Handle& target,
               Client& device, std::chrono::milliseconds timeout) {
    Result<Handle> theirs = job.lookup(name, timeout);
    if (!theirs) {
        return theirs.error();
    }
    if (Status same =
            same_size("recv", "source", from, theirs->size_in_use(), target.size_in_use());
        !same) {
        return same;
    }
    return device.copy(*theirs, target);
}

/// A reduction: rank 0 folds every rank's `input`, `parts` chunks of `output`'s size, in rank
/// order, and `output` takes chunk `part` of the result.
Collective reduction(std::string_view name, const Handle& input, const Handle& output,
                     std::uint32_t parts, std::uint32_t part, ElementType type, ReduceOp op) {
    const std::uint64_t chunk = output.size_in_use();
    const std::uint64_t bytes = detail::times(chunk, parts);
    auto fold = [type, op](Client& device, const Handle& from, std::uint32_t rank,
                           const Handle& result) {
        return rank == 0 ? device.copy(from, result)
                         : detail::fold_into(device, result, from, type, op);
    };
    return {.name = name,
            .input = &input,
            .output = &output,
            .input_bytes = bytes,
            .output_bytes = chunk,
            .element_bytes = element_size(type),
            .result_bytes = bytes,
            .part_offset = part * chunk,
            .take = fold};
}

/// Rank `rank`'s input of call `call`: this rank's own, or the one it published, once its size
/// is checked against this rank's.
Result<Handle> rank_input(Job& job, const Collective& collective, std::uint64_t call,
                          std::uint32_t rank, std::chrono::milliseconds timeout) {
    if (rank == job.rank()) {
        return *collective.input;
    }
    Result<Handle> theirs = job.lookup(collective_name(call, rank, "input"), timeout);
    if (!theirs) {
        return theirs;
    }
    Status same =
        same_size(collective.name, "input", rank, theirs->size_in_use(), collective.input_bytes);
    return same ? theirs : Result<Handle>(same.error());
}

/// The root's step: builds the result on `device` of every rank's input (or takes its own
/// output, for a broadcast) and publishes it.
Status build_result(Job& job, const Collective& collective, Client& device, std::uint64_t call,
                    std::optional<Handle>& result, std::chrono::milliseconds timeout) {
    if (!collective.take) {
        result = *collective.output;
    } else {
        Result<Handle> built = device.allocate(collective.result_bytes);
        if (!built) {
            return built.error();
        }
        result = std::move(*built);
        for (std::uint32_t rank = 0; rank < job.world_size(); ++rank) {
            Result<Handle> input = rank_input(job, collective, call, rank, timeout);
            if (!input) {
                return input.error();
            }
            if (Status taken = collective.take(device, *input, rank, *result); !taken) {
                return taken;
            }
        }
    }
    return job.publish(collective_name(call, job.rank(), "result"), *result);
}

/// Every rank's last step: copies its part of the root's result (`result`, on the root).
Status copy_part(Job& job, const Collective& collective, Client& device, std::uint64_t call,
                 const std::optional<Handle>& result, std::chrono::milliseconds timeout) {
    Result<Handle> whole =
        result ? Result<Handle>(*result)
               : job.lookup(collective_name(call, collective.root, "result"), timeout);
    if (!whole) {
        return whole.error();
    }
    if (Status same = same_size(collective.name, "result", collective.root, whole->size_in_use(),
                                collective.result_bytes);
        !same) {
        return same;
    }
    Result<Handle> part = whole->slice(collective.part_offset, collective.output_bytes);
    if (!part) {
        return part.error();
    }
    // A broadcast's root holds its part already: the result is its own buffer.
    return part->overlap(*collective.output) == Overlap::Same
               ? Status{}
               : device.copy(*part, *collective.output);
}

}  // namespace

Status Job::all_reduce(const Handle& buffer, ElementType type, ReduceOp op,
                       std::chrono::milliseconds timeout) {
    return run_collective(reduction("all-reduce", buffer, buffer, 1, 0, type, op), timeout);
}

Status Job::reduce_scatter(const Handle& input, const Handle& output, ElementType type, ReduceOp op,
                           std::chrono::milliseconds timeout) {
    return run_collective(
        reduction("reduce-scatter", input, output, world_size(), rank(), type, op), timeout);
}

Status Job::broadcast(const Handle& buffer, std::uint32_t root, std::chrono::milliseconds timeout) {
    if (root >= world_size()) {
        return Error::invalid_argument("broadcast: root " + std::to_string(root) +
                                       " is not a rank of this job of " +
                                       std::to_string(world_size()));
    }
    const std::uint64_t bytes = buffer.size_in_use();
    return run_collective({.name = "broadcast",
                           .output = &buffer,
                           .output_bytes = bytes,
                           .root = root,
                           .result_bytes = bytes,
                           .take = {}},
                          timeout);
}

Status Job::all_gather(const Handle& input, const Handle& output,
                       std::chrono::milliseconds timeout) {
    const std::uint64_t chunk = input.size_in_use();
    const std::uint64_t bytes = detail::times(chunk, world_size());
    return run_collective(
        {.name = "all-gather",
         .input = &input,
         .output = &output,
         .input_bytes = chunk,
         .output_bytes = bytes,
         .result_bytes = bytes,
         .take =
             [chunk](Client& device, const Handle& from, std::uint32_t rank, const Handle& result) {
                 return device.copy(from, *result.slice(rank * chunk, chunk));
             }},
        timeout);
}

Status Job::send(std::uint32_t rank, const Handle& source, std::chrono::milliseconds timeout) {
    if (Status refused = refuse_if_cut_off("send"); !refused) {
        return refused;
    }
    if (Status valid = check_transfer(*this, "send", rank, source); !valid) {
        return valid;  // Before meeting the receiver: the transfer takes no number.
    }
    const std::string name = transfer_name(this->rank(), rank, next_transfer(rank, true));
    Client device = runtime()->client(source.service().device_index);
    // Published whatever it holds: the receiver's copy of a claimed byte is skipped (P3), and
    // claims its target with the failure and the hop.
    Status status = agree_with(rank, true, publish(name, source), device, timeout);
    // Publishing waited for the source's writers: a claimed byte now refuses the send (K2).
    const Status clean = device.sync(std::span<const Handle>(&source, 1));
    if (status) {
        status = agree_with(rank, true, Status{}, device, timeout);  // The receiver's copy.
    }
    (void)withdraw(name);
    return status ? clean : status;
}

Status Job::recv(std::uint32_t rank, const Handle& target, std::chrono::milliseconds timeout) {
    if (Status refused = refuse_if_cut_off("recv"); !refused) {
        return refused;
    }
    if (Status valid = check_transfer(*this, "recv", rank, target); !valid) {
        return valid;  // Before meeting the sender: the transfer takes no number.
    }
    const std::string name = transfer_name(rank, this->rank(), next_transfer(rank, false));
    Client device = runtime()->client(target.service().device_index);
    Status status = agree_with(rank, false, Status{}, device, timeout);  // The sender published.
    if (status) {
        status = agree_with(rank, false, receive(*this, rank, name, target, device, timeout),
                            device, timeout);
    }
    return status;
}

Status Job::run_collective(const Collective& collective, std::chrono::milliseconds timeout) {
    if (Status refused = refuse_if_cut_off(collective.name); !refused) {
        return refused;  // Before any rank is met: the call takes no place in the job's order.
    }
    if (Status valid = check_own(runtime(), collective); !valid) {
        return valid;  // Before any rank is met: the call takes no place in the job's order.
    }
    const std::uint64_t call = next_collective();
    Client device = runtime()->client(collective.output->service().device_index);
    const std::string mine = collective_name(call, rank(), "input");
    std::optional<Handle> result;  // The root's, once built.
    auto vote = [&](const Status& step) { return agree(step, device, timeout); };
    Status status = vote(collective.input ? publish(mine, *collective.input) : Status{});
    if (status) {
        status = vote(rank() == collective.root
                          ? build_result(*this, collective, device, call, result, timeout)
                          : Status{});
    }
    if (status) {
        status = vote(copy_part(*this, collective, device, call, result, timeout));
    }
    (void)withdraw(mine);
    (void)withdraw(collective_name(call, rank(), "result"));
    return status;
}

}  // namespace tandem
