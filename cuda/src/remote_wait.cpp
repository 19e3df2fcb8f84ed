#include "remote_wait.hpp"

#include "tandem/backend/cross_process_events.hpp"

#include <algorithm>
#include <vector>

namespace tandem::cuda {

bool RemoteWait::over() const {
    if (all_over_.load(std::memory_order_acquire)) {
        return true;
    }
    // A wait's host function returns after every earlier one of its stream, and after the waits
    // of another stream that a local event it waited on was recorded after (the GPU waits for
    // that event first). So a wait that ended is over; a join is over once both sides are.
    const bool done = event.empty() ? (previous == nullptr || previous->over()) &&
                                          (joined == nullptr || joined->over())
                                    : ended.load(std::memory_order_acquire);
    if (done) {
        all_over_.store(true, std::memory_order_release);
    }
    return done;
}

const std::optional<Error>& RemoteWait::failure() {
    if (resolved_ || !over()) {
        return failure_;
    }
    // Oldest first, so that each wait finds the one before it resolved.
    std::vector<RemoteWait*> chain;
    for (RemoteWait* wait = this; wait != nullptr && !wait->resolved_;
         wait = wait->previous.get()) {
        chain.push_back(wait);
    }
    for (auto wait = chain.rbegin(); wait != chain.rend(); ++wait) {
        (*wait)->resolve_one();
    }
    return failure_;
}

void RemoteWait::resolve_one() {
    resolved_ = true;
    if (previous != nullptr && previous->failure_) {
        failure_ = previous->failure_;
    } else if (joined != nullptr) {
        failure_ = joined->failure();
    } else if (!outcome) {
        failure_ = outcome.error();
    } else if (!event.empty()) {
        failure_ = directory->failed_wait_before(event);  // Its owner's stream failed before it.
    }
}

void RemoteWait::run(void* data) {
    auto* held = static_cast<std::shared_ptr<RemoteWait>*>(data);
    RemoteWait& wait = **held;
    const RemoteWait* before = wait.previous.get();
    if (before != nullptr && before->ended.load(std::memory_order_acquire) && !before->outcome) {
        // The stream skips its work from that wait on: nothing here is worth waiting for.
        wait.outcome = before->outcome;
    } else {
        wait.outcome = wait_for_other_process(*wait.directory, wait.waiter, wait.event);
    }
    wait.ended.store(true, std::memory_order_release);
    delete held;
}

std::shared_ptr<RemoteWait> remote_wait(const Event& event, ServiceId waiter,
                                        std::shared_ptr<const DeviceDirectory> directory,
                                        std::shared_ptr<RemoteWait> previous,
                                        std::uint64_t from_event) {
    auto wait = std::make_shared<RemoteWait>();
    wait->event = event;
    wait->waiter = waiter;
    wait->directory = std::move(directory);
    wait->depth = previous != nullptr ? previous->depth + 1 : 1;
    wait->previous = std::move(previous);
    wait->from_event = from_event;
    return wait;
}

std::shared_ptr<RemoteWait> wait_before_event(std::shared_ptr<RemoteWait> newest,
                                              std::uint64_t sequence) {
    for (std::shared_ptr<RemoteWait> wait = std::move(newest); wait != nullptr;
         wait = wait->previous) {
        if (wait->from_event <= sequence) {
            return wait;
        }
    }
    return nullptr;
}

std::shared_ptr<RemoteWait> failed_wait(Error error) {
    auto wait = std::make_shared<RemoteWait>();
    wait->outcome = std::move(error);
    wait->ended.store(true, std::memory_order_release);
    return wait;
}

std::shared_ptr<RemoteWait> joined_wait(std::shared_ptr<RemoteWait> previous,
                                        std::shared_ptr<RemoteWait> joined,
                                        std::uint64_t from_event) {
    auto wait = std::make_shared<RemoteWait>();
    wait->depth = std::max(previous != nullptr ? previous->depth : 0, joined->depth) + 1;
    wait->previous = std::move(previous);
    wait->joined = std::move(joined);
    wait->from_event = from_event;
    wait->ended.store(true, std::memory_order_release);  // No host function: nothing to wait for.
    return wait;
}

}  // namespace tandem::cuda
