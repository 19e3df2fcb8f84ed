#pragma once

// The steps every collective is built of (collectives.hpp says why they are built of the
// contract's own work). Internal: the collectives of one runtime and those of a job's ranks
// share them, so that each collective is a few lines that say which buffer goes where.
//
// - The checks: a collective refuses what it cannot take before it enqueues anything, so a
//   refusal changes nothing (no claim, no work, no staging memory).
// - The order: a collective's work on a device runs on the device's default stream, after the
//   work enqueued before it on its buffers' streams, and the work enqueued on those streams
//   after it waits for the collective on every device. A source another device still reads is
//   so never overwritten under it. It costs an event and a wait per pair of devices at the end,
//   nothing a collective's copies do not dwarf.
// - The moves: a copy of another device's buffer is a copy of shared memory, after an event of
//   the owner's stream, so a claimed source byte is never moved (C9, P3): the copy is skipped
//   and its whole target takes the failure, with the hop.

#include "tandem/core/client.hpp"
#include "tandem/core/collectives.hpp"
#include "tandem/core/handle.hpp"
#include "tandem/core/result.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace tandem::detail {

/// One list of buffers a collective takes, a buffer a device, and the size each must have.
struct BufferList {
    /// What messages call a buffer of the list: "buffer", "input", "output".
    std::string_view role;
    /// The buffers, the one of device i at i.
    std::span<const Handle> buffers;
    /// The size every buffer of the list must have, in bytes.
    std::uint64_t size_bytes = 0;
};

/// The size of the first buffer of `buffers`, or 0 for none.
[[nodiscard]] std::uint64_t first_size(std::span<const Handle> buffers);

/// `bytes` times `count`, or the largest 64-bit number where that would wrap (no buffer holds
/// so many bytes, so a size check against it fails as it should).
[[nodiscard]] std::uint64_t times(std::uint64_t bytes, std::size_t count);

/// `InvalidArgument` unless `buffer` holds exactly `size_bytes`, a whole, non-zero number of
/// `element_bytes`-byte elements; the message names the collective and the buffer's role.
Status check_buffer_size(std::string_view collective, std::string_view role, const Handle& buffer,
                         std::uint64_t size_bytes, std::uint64_t element_bytes);

/// What collective `collective` of `devices` over `lists` cannot take, changing nothing:
/// `InvalidArgument` for no device, a list without one buffer a device, a device named twice,
/// devices of different runtimes, a buffer of another size than its list's or of no whole
/// number of elements; `WrongService` for a buffer that is not its device's; `DeviceLost` for a
/// lost device.
Status check_collective(std::string_view collective, std::span<Client> devices,
                        std::span<const BufferList> lists, std::uint64_t element_bytes);

/// `into` becomes `op` of itself and `source` (of `device`, or memory a peer shared), element by
/// element, on `device`'s default stream: `source` is copied into a staging buffer first (a copy
/// needs no grant, P7), which the catalog's `combine` folds in. A claimed byte of `source` claims
/// all of `into` with its failure (C9); the errors are those of the calls.
Status fold_into(Client& device, const Handle& into, const Handle& source, ElementType type,
                 ReduceOp op);

/// The work of one collective over the devices of one runtime, enqueued step by step. Each step
/// goes on when an earlier one failed (every step is enqueued, so that a step a lost device
/// refuses leaves its claims to the others' work); `finish` gives the first error.
class CollectiveSteps {
public:
    /// The steps of a collective of `devices`, which the caller keeps alive until `finish`.
    explicit CollectiveSteps(std::span<Client> devices);

    /// Orders the collective's work on device `device` after the work enqueued so far on
    /// `buffer`'s stream, and that stream's later work after the collective (`finish`).
    void join(std::size_t device, const Handle& buffer);
    /// `join` of `buffers[i]` with device i, for every i.
    void join_each(std::span<const Handle> buffers);
    /// A buffer of `size_bytes` of device `device` for the collective's own use; the work that
    /// uses it holds it. None when the allocation failed (the error is kept).
    std::optional<Handle> stage(std::size_t device, std::uint64_t size_bytes);
    /// Copies `source` of device `from` into `target` of device `to`, after the steps enqueued
    /// so far on `from`.
    void move(std::size_t from, const Handle& source, std::size_t to, const Handle& target);
    /// `into` of device `to` becomes `op` of itself and `source` of device `from`, after the steps
    /// enqueued so far on `from` (`fold_into`).
    void fold(std::size_t from, const Handle& source, std::size_t to, const Handle& into,
              ElementType type, ReduceOp op);
    /// Makes every joined stream (and every default stream) wait for the collective on every
    /// device; the first error of any step, or success.
    Status finish();

private:
    /// `source` of device `from` as device `to` reaches it after `from`'s steps so far: itself
    /// on one device, shared memory after an event of `from` otherwise; none on an error (kept).
    std::optional<Handle> reach(std::size_t from, const Handle& source, std::size_t to);
    /// Keeps `status` when it is the first error.
    void keep(const Status& status);

    std::span<Client> devices_;
    /// The (device, stream) pairs whose later work waits for the collective.
    std::vector<std::pair<std::size_t, StreamId>> joined_;
    Status first_;
};

}  // namespace tandem::detail
