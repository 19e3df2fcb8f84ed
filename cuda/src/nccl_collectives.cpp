// The collectives of an NCCL communicator (tandem/cuda/nccl.hpp): each a description of what
// its ranks agree on and the one NCCL call that moves the bytes, run by the steps every
// collective takes (nccl_steps.cpp).

#include "nccl_state.hpp"

#include "api/collective_steps.hpp"

#include <string>

namespace tandem::cuda {
namespace {

nccl::DataType nccl_type(ElementType type) {
    switch (type) {
        case ElementType::f32:
            return nccl::DataType::float32;
        case ElementType::f64:
            return nccl::DataType::float64;
        case ElementType::i32:
            return nccl::DataType::int32;
        case ElementType::i64:
            return nccl::DataType::int64;
        case ElementType::bf16:
            return nccl::DataType::bfloat16;
    }
    return nccl::DataType::uint8;
}

nccl::ReduceOp nccl_op(ReduceOp op) {
    switch (op) {
        case ReduceOp::sum:
            return nccl::ReduceOp::sum;
        case ReduceOp::max:
            return nccl::ReduceOp::max;
        case ReduceOp::min:
            return nccl::ReduceOp::min;
    }
    return nccl::ReduceOp::sum;
}

}  // namespace

Status NcclCommunicator::all_reduce(const Handle& buffer, ElementType type, ReduceOp op) {
    const std::uint64_t element = element_size(type);
    const std::uint64_t bytes = buffer.empty() ? 0 : buffer.size_in_use();
    const nccl::Communicator comm = state_->communicator;
    const NcclEntryPoints* entry = state_->nccl;
    return state_->run_collective(
        {.name = "nccl all_reduce",
         .valid = check_nccl_buffer(device(), "an all_reduce", "buffer", buffer, bytes, element),
         .bytes = bytes,
         .source = &buffer,
         .destination = &buffer,
         .arguments = {{buffer, AccessMode::ReadWrite}},
         .call = [comm, entry, count = bytes / element, type = nccl_type(type),
                  op = nccl_op(op)](const DeviceWorkContext& context) {
             return entry->all_reduce(context.pointers[0], context.pointers[0], count, type, op,
                                      comm, context.stream);
         }});
}

Status NcclCommunicator::broadcast(const Handle& buffer, int root) {
    if (root < 0 || root >= size()) {
        // Every rank sees the same root and refuses alike: nothing to agree on.
        return Error::invalid_argument("rank " + std::to_string(root) +
                                       " is no rank of a communicator of " +
                                       std::to_string(size()));
    }
    const std::uint64_t bytes = buffer.empty() ? 0 : buffer.size_in_use();
    const nccl::Communicator comm = state_->communicator;
    const NcclEntryPoints* entry = state_->nccl;
    return state_->run_collective(
        {.name = "nccl broadcast",
         .valid = check_nccl_buffer(device(), "a broadcast", "buffer", buffer, bytes, 1),
         .bytes = bytes,
         .source = rank() == root ? &buffer : nullptr,
         .destination = &buffer,
         .arguments = {{buffer, AccessMode::ReadWrite}},
         .call = [comm, entry, bytes, root](const DeviceWorkContext& context) {
             return entry->broadcast(context.pointers[0], context.pointers[0], bytes,
                                     nccl::DataType::uint8, root, comm, context.stream);
         }});
}

Status NcclCommunicator::all_gather(const Handle& input, const Handle& output) {
    const std::uint64_t bytes = input.empty() ? 0 : input.size_in_use();
    Status valid = check_nccl_buffer(device(), "an all_gather", "input", input, bytes, 1);
    if (valid) {
        valid = check_nccl_buffer(device(), "an all_gather", "output", output,
                                  detail::times(bytes, static_cast<std::size_t>(size())), 1);
    }
    const nccl::Communicator comm = state_->communicator;
    const NcclEntryPoints* entry = state_->nccl;
    return state_->run_collective(
        {.name = "nccl all_gather",
         .valid = valid,
         .bytes = bytes,
         .source = &input,
         .destination = &output,
         .arguments = {{input, AccessMode::Read}, {output, AccessMode::Write}},
         .call = [comm, entry, bytes](const DeviceWorkContext& context) {
             return entry->all_gather(context.pointers[0], context.pointers[1], bytes,
                                      nccl::DataType::uint8, comm, context.stream);
         }});
}

Status NcclCommunicator::reduce_scatter(const Handle& input, const Handle& output, ElementType type,
                                        ReduceOp op) {
    const std::uint64_t element = element_size(type);
    const std::uint64_t bytes = output.empty() ? 0 : output.size_in_use();
    Status valid =
        check_nccl_buffer(device(), "a reduce_scatter", "output", output, bytes, element);
    if (valid) {
        valid = check_nccl_buffer(device(), "a reduce_scatter", "input", input,
                                  detail::times(bytes, static_cast<std::size_t>(size())), element);
    }
    const nccl::Communicator comm = state_->communicator;
    const NcclEntryPoints* entry = state_->nccl;
    return state_->run_collective(
        {.name = "nccl reduce_scatter",
         .valid = valid,
         .bytes = bytes,
         .source = &input,
         .destination = &output,
         .arguments = {{input, AccessMode::Read}, {output, AccessMode::Write}},
         .call = [comm, entry, count = bytes / element, type = nccl_type(type),
                  op = nccl_op(op)](const DeviceWorkContext& context) {
             return entry->reduce_scatter(context.pointers[0], context.pointers[1], count, type, op,
                                          comm, context.stream);
         }});
}

}  // namespace tandem::cuda
