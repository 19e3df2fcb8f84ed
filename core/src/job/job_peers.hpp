#pragma once

// The devices of the other ranks of a job, as this rank's runtime reaches them, and the memory
// ranks share by name.
//
// The owner's claims decide (docs/DESIGN.md, phase 2). A rank's runtime asks its directory about
// another rank's device as it asks about its own devices; `JobPeers` is the part of the directory
// that answers for other ranks (`LocalDirectory::reach_remote`):
// - lost: the rank is gone (the watcher read the end of its connection);
// - granted (P7) and "is a byte claimed" (C9, P3): words the owner keeps on its board, read
//   with no message, so the success path makes no round trip;
// - the report of a claimed byte, and every effect on the owner's claims (P4: a failed write
//   claims, C3: a landed one releases, C9: a skipped one claims with the hop): a request over
//   the rank's socket, answered by the owner's watcher thread from its claim store alone (a
//   leaf lock: no request waits for another), before the work that asked settles. So a peer's
//   failure is on the owner's claims before the peer's own later work, or anything the peer
//   orders after it (`Job::barrier`), can look.
//
// Memory crosses by name: the owner publishes an allocation (pinned while published and while
// any rank holds it, P2), and the descriptor of the region that holds it goes to each rank once;
// a rank that looks the name up maps the region once and gets a handle that binds like shared
// memory of its own runtime's devices.
//
// Events cross by name too (names are the job's, one namespace with memory): the owner publishes
// an event of one of its streams, and that stream gets a counter on its board (once, for every
// event of it) that its device advances as the work before each published event is settled
// (`JobMember::export_event`). A rank that looks the name up gets an event its streams and host
// wait on as on one of their own; the wait holds until the counter reaches the event's sequence
// (`event_reached`), and fails with the owner's loss, or past `event_wait_limit`. An event the
// owner recorded after a wait of its own failed is reached all the same, but a word beside the
// counter says so, and a stream waiting on it asks the owner once for the error
// (`failed_wait_before`) and skips its later work with it.

#include "job_board.hpp"
#include "rank_watcher.hpp"

#include "tandem/backend/device_directory.hpp"
#include "tandem/backend/job_member.hpp"
#include "tandem/core/handle.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <shared_mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace tandem::job_detail {

class WireReader;

class JobPeers final : public DeviceDirectory, public std::enable_shared_from_this<JobPeers> {
public:
    /// The longest name memory or an event is published under.
    static constexpr std::size_t name_bytes_max = 255;
    /// The most bytes a rank gives to one exchange (`Job::exchange`).
    static constexpr std::size_t exchange_bytes_max = job_exchange_bytes_max;
    /// The events a rank publishes, over its life.
    static constexpr std::size_t events_max = 4096;

    /// The other ranks of the job whose folder is `folder`, as rank `rank` of `world_size` reaches
    /// them; a wait for another rank's event gives up after `event_wait_limit`. `start` gives it
    /// its watcher and runtime once both are there.
    JobPeers(std::uint32_t rank, std::uint32_t world_size, std::string folder,
             std::chrono::milliseconds event_wait_limit);
    /// Delays every frame this rank sends by a time drawn from 0 to `most`, from a generator
    /// seeded with `seed` (`JoinOptions::message_delay_max`); before `start`.
    void delay_messages(std::chrono::microseconds most, std::uint64_t seed);
    ~JobPeers() override;

    /// Sends frames through `watcher`, answers for `member`'s devices (null: a rank with no
    /// runtime, or one whose backend shares nothing) and creates this rank's board.
    Status start(RankWatcher& watcher, std::shared_ptr<JobMember> member, std::uint64_t runtime_id,
                 std::uint32_t device_count, std::string_view backend);
    /// Tells every rank this rank's runtime, then waits until every rank told its own (or is
    /// lost), until `deadline`; maps their boards.
    Status meet(std::chrono::steady_clock::time_point deadline);
    /// Ends every wait of this rank's runtime on another rank's event that is not reached yet,
    /// now and from now on, with `TornDown`: this rank leaves, and its runtime's work must drain
    /// while the other ranks still answer. Before `stop`.
    void end_event_waits();
    /// Stops answering: every wait for an answer fails, nothing is sent any more. Before the
    /// watcher and the runtime go; the runtime may be destroyed here (its queued work drained),
    /// with no lock of this directory held.
    void stop();

