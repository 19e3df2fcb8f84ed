#include "tandem/backend/cross_process_events.hpp"

#include <algorithm>
#include <string>
#include <thread>

namespace tandem {

void CounterPause::operator()() {
    std::this_thread::sleep_for(next_);
    next_ = std::min(next_ * 2, longest);
}

Error event_refused(const Event& event, const Error& why) {
    if (why.kind() != ErrorKind::DeviceLost) {
        return why;
    }
    return Error::device_lost(event.device(), "cannot wait on an event of a lost device")
        .caused_by(why);
}

Error event_not_reached(ServiceId waiter, const Event& event, std::chrono::milliseconds limit) {
    return Error::peer_unreachable(
        waiter, event.device(),
        "the work before event " + std::to_string(event.sequence()) + " of " +
            to_string(event.stream()) + " was not done within " + std::to_string(limit.count()) +
            " ms (on the simulator a rank runs its work when it syncs or waits)");
}

Status wait_for_other_process(const DeviceDirectory& directory, ServiceId waiter,
                              const Event& event) {
    const std::chrono::milliseconds limit = directory.event_wait_limit();
    const auto deadline = std::chrono::steady_clock::now() + limit;
    CounterPause pause;
    for (;;) {
        Result<bool> reached = directory.event_reached(event);
        if (!reached) {
            return event_refused(event, reached.error());
        }
        if (*reached) {
            return {};
        }
        if (std::chrono::steady_clock::now() >= deadline) {
            return event_not_reached(waiter, event, limit);
        }
        pause();
    }
}

}  // namespace tandem
