#pragma once

// Collectives across the devices of one runtime, with the claim rules (phase 3 of
// docs/DESIGN.md): all-reduce, broadcast, all-gather, reduce-scatter, and a send from one device
// to another. Each is built of the contract's own work, so every rule holds by construction on
// every backend: a device reads another device's buffer by a copy of shared memory, ordered after
// the owner's earlier work by an event; a reduction folds a staged copy in with the catalog's
// `combine` kernel; a result that several devices take is built once, on the first device, and
// copied to each. A claimed byte of any source is never moved or reduced: the copy of it is
// skipped (C9, P3), so everything built of it is, and every destination is claimed, all of it,
// with the root cause and the hops it took, on every device (the outcome is the same
// everywhere). Across processes: `Job` (tandem/job.hpp); between hosts, MPI
// (tandem/mpi/communicator.hpp); between GPUs, NCCL (tandem/cuda/nccl.hpp).
//
// Each call is enqueued and returns at once, as a launch does. On each device the collective's
// work runs on the default stream, after the work enqueued before the call on its buffers'
// streams; the work enqueued on those streams after the call waits for the collective on every
// device, so a source is not overwritten while another device still reads it. A call it cannot
// take is refused before anything is enqueued, and changes nothing.
//
// A reduction folds in device order, from the left: element e becomes
// `((b0[e] op b1[e]) op b2[e]) op ...`, where bi is device i's buffer, every step computed on the
// first device by the catalog's `combine`. For integers, and for max and min (of bf16 even with
// NaNs), the order changes nothing; for a float sum it is part of the result, and most visibly
// for bf16, whose every step rounds to 8 significant bits: 1 + 2^-8 + 2^-8 is 1 in this order
// (each 2^-8 is half of the last place of 1, and the tie goes to even), where 1 + (2^-8 + 2^-8)
// would be 1 + 2^-7. A job's collectives (tandem/job.hpp) fold so in rank order, on the same
// kernel, so they give the same bytes. Through MPI or NCCL the library picks the order (a ring,
// a tree), so a float sum over more than two ranks may round differently; each step is still
// one of this file's (tandem/core/bfloat16.hpp for bf16).

#include "tandem/core/client.hpp"
#include "tandem/core/handle.hpp"
#include "tandem/core/result.hpp"

#include <cstdint>
#include <span>

namespace tandem {

/// How a reduction (an all-reduce, a reduce-scatter) combines elements.
enum class ReduceOp : std::uint8_t {
    /// The sum (wrapping for integers, as their addition does).
    sum = 0,
    /// The largest.
    max = 1,
    /// The smallest.
    min = 2,
};

/// The elements a reduction combines.
enum class ElementType : std::uint8_t {
    /// 32-bit float.
    f32 = 0,
    /// 64-bit float.
    f64 = 1,
    /// 32-bit signed integer.
    i32 = 2,
    /// 64-bit signed integer.
    i64 = 3,
    /// bfloat16: the upper 16 bits of a 32-bit float (tandem/core/bfloat16.hpp). A step of a
    /// reduction computes in float and rounds to nearest, ties to even, so a sum of several is
    /// rounded once per step, in the order the reduction folds (the fold's order is part of
    /// its result). A step that yields a NaN gives the canonical NaN 0x7FFF; max and min let
    /// a NaN give way to a number and order -0 below +0, as NCCL does.
    bf16 = 4,
};

/// The size of one element of `type`, in bytes.
[[nodiscard]] std::uint64_t element_size(ElementType type);

/// Every `buffers[i]` (of `devices[i]`) becomes `op` of all of them, element by element, folded
/// in device order from the left (above: a float sum depends on it). A claimed byte of any
/// buffer claims every buffer, with the root and the hops. Errors, changing nothing:
/// `InvalidArgument` for no device, a count of buffers that is not the count of devices, a
/// device named twice, devices of different runtimes, buffers of different sizes or of a size no
/// whole number of elements (a bf16 buffer of an odd number of bytes), an empty buffer;
/// `WrongService` for a buffer that is not its device's; `DeviceLost` for a lost device.
Status all_reduce(std::span<Client> devices, std::span<const Handle> buffers, ElementType type,
                  ReduceOp op);

/// Every `buffers[i]` (of `devices[i]`) becomes a copy of `buffers[root]`, which is left as it is
/// (NCCL's in-place broadcast). A claimed byte of the root's buffer moves nothing: every other
/// buffer is claimed, all of it, with the root's failure and the hop. Errors, changing nothing:
/// those of `all_reduce` (any size of whole bytes), and `InvalidArgument` for a root that is not
/// the index of a device.
Status broadcast(std::span<Client> devices, std::span<const Handle> buffers, std::size_t root);

/// Every `outputs[j]` (of `devices[j]`, `D * n` bytes for D devices) becomes the devices'
/// `inputs` (n bytes each) one after the other: `inputs[i]` at byte `i * n`. An input may lie
/// inside its device's output (in place). A claimed byte of any input moves nothing: every output
/// is claimed, all of it, with that failure and the hops. Errors, changing nothing: those of
/// `all_reduce` for the inputs and the outputs (any size of whole bytes; an output of another
/// size than `D * n`).
Status all_gather(std::span<Client> devices, std::span<const Handle> inputs,
                  std::span<const Handle> outputs);

/// Every `outputs[i]` (of `devices[i]`, n bytes) becomes `op` of chunk i (the n bytes at
/// `i * n`) of every device's input (`D * n` bytes each), element by element, folded in device
/// order from the left as `all_reduce` folds. An output may lie inside its device's input (in
/// place). A claimed byte of any input reduces nothing: every output is claimed with that
/// failure and the hops. Errors, changing nothing: those of `all_reduce` for the inputs and the
/// outputs (an input of another size than `D * n`).
Status reduce_scatter(std::span<Client> devices, std::span<const Handle> inputs,
                      std::span<const Handle> outputs, ElementType type, ReduceOp op);

/// A matched send and receive, as one call of one runtime: `target` (of `receiver`) becomes a
/// copy of `source` (of `sender`), as a copy would (enqueued; the outcome shows in the claims). A
/// claimed byte of `source` moves nothing and claims nothing on the sender (the source keeps
/// its claims, no new failure); the receive claims all of `target` with the sender's failure
/// and the hop. A send that lands releases `target` (C3). Errors, changing
/// nothing: `InvalidArgument` for one device as both ends (`Client::copy` copies within one),
/// devices of different runtimes, a source and target of different sizes, an empty buffer;
/// `WrongService` for a buffer that is not its end's device's; `DeviceLost` for a lost device.
Status send(Client& sender, const Handle& source, Client& receiver, const Handle& target);

}  // namespace tandem