    /// What the watcher hands over: every frame but "bye", on its thread.
    void on_frame(std::uint32_t rank, const Frame& frame, std::vector<int>& passed);
    /// A rank was lost: waits for its answers fail, its pins are let go. A loss of
    /// `RankEnd::this_rank_cut_off` cuts this rank off: every later `refusal` says so.
    void on_rank_lost(const RankLoss& loss);

    /// `Departures::of`: how rank `rank` departed, as its board and its seat say.
    [[nodiscard]] Departure departure_of(std::uint32_t rank) const;
    /// Writes `departure` on this rank's board (once it has one), before its connections close.
    void depart(const Departure& departure);
    /// `DeviceLost` saying why, for the job call `call`, once this rank is cut off from the job;
    /// none while it is in it.
    [[nodiscard]] std::optional<Error> refusal(std::string_view call) const;

    /// `Job::service`.
    [[nodiscard]] Result<ServiceId> service(std::uint32_t rank, std::uint32_t device) const;
    /// `Job::publish`.
    Status publish(std::string_view name, const Handle& handle);
    /// `Job::withdraw`, of memory or of an event.
    Status withdraw(std::string_view name);
    /// `Job::publish` of an event.
    Status publish(std::string_view name, const Event& event);
    /// `Job::lookup_event`.
    Result<Event> lookup_event(std::string_view name, std::chrono::milliseconds timeout);
    /// `Job::lookup`.
    Result<Handle> lookup(std::string_view name, std::chrono::milliseconds timeout);
    /// `Job::barrier`, once the runtime's work is settled. With `failure`, this rank votes that
    /// the step before failed: every rank's barrier then returns the first failure voted, in
    /// rank order (an agreement: the same outcome on every rank).
    Status barrier(std::chrono::milliseconds timeout,
                   const std::optional<Error>& failure = std::nullopt);
    /// `Job::send`'s and `Job::recv`'s meeting with rank `rank` alone, as `barrier` is for every
    /// rank: this rank sends (`sending`) or receives the transfer, and the meeting is passed when
    /// `rank` reached the same meeting of the other end of the same direction. Returns this
    /// rank's `failure`, else `rank`'s; `DeviceLost` when `rank` is lost first, `PeerUnreachable`
    /// when it does not come within `timeout` (two ranks that both send to each other first).
    Status meet_pair(std::uint32_t rank, bool sending, std::chrono::milliseconds timeout,
                     const std::optional<Error>& failure = std::nullopt);
    /// `Job::exchange`: every rank's value, in rank order, once every rank gave its own.
    Result<std::vector<std::string>> exchange(std::string_view value,
                                              std::chrono::milliseconds timeout);

