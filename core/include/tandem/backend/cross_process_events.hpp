#pragma once

// Waiting for an event recorded by a device of another process (a job's other ranks): the owner
// keeps a counter per stream that its device advances as the work before each published event is
// settled there (phase 2 of docs/DESIGN.md); this process looks at it through its directory
// (`DeviceDirectory::event_reached`). There is nothing to be told when it moves, so a wait looks
// again after a pause that grows from microseconds to a millisecond: a wait that ends soon ends
// at once, and a long one costs a look a millisecond. No wait holds for ever: the owner's loss
// ends it with `DeviceLost`, this process leaving the job with `TornDown`, and
// `DeviceDirectory::event_wait_limit` with `PeerUnreachable`.

#include "tandem/backend/device_directory.hpp"
#include "tandem/core/event.hpp"
#include "tandem/core/result.hpp"

#include <chrono>

namespace tandem {

/// The pauses of one wait for another process's counter, each longer than the last, up to
/// `longest`.
class CounterPause {
public:
    /// The first pause.
    static constexpr std::chrono::microseconds first{10};
    /// The longest pause.
    static constexpr std::chrono::microseconds longest{1000};

    /// Sleeps for the next pause.
    void operator()();

private:
    std::chrono::microseconds next_ = first;
};

/// The error of a wait on another process's `event` that its directory refused (`why`: an event
/// never published here, or the owner's loss), naming the event; of the same kind as `why`.
Error event_refused(const Event& event, const Error& why);
/// The error of a wait by `waiter` for another process's `event` that did not come within
/// `limit`.
Error event_not_reached(ServiceId waiter, const Event& event, std::chrono::milliseconds limit);
/// Blocks the host until another process's `event` is reached (`DeviceDirectory::event_reached`);
/// the errors of `event_refused`, or `event_not_reached` past the directory's limit.
Status wait_for_other_process(const DeviceDirectory& directory, ServiceId waiter,
                              const Event& event);

}  // namespace tandem
