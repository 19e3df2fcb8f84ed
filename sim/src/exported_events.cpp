// Events that cross processes on the simulator. An owner's device tells the job once the work
// before a published event has run and is settled (and whether it was recorded after a wait that
// failed), so that a peer's wait on it finds the owner's claims final (P5 across processes); a
// peer's stream waiting on such an event holds until the job says it is reached, the owner is
// lost, or the wait's limit passes, and follows a failed wait the owner's stream made before it.
// The scheduler runs a rank's work only when that rank syncs or waits (deterministic mode), so an
// owner's counter moves while the owner drives its device.

#include "engine.hpp"

#include <algorithm>

namespace tandem::sim {

Status Engine::export_event(const Event& event, ExportedStream& stream) {
    std::lock_guard lock(mutex);
    SimDevice* device = device_of(event.device());
    if (device == nullptr || event.sequence() == 0 || event.sequence() >= next_event ||
        event.stream().value == 0 || event.stream().value > device->streams().size()) {
        return Error::invalid_argument("the event does not belong to this runtime");
    }
    auto found = events.find(event.sequence());
    if (found != events.end() && found->second.device != device->index()) {
        return Error::invalid_argument("the event does not belong to this runtime");
    }
    // A record that completed already says now whether it followed a failed wait; one forgotten
    // (past `max_recorded_events`) completed too long ago to be remembered, and is taken as clean.
    exported_.push_back(
        ExportedEvent{event.sequence(), &stream,
                      found != events.end() ? found->second.after_failed_wait : std::nullopt});
    reach_exported();
    return {};
}

bool Engine::exported_reached(const ExportedEvent& exported) {
    if (!event_completed(exported.sequence)) {
        return false;
    }
    // The work the record happened after, on any stream (its clock): a failing write another
    // stream ordered before it by an event is on the claims too. A record forgotten (completed
    // more than the remembered events ago) is taken as after all the work that has started.
    auto found = events.find(exported.sequence);
    const VectorClock* clock = found != events.end() ? &found->second.clock : nullptr;
    return pipeline.settled_where([clock](const Work& work) {
        // Every work of the simulator's pipeline is one of its operations.
        const auto& op = static_cast<const Operation&>(work);
        if (op.epoch == 0) {
            return false;  // Not started: the completed record waited for none of it.
        }
        return clock == nullptr ||
               (op.stream_global < clock->size() && op.epoch <= (*clock)[op.stream_global]);
    });
}

void Engine::reach_exported() {
    for (auto each = exported_.begin(); each != exported_.end();) {
        if (!exported_reached(*each)) {
            ++each;
            continue;
        }
        each->stream->reach(each->sequence, each->failed_wait);
        each = exported_.erase(each);
    }
}

void Engine::note_exported_record(std::uint64_t sequence, const std::optional<Error>& failed_wait) {
    for (ExportedEvent& exported : exported_) {
        if (exported.sequence == sequence) {
            exported.failed_wait = failed_wait;
        }
    }
}

bool Engine::remote_wait_over(Operation& op) const {
    Result<bool> reached = directory.event_reached(*op.remote_event);
    if (!reached || *reached) {
        return true;
    }
    const auto now = std::chrono::steady_clock::now();
    if (!op.remote_deadline) {
        op.remote_deadline = now + directory.event_wait_limit();
    }
    return now >= *op.remote_deadline;
}

Status Engine::remote_wait_outcome(const Operation& op) const {
    const Event& event = *op.remote_event;
    Result<bool> reached = directory.event_reached(event);
    if (!reached) {
        return event_refused(event, reached.error());
    }
    if (*reached) {
        return {};
    }
    return event_not_reached(devices[op.device]->service(), event, directory.event_wait_limit());
}

bool Engine::waits_on_other_process() {
    bool waiting = false;
    for (const auto& device : devices) {
        for (SimStream& stream : device->streams()) {
            if (!stream.queue.empty() && stream.queue.front()->remote_event &&
                stream.queue.front()->state == Operation::State::Queued) {
                waiting = waiting || !remote_wait_over(*stream.queue.front());
            }
        }
    }
    return waiting;
}

}  // namespace tandem::sim