    // The directory of the other ranks' devices.
    [[nodiscard]] ServiceId service_of(std::uint32_t device) const override;
    void count_work(std::uint32_t /*device*/) override {}  // Work runs on this rank's devices.
    [[nodiscard]] bool reaches(ServiceId service) const override;
    [[nodiscard]] std::optional<Error> lost(ServiceId owner) const override;
    [[nodiscard]] bool peer_access_granted(ServiceId owner, ServiceId accessor) const override;
    [[nodiscard]] bool nothing_claimed(ServiceId owner) const override;
    [[nodiscard]] Status check(ServiceId owner, std::span<const ClaimKey> keys) const override;
    [[nodiscard]] std::optional<FoundClaim> first_claimed(
        ServiceId owner, std::span<const ClaimKey> keys) const override;
    [[nodiscard]] std::optional<Error> report(ServiceId owner, FailureId failure,
                                              const ClaimKey& needed) const override;
    void claim_failed(ServiceId owner, std::span<const ClaimKey> keys, const Error& error) override;
    void claim_skipped(ServiceId owner, std::span<const ClaimKey> keys,
                       std::optional<FailureId> join, const Error& error, SkipRecord skip) override;
    void release(ServiceId owner, const ClaimKey& key) override;
    void granted_remote(ServiceId owner, ServiceId accessor) override;
    void lost_here(ServiceId device) override;
    [[nodiscard]] std::optional<std::string> check_invariants(ServiceId owner) const override;
    [[nodiscard]] std::size_t claims_size(ServiceId owner) const override;
    [[nodiscard]] Result<bool> event_reached(const Event& event) const override;
    [[nodiscard]] std::optional<Error> failed_wait_before(const Event& event) const override;
    [[nodiscard]] std::chrono::milliseconds event_wait_limit() const override {
        return event_wait_limit_;
    }

    /// What a request asks of an owner's claims, or does to them.
    enum class Op : std::uint8_t {
        first_claimed = 1,
        check = 2,
        report = 3,
        claim_failed = 4,
        claim_skipped = 5,
        release = 6,
        pin = 7,
        unpin = 8,
        /// The error of the failed wait a stream whose events this rank published followed.
        stream_failure = 9,
        /// Whether a name still names an event this rank published (not withdrawn).
        event_published = 10,
        /// The owner withdrew a name: the asker forgets it and answers how many pins of it it
        /// sent, so the owner keeps the memory until every one of them arrived.
        withdrawn = 11,
    };

private:
    /// Another rank's runtime, as its "runtime" frame told it.
    struct RankRuntime {
        bool known = false;
        std::uint64_t runtime_id = 0;
        std::uint32_t device_count = 0;
        std::string backend;
        /// Why it is gone, once lost; readable through `gone`.
        std::string loss;
    };
    /// Memory this rank published (the owner's record).
    struct Publication {
        PeerMemory pin;
        ServiceId owner;
        std::size_t slot = 0;
        /// Ranks that hold it, with how many handles each looked up.
        std::map<std::uint32_t, std::uint64_t> holders{};
        /// The pins each rank sent, as they arrived; and, once every rank answered the
        /// withdrawal (`withdrawals_answered`), how many each said it sent.
        std::map<std::uint32_t, std::uint64_t> pins_arrived{};
        std::map<std::uint32_t, std::uint64_t> pins_sent{};
        bool withdrawn = false;
        bool withdrawals_answered = false;
    };
    /// Memory another rank published, as its publish frame said.
    struct Received {
        std::uint32_t rank = 0;
        ServiceId owner;
        AllocationInfo allocation;
        /// The offsets of the handle the owner published.
        std::uint64_t offset_start = 0;
        std::uint64_t offset_end = 0;
        std::size_t slot = 0;
        /// The owner's label of the allocation; empty for none.
        std::string label;
    };
    class RemoteOwner;
    /// An event another rank published, as its frame said.
    struct ReceivedEvent {
        std::uint32_t rank = 0;
        ServiceId owner;
        StreamId stream;
        std::uint64_t sequence = 0;
        /// The counter of its stream on the owner's board.
        std::size_t slot = 0;
    };
    /// A stream slot as its device tells it (`JobMember::export_event`): `reach` of the slot.
    class StreamCounter final : public ExportedStream {
    public:
        StreamCounter(JobPeers& peers, std::size_t slot) : peers_(peers), slot_(slot) {}
        void reach(std::uint64_t sequence, const std::optional<Error>& failed_wait) override {
            peers_.reach(slot_, sequence, failed_wait);
        }

