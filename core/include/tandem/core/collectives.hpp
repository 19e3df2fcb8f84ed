#pragma once

// Collectives across the devices of one runtime, with the claim rules (phase 3 of
// docs/DESIGN.md). An all-reduce is built of the contract's own work, so every rule holds by
// construction on every backend: the root (the first device) copies each peer's buffer into a
// staging buffer of its own (a copy of shared memory, ordered after the peer's earlier work by
// an event), combines it into its buffer with the catalog's `combine` kernel, then each peer
// copies the result back. A claimed byte of any device's buffer is never reduced: the copy of it
// is skipped (C9, P3), so the combine is, so every copy back is, and every device's buffer is
// claimed with the root cause and the hops it took, on every device (the outcome is the same
// everywhere). Across processes and through NCCL is the next step.

#include "tandem/core/client.hpp"
#include "tandem/core/handle.hpp"
#include "tandem/core/result.hpp"

#include <cstdint>
#include <span>

namespace tandem {

/// How an all-reduce combines elements.
enum class ReduceOp : std::uint8_t {
    /// The sum (wrapping for integers, as their addition does).
    sum = 0,
    /// The largest.
    max = 1,
    /// The smallest.
    min = 2,
};

/// The elements an all-reduce combines.
enum class ElementType : std::uint8_t {
    /// 32-bit float.
    f32 = 0,
    /// 64-bit float.
    f64 = 1,
    /// 32-bit signed integer.
    i32 = 2,
    /// 64-bit signed integer.
    i64 = 3,
};

/// The size of one element of `type`, in bytes.
[[nodiscard]] std::uint64_t element_size(ElementType type);

/// Every `buffers[i]` (of `devices[i]`) becomes `op` of all of them, element by element, in
/// device order. Enqueued and returned at once, as a launch is: the outcome shows in the claims
/// of the buffers, the same on every device (a claimed byte anywhere claims every buffer, with
/// the root and the hops). Work enqueued on a buffer's stream before the call is ordered before
/// it. Errors, changing nothing: `InvalidArgument` for no device, a count of buffers that is
/// not the count of devices, a device named twice, devices of different runtimes, buffers of
/// different sizes or of a size no whole number of elements, an empty buffer; `WrongService` for
/// a buffer that is not its device's; `DeviceLost` for a lost device.
Status all_reduce(std::span<Client> devices, std::span<const Handle> buffers, ElementType type,
                  ReduceOp op);

}  // namespace tandem
