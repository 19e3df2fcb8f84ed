// The MPI reductions of bf16 elements (bf16_ops.hpp says why they are tandem's own).
//
// The operations are made once per process, on the first bf16 reduction, and freed by MPI
// itself as it finalises: an attribute of MPI_COMM_SELF, whose deletion MPI_Finalize runs first
// of all, while MPI_Op_free may still be called. A communicator's life says nothing of when MPI
// ends, and an operation freed after MPI_Finalize is an error.

#include "bf16_ops.hpp"

#include "tandem/core/bfloat16.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>

namespace tandem::mpi::detail {
namespace {

/// `inout[i]` = `in[i]` `Step` `inout[i]` for the `*length` bf16 elements MPI hands over, as
/// MPI_User_function requires. The bytes are copied in and out, as MPI's buffers need be
/// neither aligned for nor made of 16-bit words.
template <std::uint16_t (*Step)(std::uint16_t, std::uint16_t)>
void reduce_bf16(void* in, void* inout, int* length, MPI_Datatype* /*type*/) {
    const auto* left = static_cast<const std::byte*>(in);
    auto* right = static_cast<std::byte*>(inout);
    const auto count = static_cast<std::size_t>(*length);
    for (std::size_t offset = 0; offset < count * 2; offset += 2) {
        std::uint16_t a = 0;
        std::uint16_t b = 0;
        std::memcpy(&a, left + offset, 2);
        std::memcpy(&b, right + offset, 2);
        const std::uint16_t result = Step(a, b);
        std::memcpy(right + offset, &result, 2);
    }
}

/// The operations, in the order of `ReduceOp`'s numbers (sum, max, min).
std::array<MPI_Op, 3> operations{MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};
std::once_flag made;

/// Frees the operations: the delete callback of MPI_COMM_SELF's attribute, run by MPI_Finalize.
int free_operations(MPI_Comm /*comm*/, int /*key*/, void* /*value*/, void* /*state*/) {
    for (MPI_Op& operation : operations) {
        if (operation != MPI_OP_NULL) {
            MPI_Op_free(&operation);
        }
    }
    return MPI_SUCCESS;
}

void make_operations() {
    MPI_Op_create(&reduce_bf16<bf16_sum>, 1, &operations[0]);
    MPI_Op_create(&reduce_bf16<bf16_max>, 1, &operations[1]);
    MPI_Op_create(&reduce_bf16<bf16_min>, 1, &operations[2]);
    int key = MPI_KEYVAL_INVALID;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &free_operations, &key, nullptr);
    MPI_Comm_set_attr(MPI_COMM_SELF, key, nullptr);
    // The key goes once the attribute does; the attribute stays until MPI_Finalize.
    MPI_Comm_free_keyval(&key);
}

}  // namespace

MPI_Op bf16_op(ReduceOp op) {
    const auto index = static_cast<std::size_t>(op);
    if (index >= operations.size()) {
        return MPI_OP_NULL;
    }
    std::call_once(made, make_operations);
    return operations[index];
}

}  // namespace tandem::mpi::detail