    private:
        JobPeers& peers_;
        const std::size_t slot_;
    };
    /// Where the counter of `event`'s stream is on this rank's board, taking a slot for a stream
    /// that has none yet; none when every slot is taken. Under `mutex_`.
    [[nodiscard]] std::optional<std::size_t> counter_slot(const Event& event);
    /// What stream slot `slot`'s device says (`ExportedStream::reach`): the failed wait first (its
    /// error kept for the peers that ask, its sequence on the board), then the counter.
    void reach(std::size_t slot, std::uint64_t sequence, const std::optional<Error>& failed_wait);
    /// The answer to `Op::stream_failure` for stream slot `slot`.
    [[nodiscard]] std::string stream_failure(std::size_t slot) const;
    /// Where `event`'s stream counter is: the owner's rank and its board slot, if published here.
    [[nodiscard]] std::optional<std::pair<std::uint32_t, std::size_t>> event_slot(
        const Event& event) const;
    /// Tells every rank still in the job that `name` names `event`, whose stream's counter is
    /// board slot `slot`: the frames go once `lock` (of `mutex_`) is let go.
    Status announce_event(std::string_view name, const Event& event, std::size_t slot,
                          std::unique_lock<std::mutex>& lock);
    void on_publish_event(std::uint32_t rank, std::string_view payload);

    /// Sends `op` to `owner`'s rank and waits for the answer; `DeviceLost` when the rank is lost
    /// first.
    Result<std::string> ask(const ServiceId& owner, Op op, std::string body) const;
    /// Sends `op` to `owner`'s rank without waiting for an answer (none comes).
    void tell(const ServiceId& owner, Op op, std::string body) const;
    /// Sends a frame through the watcher while it is there; `PeerUnreachable` once stopped.
    Status send(std::uint32_t rank, FrameKind kind, std::string_view payload,
                int passed = -1) const;
    /// Answers a request of `rank` (on the watcher thread).
    void serve(std::uint32_t rank, std::string_view payload);
    [[nodiscard]] std::string answer(std::uint32_t rank, Op op, std::uint32_t device,
                                     std::string_view body);
    /// The answer to a request of `rank` about a published name or a published stream (pin,
    /// unpin, whether an event is still published, a stream's failed wait), which needs no device.
    [[nodiscard]] std::string answer_about_name(std::uint32_t rank, Op op, WireReader& in);
    void on_publish(std::uint32_t rank, std::string_view payload, std::vector<int>& passed);
    /// `InvalidArgument` for a name of no bytes or more than `name_bytes_max`.
    static Status check_name(std::string_view name);
    /// Whether `name` may name `memory`: no rank published the name, and this rank did not
    /// publish the allocation under another; under `mutex_`.
    [[nodiscard]] Status name_free(std::string_view name, MemoryId memory) const;
    /// A publish frame for one rank, and the descriptor it passes (-1 for none).
    struct Announcement {
        std::uint32_t rank = 0;
        std::string payload;
        int descriptor = -1;
    };
    /// The frames that tell every rank still in the job that `name` names `handle` (in board
    /// slot `slot`), passing the region's descriptor to a rank the first time; under `mutex_`.
    /// The caller sends them once it lets the lock go.
    [[nodiscard]] std::vector<Announcement> announce(std::string_view name, const Handle& handle,
                                                     std::size_t slot,
                                                     const ExportedRegion& region);
    void on_reply(std::string_view payload);
    void on_runtime(std::uint32_t rank, std::string_view payload);
    /// Drops `name`'s pin once it is withdrawn and no rank holds it; under `mutex_`.
    void drop_if_unheld(const std::string& name);
    /// Whether every word of `keys` of another rank says "no byte claimed".
    [[nodiscard]] bool words_clean(std::span<const ClaimKey> keys) const;
    [[nodiscard]] const JobBoard* board_of(std::uint32_t rank) const;
    [[nodiscard]] std::optional<Error> gone(std::uint32_t rank, const ServiceId& device) const;

