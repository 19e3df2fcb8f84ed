// Events ranks share by name: published by the rank that recorded them, looked up by the others,
// and reached when the recorder's board counter of their stream says so. An event recorded after
// a wait that failed on its owner passes that failure on to the streams of other ranks that wait
// on it, as a local one does: the board says which events of a stream follow a failed wait (a
// stream that failed a wait skips all its later work, so one sequence a stream says it), and the
// owner sends the error itself, through the error codec, to each rank that asks.

#include "job_peers.hpp"

#include "error_codec.hpp"
#include "wire.hpp"

#include "tandem/backend/server.hpp"

namespace tandem::job_detail {

void JobPeers::reach(std::size_t slot, std::uint64_t sequence,
                     const std::optional<Error>& failed_wait) {
    if (failed_wait) [[unlikely]] {
        std::lock_guard lock(failures_mutex_);
        stream_failures_.try_emplace(slot, *failed_wait);  // Kept before any peer reads the word.
        std::atomic<std::uint64_t>& from = board_->stream_failed_from(slot);
        if (const std::uint64_t known = from.load(std::memory_order_relaxed);
            known == 0 || sequence < known) {
            from.store(sequence, std::memory_order_release);
        }
    }
    // Only this process writes the counter, after the word above; it only grows.
    std::atomic<std::uint64_t>& counter = board_->stream_counter(slot);
    if (counter.load(std::memory_order_relaxed) < sequence) {
        counter.store(sequence, std::memory_order_release);
    }
}

std::string JobPeers::stream_failure(std::size_t slot) const {
    WireWriter out;
    std::lock_guard lock(failures_mutex_);
    auto found = stream_failures_.find(slot);
    out.u8(found != stream_failures_.end() ? 1 : 0);
    if (found != stream_failures_.end()) {
        out.rest(encode(found->second));
    }
    return out.take();
}

std::optional<std::size_t> JobPeers::counter_slot(const Event& event) {
    const std::pair<std::uint32_t, std::uint64_t> stream{event.device().device_index,
                                                         event.stream().value};
    if (auto found = stream_slots_.find(stream); found != stream_slots_.end()) {
        return found->second;
    }
    if (stream_slots_.size() == JobBoard::stream_slots) {
        return std::nullopt;
    }
    const std::size_t slot = stream_slots_.size();
    stream_slots_.emplace(stream, slot);
    stream_counters_.push_back(std::make_unique<StreamCounter>(*this, slot));
    return slot;
}

Status JobPeers::publish(std::string_view name, const Event& event) {
    if (std::optional<Error> refused = refusal("publish")) {
        return *refused;
    }
    if (Status valid = check_name(name); !valid) {
        return valid;
    }
    if (!member_) {
        return Error::invalid_argument("this rank's runtime (" + backend_ +
                                       ") shares no events with other processes");
    }
    if (event.empty() || event.device().runtime_id != runtime_id_ ||
        event.device().device_index >= device_count_) {
        return Error::invalid_argument(
            "only events this rank's own devices recorded are published; an event of " +
            (event.empty() ? std::string("no device") : to_string(event.device())) + " is not");
    }
    if (std::optional<Error> gone = member_->server(event.device().device_index).lost()) {
        return Error::device_lost(event.device(), "cannot publish an event of a lost device")
            .caused_by(*gone);
    }
    std::unique_lock lock(mutex_);
    if (Status free = name_free(name, MemoryId{}); !free) {
        return free;
    }
    if (published_events_.size() == events_max) {
        return Error::invalid_argument("this rank published " + std::to_string(events_max) +
                                       " events already, the most it may");
    }
    const std::optional<std::size_t> slot = counter_slot(event);
    if (!slot) {
        return Error::invalid_argument(
            "this rank published events of " + std::to_string(JobBoard::stream_slots) +
            " streams already, the most it may; publish events of those streams instead");
    }
    ExportedStream& counter = *stream_counters_[*slot];
    // Without the lock: the runtime's work asks this directory questions under its own lock.
    lock.unlock();
    if (Status exported = member_->export_event(event, counter); !exported) {
        return exported;  // The slot stays its stream's; its counter only grows.
    }
    lock.lock();
    if (Status free = name_free(name, MemoryId{}); !free) {
        return free;  // Taken meanwhile: the counter this event advances harms no one.
    }
    published_events_.emplace(std::string(name), PublishedEvent{event});
    return announce_event(name, event, *slot, lock);
}

Status JobPeers::announce_event(std::string_view name, const Event& event, std::size_t slot,
                                std::unique_lock<std::mutex>& lock) {
    WireWriter out;
    out.text(name);
    out.service(event.device());
    out.u64(event.stream().value);
    out.u64(event.sequence());
    out.u64(slot);
    const std::string payload = out.take();
    std::vector<std::uint32_t> ranks;
    for (std::uint32_t rank = 0; rank < world_size_; ++rank) {
        if (rank != rank_ && runtimes_[rank].loss.empty()) {
            ranks.push_back(rank);
        }
    }
    lock.unlock();  // A send may wait for a rank to read; the watcher needs the lock meanwhile.
    for (std::uint32_t rank : ranks) {
        (void)send(rank, FrameKind::publish_event, payload);  // A rank lost meanwhile needs none.
    }
    return {};
}

void JobPeers::on_publish_event(std::uint32_t rank, std::string_view payload) {
    WireReader in(payload);
    const std::string name = in.text();
    ReceivedEvent received;
    received.rank = rank;
    received.owner = in.service();
    received.stream = StreamId{in.u64()};
    received.sequence = in.u64();
    received.slot = in.u64();
    if (!in.done() || received.owner.rank != rank || received.slot >= JobBoard::stream_slots ||
        received.sequence == 0) {
        return;  // Not an event this rank can wait on; a lookup of it times out.
    }
    {
        std::unique_lock slots(slots_mutex_);
        event_slots_[{received.owner, received.stream.value}] = {rank, received.slot};
    }
    std::lock_guard lock(mutex_);
    received_events_[name] = received;
    changed_.notify_all();
}

Result<Event> JobPeers::lookup_event(std::string_view name, std::chrono::milliseconds timeout) {
    if (std::optional<Error> refused = refusal("lookup_event")) {
        return *refused;
    }
    if (Status valid = check_name(name); !valid) {
        return valid.error();
    }
    if (!member_) {
        return Error::invalid_argument("this rank's runtime (" + backend_ +
                                       ") waits on no events of other processes");
    }
    std::unique_lock lock(mutex_);
    const bool found = changed_.wait_for(lock, timeout, [&] {
        return stopped_ || received_events_.contains(name) || published_events_.contains(name) ||
               received_.contains(name) || published_.contains(name);
    });
    if (published_events_.contains(name)) {
        return Error::invalid_argument("'" + std::string(name) +
                                       "' is this rank's own event: use the event it published");
    }
    if (received_.contains(name) || published_.contains(name)) {
        return Error::invalid_argument("'" + std::string(name) +
                                       "' names memory, not an event: look it up with `lookup`");
    }
    if (!found || stopped_) {
        return Error::invalid_argument("no rank published an event '" + std::string(name) +
                                       "' within " + std::to_string(timeout.count()) +
                                       " ms (an event is published by `Job::publish`)");
    }
    const ReceivedEvent received = received_events_.find(name)->second;
    lock.unlock();
    if (std::optional<Error> lost = gone(received.rank, received.owner)) {
        return *lost;
    }
    WireWriter body;
    body.text(name);
    Result<std::string> published = ask(received.owner, Op::event_published, body.take());
    if (!published) {
        return published.error();
    }
    if (*published != std::string(1, '\1')) {
        return Error::invalid_argument("'" + std::string(name) + "' was withdrawn by rank " +
                                       std::to_string(received.rank));
    }
    return member_->server(0).import_event(received.owner, received.stream, received.sequence);
}

std::optional<std::pair<std::uint32_t, std::size_t>> JobPeers::event_slot(
    const Event& event) const {
    std::shared_lock lock(slots_mutex_);
    if (auto found = event_slots_.find({event.device(), event.stream().value});
        found != event_slots_.end() && board_of(found->second.first) != nullptr) {
        return found->second;
    }
    return std::nullopt;
}

Result<bool> JobPeers::event_reached(const Event& event) const {
    const ServiceId owner = event.device();
    const std::optional<std::pair<std::uint32_t, std::size_t>> where = event_slot(event);
    if (!where) {
        return Error::invalid_argument("event " + std::to_string(event.sequence()) + " of " +
                                       to_string(event.stream()) + " of " + to_string(owner) +
                                       " was not published to rank " + std::to_string(rank_) +
                                       " (events cross ranks by `Job::publish`)");
    }
    // The loss first: a counter read after it is the owner's last word, and work the owner
    // settled before it died stays reached.
    std::optional<Error> lost = gone(where->first, owner);
    if (board_of(where->first)->stream_reached(where->second) >= event.sequence()) {
        return true;
    }
    if (lost) {
        return *lost;
    }
    if (leaving_.load(std::memory_order_acquire)) [[unlikely]] {
        return Error::torn_down("rank " + std::to_string(rank_) + " left the job before event " +
                                std::to_string(event.sequence()) + " of " +
                                to_string(event.stream()) + " of " + to_string(owner) +
                                " was reached: its waits on other ranks' events ended");
    }
    return false;
}

void JobPeers::end_event_waits() { leaving_.store(true, std::memory_order_release); }

std::optional<Error> JobPeers::failed_wait_before(const Event& event) const {
    const std::optional<std::pair<std::uint32_t, std::size_t>> where = event_slot(event);
    if (!where || !board_of(where->first)->stream_failed_at(where->second, event.sequence())) {
        return std::nullopt;  // The clean path: one word read, no message.
    }
    std::optional<Error> cause;
    {
        std::lock_guard lock(failures_mutex_);
        if (auto heard = failures_heard_.find(*where); heard != failures_heard_.end()) {
            cause = heard->second;
        }
    }
    if (!cause) {
        WireWriter body;
        body.u64(where->second);
        Result<std::string> answer = ask(event.device(), Op::stream_failure, body.take());
        WireReader in(answer ? std::string_view(*answer) : std::string_view());
        if (!answer) {
            cause = answer.error();  // The owner is gone: why its stream failed went with it.
        } else if (in.u8() == 1) {
            cause = decode_error(in.rest());
        }
        if (!cause) {
            cause = Error(ErrorKind::PeerUnreachable, "rank " + std::to_string(where->first) +
                                                          " answered with a malformed message");
        }
        std::lock_guard lock(failures_mutex_);
        cause = failures_heard_.try_emplace(*where, *cause).first->second;
    }
    return Error(cause->kind(),
                 "event " + std::to_string(event.sequence()) + " of " + to_string(event.stream()) +
                     " of " + to_string(event.device()) +
                     " was recorded after a wait that failed there (that stream skips its work "
                     "from the wait on)",
                 cause->details())
        .caused_by(*cause);
}

}  // namespace tandem::job_detail
