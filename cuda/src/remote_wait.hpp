#pragma once

// A CUDA stream's wait on an event of another process (a job's other rank: docs/DESIGN.md, phase
// 2). The owner's board counter says when the event is reached, and the GPU cannot read it, so
// the stream waits in a host function (`cudaLaunchHostFunc`) that returns once the counter says
// so, the owner is lost, the job is left, or the directory's limit passes: the host goes on at
// once, as a stream wait on a local event lets it, and the GPU runs nothing of the stream after
// the wait before the host function returns. The host function makes no CUDA call.
//
// A wait that fails (the event will never come) skips every later work of its stream, and of
// the streams that wait on an event recorded after it (`Work::follow_failed_wait`), as on the
// simulator. Such work may be on the GPU already when the failure is learned, so each work
// enqueued while a wait is pending holds the wait and follows its failure when its report is
// filled in, which its stream's sync waits for; work enqueued once the failure is known is
// skipped before it runs. A stream keeps its waits as a chain, newest first, so that an event
// recorded on it, published to another rank, says whether a wait before it failed.

#include "tandem/backend/device_directory.hpp"
#include "tandem/core/event.hpp"
#include "tandem/core/result.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>

namespace tandem::cuda {

/// One wait of a stream on another process's event, or a join of another stream's waits into
/// this one's (a wait on a local event recorded after them). Built and resolved under its device
/// group's lock; only `ended` and `outcome` are written by the host function, `outcome` first.
struct RemoteWait {
    /// The most waits a stream may have pending (not yet known to have ended clean).
    static constexpr std::uint32_t max_chain = 1024;

    /// The event waited on; empty for a join and for a wait known failed (`failed_wait`).
    Event event;
    /// The device whose stream waits, as reports name it.
    ServiceId waiter;
    /// The directory that answers for the event's owner (the job's, held: the host function may
    /// run after the runtime that enqueued it is gone, its device lost).
    std::shared_ptr<const DeviceDirectory> directory;
    /// The stream's earlier waits, newest first, or null.
    std::shared_ptr<RemoteWait> previous;
    /// For a join: the other stream's waits that the local event was recorded after; null for a
    /// wait of either other kind.
    std::shared_ptr<RemoteWait> joined;
    /// The first sequence of an event the runtime records after this wait was enqueued: an event
    /// of the stream with a lower sequence was recorded before it.
    std::uint64_t from_event = 0;
    /// The waits it follows, itself included: at most `max_chain`.
    std::uint32_t depth = 1;
    /// Set by the host function as it returns (at once for a join).
    std::atomic<bool> ended{false};
    /// How the host function's wait ended, written before `ended`.
    Status outcome;

    /// Whether this wait and every wait it follows have ended: their host functions returned.
    [[nodiscard]] bool over() const;
    /// Why work ordered after this wait must be skipped, once `over`: the first failure of the
    /// waits it follows (a wait that ended without its event, or one whose event was recorded
    /// after a wait that failed on its owner: `DeviceDirectory::failed_wait_before`, asked once);
    /// none when every one reached its event clean, or when not over yet. Under the group's lock.
    const std::optional<Error>& failure();

    /// The host function: `data` is a `std::shared_ptr<RemoteWait>*` it deletes.
    static void run(void* data);

private:
    /// Computes `failure_` of this wait alone, the waits before it resolved already.
    void resolve_one();

    /// `failure` computed (it may ask the owner, so only once), and what it found.
    bool resolved_ = false;
    std::optional<Error> failure_;
    /// Memo of `over`: once every wait followed has ended, none starts again.
    mutable std::atomic<bool> all_over_{false};
};

/// A wait of `waiter` on `event` of another process, after the stream's `previous` waits.
std::shared_ptr<RemoteWait> remote_wait(const Event& event, ServiceId waiter,
                                        std::shared_ptr<const DeviceDirectory> directory,
                                        std::shared_ptr<RemoteWait> previous,
                                        std::uint64_t from_event);

/// The newest wait of the chain from `newest` (itself included) enqueued before event `sequence`
/// of its stream was recorded; null when none was.
std::shared_ptr<RemoteWait> wait_before_event(std::shared_ptr<RemoteWait> newest,
                                              std::uint64_t sequence);

/// A wait that failed with `error`, ended: what a stream known to have failed a wait passes on
/// to a stream joining it.
std::shared_ptr<RemoteWait> failed_wait(Error error);

/// A join of `joined` (another stream's waits a local event was recorded after) into a stream
/// whose own waits are `previous`.
std::shared_ptr<RemoteWait> joined_wait(std::shared_ptr<RemoteWait> previous,
                                        std::shared_ptr<RemoteWait> joined,
                                        std::uint64_t from_event);

}  // namespace tandem::cuda