    const std::uint32_t rank_;
    const std::uint32_t world_size_;
    const std::string folder_;
    /// Held shared while a frame goes out through `watcher_`, exclusively to let it go.
    mutable std::shared_mutex gate_;
    RankWatcher* watcher_ = nullptr;
    std::shared_ptr<JobMember> member_;
    std::uint64_t runtime_id_ = 0;
    std::uint32_t device_count_ = 0;
    std::string backend_;
    std::unique_ptr<JobBoard> board_;

    mutable std::mutex mutex_;
    mutable std::condition_variable changed_;
    bool stopped_ = false;
    std::vector<RankRuntime> runtimes_;
    /// Whether each rank is lost (its `RankRuntime::loss` is set first): what every launch
    /// binding another rank's memory asks, without the lock.
    std::unique_ptr<std::atomic<bool>[]> lost_;
    /// Each rank's runtime as `meet` found it (id, device count), not changed after: what
    /// `reaches` reads, without the lock, for every work naming another rank's memory.
    std::vector<std::pair<std::uint64_t, std::uint32_t>> met_;
    /// The other ranks' boards, mapped by `meet` and not changed after: read without the lock
    /// (no work names another rank's memory before `meet`, which a lookup follows).
    std::vector<std::unique_ptr<JobBoard>> boards_;
    /// Set once `meet` mapped `boards_`: what the watcher thread reads before it reads a board.
    std::atomic<bool> boards_mapped_{false};
    /// The rank whose lost connection cut this rank off from the job; -1 while it is in it.
    std::atomic<std::int64_t> cut_off_from_{-1};
    std::map<std::string, Publication, std::less<>> published_;
    std::map<std::string, Received, std::less<>> received_;
    /// The pins this rank sent of each name it looked up, until the owner withdraws it.
    std::map<std::string, std::uint64_t, std::less<>> pins_sent_;
    /// Names other ranks withdrew, and by which rank, so a later lookup says so; the oldest
    /// forgotten past `withdrawn_names_max`.
    std::map<std::string, std::uint32_t, std::less<>> withdrawn_names_;
    /// `withdrawn_names_`'s names, oldest first.
    std::deque<std::string> withdrawn_order_;
    static constexpr std::size_t withdrawn_names_max = 4096;
    /// This rank's answer to rank `owner`'s withdrawal of `name`: it forgets the name and says
    /// how many pins of it it sent; under `mutex_`.
    std::string forget_withdrawn(std::uint32_t owner, const std::string& name);
    /// The board slot of each allocation other ranks published, by memory id; under
    /// `slots_mutex_`, read on every launch binding another rank's memory.
    mutable std::shared_mutex slots_mutex_;
    std::unordered_map<MemoryId, std::pair<std::uint32_t, std::size_t>> slots_;
    /// Events this rank published, by name, and the board slot of each stream they are on, by
    /// (device, stream). A withdrawn event keeps its name (and its counter moves on for the
    /// ranks that hold it); only new lookups of it fail.
    struct PublishedEvent {
        Event event;
        bool withdrawn = false;
    };
    std::map<std::string, PublishedEvent, std::less<>> published_events_;
    std::map<std::pair<std::uint32_t, std::uint64_t>, std::size_t> stream_slots_;
    /// What each stream slot's device tells (`export_event`), by slot: kept as long as this
    /// directory, which the runtime whose work tells them keeps.
    std::vector<std::unique_ptr<StreamCounter>> stream_counters_;
    /// A leaf lock (a device tells a counter under its own lock): the errors of the failed waits
    /// this rank's published streams followed, by slot, and those other ranks told this rank of,
    /// by (rank, slot). A stream that followed one follows it for good, so one error a stream.
    mutable std::mutex failures_mutex_;
    std::map<std::size_t, Error> stream_failures_;
    mutable std::map<std::pair<std::uint32_t, std::size_t>, Error> failures_heard_;
    /// Events other ranks published, by name.
    std::map<std::string, ReceivedEvent, std::less<>> received_events_;
    /// The board slot of each stream of another rank whose events it published, by (owner,
    /// stream); under `slots_mutex_`, read by every wait on another rank's event.
    std::map<std::pair<ServiceId, std::uint64_t>, std::pair<std::uint32_t, std::size_t>>
        event_slots_;
    const std::chrono::milliseconds event_wait_limit_;
    /// The longest delay of a frame (`delay_messages`); zero: none.
    std::chrono::microseconds message_delay_max_{0};
    /// Draws each frame's delay; under `delay_mutex_`.
    mutable std::mt19937_64 delay_draws_;
    mutable std::mutex delay_mutex_;
    /// Waits the delay of the next frame, drawn.
    void delay_frame() const;
    /// Set by `end_event_waits`: read by every look at another rank's event.
    std::atomic<bool> leaving_{false};
    /// Regions whose descriptor went to a rank already: (rank, base address).
    std::set<std::pair<std::uint32_t, std::uint64_t>> regions_sent_;
    std::map<ServiceId, std::shared_ptr<RemoteOwner>> owners_;
    /// Answers awaited, by request number: the rank asked, and the answer once it came.
    struct Awaited {
        std::uint32_t rank = 0;
        std::optional<std::string> answer;
        bool failed = false;
    };
    mutable std::uint64_t next_request_ = 1;
    mutable std::unordered_map<std::uint64_t, Awaited> awaited_;
    /// A sequence of meetings (meetings.cpp): the job's barriers, or the meetings of one
    /// direction of transfers between this rank and another.
    struct Meetings {
        /// The meetings this rank held so far.
        std::uint64_t held = 0;
        /// The latest meeting each rank reached, by rank.
        std::map<std::uint32_t, std::uint64_t> seen;
        /// Failures voted, by (rank, generation), until that meeting is passed.
        std::map<std::pair<std::uint32_t, std::uint64_t>, Error> failed_votes;
        /// Values given to an exchange, by (rank, generation), until it is passed.
        std::map<std::pair<std::uint32_t, std::uint64_t>, std::string> values;
    };
    /// Every sequence of meetings, by `meetings_key`; under `mutex_`.
    std::map<std::uint64_t, Meetings> meetings_;
    /// The key of the job's exchanges (`Job::exchange`), apart from every other meeting.
    static constexpr std::uint64_t exchanges_key = ~std::uint64_t{0};
    /// The key of the job's barriers (none), or of the meetings with `rank` for transfers this
    /// rank sends (`sending`) or receives.
    [[nodiscard]] static std::uint64_t meetings_key(std::optional<std::uint32_t> rank,
                                                    bool sending);
    /// Holds the next meeting of `key` with `ranks`, voting `failure` and giving `value`: tells
    /// each with a frame of `kind` (`prefix` before the vote) and waits for each to reach it.
    /// Returns the vote, and the meeting's generation in `generation`.
    Status meet(std::uint64_t key, std::span<const std::uint32_t> ranks, FrameKind kind,
                std::string_view prefix, std::chrono::milliseconds timeout,
                const std::optional<Error>& failure, std::string_view value = {},
                std::uint64_t* generation = nullptr);
    /// Every rank but this one, in rank order.
    [[nodiscard]] std::vector<std::uint32_t> other_ranks() const;
    /// A barrier or meeting frame of `rank`: what it reached and how it voted.
    void on_meeting(std::uint32_t rank, const Frame& frame);
    /// The outcome of meeting `generation` of `meetings`: the failure of the lowest rank that
    /// voted one (this rank's `failure` included), as "rank R: " and its words, the same on every
    /// rank met; under `mutex_`.
    Status vote_of(Meetings& meetings, std::uint64_t generation,
                   const std::optional<Error>& failure) const;
};

}  // namespace tandem::job_detail
