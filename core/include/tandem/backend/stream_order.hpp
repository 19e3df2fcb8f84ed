#pragma once

// What a pool needs to know about stream order: memory released on one stream may be reused on
// that stream at once (its work is ordered after the release), but reuse on another stream must
// first wait for an event recorded on the releasing stream.

#include "tandem/core/ids.hpp"

#include <cstdint>
#include <mutex>
#include <unordered_set>
#include <vector>

namespace tandem {

/// A point in one stream's work, as a memory pool waits for it; tokens only grow.
struct EventToken {
    /// The token's number.
    std::uint64_t value = 0;
    /// Ordered by number: a later token sorts after.
    friend constexpr auto operator<=>(const EventToken&, const EventToken&) = default;
};

/// Where and when a block was released.
struct ReleaseMark {
    /// The stream that released the block.
    StreamId stream;
    /// An event recorded on it at the release.
    EventToken event;
};

/// What a memory pool asks of stream order: an event recorded on a stream, whether it completed,
/// and making a stream wait for it. Each backend provides one.
class StreamOrder {
public:
    virtual ~StreamOrder() = default;
    /// An event recorded on `stream` now: it completes when the stream's earlier work has.
    virtual EventToken record(StreamId stream) = 0;
    /// Whether `event` completed: every work before it on its stream did.
    [[nodiscard]] virtual bool completed(EventToken event) const = 0;
    /// Later work on `waiter` waits for `event`.
    virtual void wait(StreamId waiter, EventToken event) = 0;
};

/// A stream order for a backend whose work holds bindings of the memory it uses until the host has
/// resolved its outcome: when the last reference to an allocation goes, no work that used it is
/// still running, so its release has completed on every stream and no event is needed.
class CompletedStreamOrder final : public StreamOrder {
public:
    EventToken record(StreamId /*stream*/) override { return EventToken{++next_event_}; }
    /// Always: no work that used released memory can still be running.
    [[nodiscard]] bool completed(EventToken /*event*/) const override { return true; }
    void wait(StreamId /*waiter*/, EventToken /*event*/) override {}

private:
    std::uint64_t next_event_ = 0;  // The memory manager serialises calls.
};

/// A stream order whose events complete only when told: lets tests hold a release in flight.
class ManualStreamOrder final : public StreamOrder {
public:
    /// A wait a test asked for: `waiter` waits for `event`.
    struct Wait {
        /// The stream that waits.
        StreamId waiter;
        /// The event it waits for.
        EventToken event;
    };
    EventToken record(StreamId stream) override;
    /// Whether `complete` (or `complete_all`) was called for `event`.
    [[nodiscard]] bool completed(EventToken event) const override;
    void wait(StreamId waiter, EventToken event) override;

    /// Marks `event` completed.
    void complete(EventToken event);
    /// Marks every event recorded so far completed.
    void complete_all();
    /// Every wait asked for, in order.
    [[nodiscard]] std::vector<Wait> waits() const;

private:
    mutable std::mutex mutex_;
    std::uint64_t next_event_ = 1;
    std::unordered_set<std::uint64_t> pending_;
    std::vector<Wait> waits_;
};

}  // namespace tandem
