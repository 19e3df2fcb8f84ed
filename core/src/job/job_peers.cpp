// The other ranks' devices as this rank's directory answers for them: runtimes met, boards read,
// requests asked and served. Shared names are in shared_names.cpp.

#include "job_peers.hpp"

#include "error_codec.hpp"
#include "rank_seat.hpp"
#include "wire.hpp"

#include "tandem/backend/server.hpp"

#include <unistd.h>

#include <thread>

namespace tandem::job_detail {
namespace {

constexpr std::size_t key_bytes = 24;

void put_keys(WireWriter& out, std::span<const ClaimKey> keys) {
    out.u32(static_cast<std::uint32_t>(keys.size()));
    for (const ClaimKey& key : keys) {
        out.key(key);
    }
}

std::optional<std::vector<ClaimKey>> read_keys(WireReader& in) {
    const std::uint32_t count = in.u32();
    if (!in.holds(count, key_bytes)) {
        return std::nullopt;
    }
    std::vector<ClaimKey> keys;
    keys.reserve(count);
    for (std::uint32_t index = 0; index < count; ++index) {
        keys.push_back(in.key());
    }
    return keys;
}

Error malformed(std::uint32_t rank) {
    return Error(ErrorKind::PeerUnreachable,
                 "rank " + std::to_string(rank) + " answered with a malformed message");
}

}  // namespace

JobPeers::JobPeers(std::uint32_t rank, std::uint32_t world_size, std::string folder,
                   std::chrono::milliseconds event_wait_limit)
    : rank_(rank),
      world_size_(world_size),
      folder_(std::move(folder)),
      runtimes_(world_size),
      lost_(std::make_unique<std::atomic<bool>[]>(world_size)),
      boards_(world_size),
      event_wait_limit_(event_wait_limit) {}

JobPeers::~JobPeers() { stop(); }

void JobPeers::delay_messages(std::chrono::microseconds most, std::uint64_t seed) {
    message_delay_max_ = most;
    delay_draws_.seed(seed);
}

void JobPeers::delay_frame() const {
    if (message_delay_max_.count() <= 0) {
        return;
    }
    std::uint64_t draw = 0;
    {
        std::lock_guard lock(delay_mutex_);
        draw = delay_draws_();
    }
    const auto most = static_cast<std::uint64_t>(message_delay_max_.count());
    std::this_thread::sleep_for(std::chrono::microseconds(draw % (most + 1)));
}

Status JobPeers::start(RankWatcher& watcher, std::shared_ptr<JobMember> member,
                       std::uint64_t runtime_id, std::uint32_t device_count,
                       std::string_view backend) {
    Result<std::unique_ptr<JobBoard>> board = JobBoard::create(folder_, rank_);
    if (!board) {
        return board.error();
    }
    std::lock_guard lock(mutex_);
    board_ = std::move(*board);
    watcher_ = &watcher;
    member_ = std::move(member);
    runtime_id_ = runtime_id;
    device_count_ = device_count;
    backend_ = backend;
    if (member_) {
        member_->directory().reach_remote(shared_from_this());
    }
    return {};
}

Status JobPeers::meet(std::chrono::steady_clock::time_point deadline) {
    WireWriter out;
    out.u64(runtime_id_);
    out.u32(device_count_);
    out.text(backend_);
    const std::string payload = out.take();
    for (std::uint32_t rank = 0; rank < world_size_; ++rank) {
        if (rank != rank_) {
            (void)send(rank, FrameKind::runtime, payload);  // A lost rank is not met.
        }
    }
    std::unique_lock lock(mutex_);
    const bool met = changed_.wait_until(lock, deadline, [&] {
        for (std::uint32_t rank = 0; rank < world_size_; ++rank) {
            if (rank != rank_ && !runtimes_[rank].known && runtimes_[rank].loss.empty()) {
                return false;
            }
        }
        return true;
    });
    if (!met) {
        return Error(ErrorKind::PeerUnreachable,
                     "the other ranks did not say what runtime they opened in time");
    }
    met_.assign(world_size_, {0, 0});
    for (std::uint32_t rank = 0; rank < world_size_; ++rank) {
        if (rank != rank_ && runtimes_[rank].known) {
            met_[rank] = {runtimes_[rank].runtime_id, runtimes_[rank].device_count};
        }
        if (rank != rank_ && runtimes_[rank].known) {
            // A rank makes its board before it says its runtime, so only a rank that has left
            // since has none: its memory is then never published here, nothing reads it, and
            // its end is read as the system tells it.
            Result<std::unique_ptr<JobBoard>> board = JobBoard::open(folder_, rank);
            if (board) {
                boards_[rank] = std::move(*board);
            }
        }
    }
    boards_mapped_.store(true, std::memory_order_release);
    return {};
}

Departure JobPeers::departure_of(std::uint32_t rank) const {
    const JobBoard* board =
        boards_mapped_.load(std::memory_order_acquire) ? board_of(rank) : nullptr;
    if (board == nullptr) {
        return Departure{Departure::Kind::abandoned, 0};  // Not met: its end is all there is.
    }
    const Departure departure = board->departure();
    if (departure.kind == Departure::Kind::none && !RankSeat::held(folder_, rank)) {
        return Departure{Departure::Kind::abandoned, 0};  // Out of the job without a word.
    }
    return departure;
}

void JobPeers::depart(const Departure& departure) {
    std::lock_guard lock(mutex_);
    if (board_) {
        board_->depart(departure);
    }
}

std::optional<Error> JobPeers::refusal(std::string_view call) const {
    const std::int64_t from = cut_off_from_.load(std::memory_order_acquire);
    if (from < 0) [[likely]] {
        return std::nullopt;
    }
    return Error(ErrorKind::DeviceLost,
                 std::string(call) + ": " + cut_off_words(static_cast<std::uint32_t>(from)) +
                     "; every other rank is lost to it, and its own devices work on");
}

void JobPeers::stop() {
    {
        std::unique_lock gate(gate_);
        watcher_ = nullptr;
    }
    // The runtime's last owner may be the member: it drains its work as it goes, asking this
    // directory about other ranks' events and memory, so it goes once the lock is let go.
    std::shared_ptr<JobMember> member;
    std::lock_guard lock(mutex_);
    stopped_ = true;
    for (auto& [number, awaited] : awaited_) {
        awaited.failed = true;
    }
    // Handles this rank looked up may outlive its membership; no one tells it of their owners
    // any more, so their memory reads as lost (D1) rather than as whatever is there.
    for (std::uint32_t rank = 0; rank < world_size_; ++rank) {
        if (rank != rank_ && runtimes_[rank].loss.empty()) {
            runtimes_[rank].loss = "this rank left the job, and no longer follows rank " +
                                   std::to_string(rank) + "'s claims";
        }
        lost_[rank].store(rank != rank_, std::memory_order_release);
    }
    for (auto& [name, publication] : published_) {
        if (member_) {
            member_->server(publication.owner.device_index)
                .claims()
                .unpublish(publication.pin.memory_id());
        }
    }
    published_.clear();
    member = std::move(member_);  // The runtime keeps this directory; this lets the runtime go.
    changed_.notify_all();
}

void JobPeers::on_frame(std::uint32_t rank, const Frame& frame, std::vector<int>& passed) {
    switch (frame.kind) {
        case FrameKind::runtime:
            on_runtime(rank, frame.payload);
            return;
        case FrameKind::publish:
            on_publish(rank, frame.payload, passed);
            return;
        case FrameKind::publish_event:
            on_publish_event(rank, frame.payload);
            return;
        case FrameKind::request:
            serve(rank, frame.payload);
            return;
        case FrameKind::reply:
            on_reply(frame.payload);
            return;
        case FrameKind::barrier:
        case FrameKind::meeting:
        case FrameKind::exchange:
            on_meeting(rank, frame);
            return;
        default:
            return;  // A later version's frame: nothing this rank must act on.
    }
}

void JobPeers::on_runtime(std::uint32_t rank, std::string_view payload) {
    WireReader in(payload);
    RankRuntime runtime;
    runtime.runtime_id = in.u64();
    runtime.device_count = in.u32();
    runtime.backend = in.text();
    runtime.known = in.done();
    std::lock_guard lock(mutex_);
    runtime.loss = runtimes_[rank].loss;
    runtimes_[rank] = std::move(runtime);
    changed_.notify_all();
}

void JobPeers::on_rank_lost(const RankLoss& loss) {
    if (loss.how == RankEnd::this_rank_cut_off) {
        cut_off_from_.store(loss.code, std::memory_order_release);  // Before any call hears.
    }
    std::lock_guard lock(mutex_);
    runtimes_[loss.rank].loss = loss.describe();
    lost_[loss.rank].store(true, std::memory_order_release);
    for (auto& [number, awaited] : awaited_) {
        if (awaited.rank == loss.rank) {
            awaited.failed = true;
        }
    }
    std::vector<std::string> names;
    for (auto& [name, publication] : published_) {
        if (publication.holders.erase(loss.rank) != 0) {
            names.push_back(name);
        }
    }
    for (const std::string& name : names) {
        drop_if_unheld(name);
    }
    changed_.notify_all();
}

std::optional<Error> JobPeers::gone(std::uint32_t rank, const ServiceId& device) const {
    if (rank >= world_size_) {
        return std::nullopt;
    }
    if (lost_[rank].load(std::memory_order_acquire)) [[unlikely]] {
        std::lock_guard lock(mutex_);
        return Error::device_lost(device, runtimes_[rank].loss);
    }
    if (const JobBoard* board = board_of(rank);
        board != nullptr && board->lost(device.device_index)) [[unlikely]] {
        return Error::device_lost(device,
                                  "lost on its rank, which lives on (a sticky fault of "
                                  "the device; its own reads say why)");
    }
    return std::nullopt;
}

Result<std::string> JobPeers::ask(const ServiceId& owner, Op op, std::string body) const {
    std::unique_lock lock(mutex_);
    if (stopped_) {
        return Error::device_lost(owner, "this rank left the job");
    }
    const std::uint64_t number = next_request_++;
    awaited_[number] = Awaited{owner.rank, std::nullopt, !runtimes_[owner.rank].loss.empty()};
    WireWriter out;
    out.u64(number);
    out.u8(static_cast<std::uint8_t>(op));
    out.u32(owner.device_index);
    out.rest(body);
    lock.unlock();
    const Status sent = send(owner.rank, FrameKind::request, out.take());
    lock.lock();
    Awaited& awaited = awaited_[number];
    awaited.failed = awaited.failed || !sent;
    changed_.wait(lock, [&] { return awaited.answer.has_value() || awaited.failed; });
    std::optional<std::string> answer = std::move(awaited.answer);
    awaited_.erase(number);
    if (!answer) {
        std::string why = runtimes_[owner.rank].loss;
        return Error::device_lost(owner, why.empty() ? "its rank no longer answers" : why);
    }
    return std::move(*answer);
}

void JobPeers::on_reply(std::string_view payload) {
    WireReader in(payload);
    const std::uint64_t number = in.u64();
    std::lock_guard lock(mutex_);
    if (auto found = awaited_.find(number); found != awaited_.end() && in.ok()) {
        found->second.answer = std::string(in.rest());
        changed_.notify_all();
    }
}

void JobPeers::serve(std::uint32_t rank, std::string_view payload) {
    WireReader in(payload);
    const std::uint64_t number = in.u64();
    const auto op = static_cast<Op>(in.u8());
    const std::uint32_t device = in.u32();
    if (!in.ok()) {
        return;  // Nothing to answer: the rank will be told by its own watcher when it ends.
    }
    std::string reply = answer(rank, op, device, in.rest());
    if (number == 0) {
        return;  // Told, not asked.
    }
    WireWriter out;
    out.u64(number);
    out.rest(reply);
    (void)send(rank, FrameKind::reply, out.take());
}

Status JobPeers::send(std::uint32_t rank, FrameKind kind, std::string_view payload,
                      int passed) const {
    delay_frame();  // Before the gate: a delayed frame holds up no rank's leaving.
    std::shared_lock gate(gate_);
    if (watcher_ == nullptr) {
        return Error(ErrorKind::PeerUnreachable, "this rank left the job");
    }
    return watcher_->send(rank, kind, payload, passed);
}

void JobPeers::tell(const ServiceId& owner, Op op, std::string body) const {
    WireWriter out;
    out.u64(0);  // No answer awaited.
    out.u8(static_cast<std::uint8_t>(op));
    out.u32(owner.device_index);
    out.rest(body);
    (void)send(owner.rank, FrameKind::request, out.take());
}

std::string JobPeers::answer_about_name(std::uint32_t rank, Op op, WireReader& in) {
    if (op == Op::stream_failure) {
        return stream_failure(static_cast<std::size_t>(in.u64()));
    }
    WireWriter out;
    const std::string name = in.text();
    std::lock_guard lock(mutex_);
    if (op == Op::event_published) {
        auto found = published_events_.find(name);
        out.u8(found != published_events_.end() && !found->second.withdrawn ? 1 : 0);
        return out.take();
    }
    if (op == Op::withdrawn) {
        return forget_withdrawn(rank, name);
    }
    auto found = published_.find(name);
    const bool held = found != published_.end() && !found->second.withdrawn;
    if (op == Op::pin && found != published_.end()) {
        // Withdrawn or not: a pin sent before the rank heard of the withdrawal still holds it.
        ++found->second.holders[rank];
        ++found->second.pins_arrived[rank];
    } else if (op == Op::unpin && found != published_.end()) {
        auto holder = found->second.holders.find(rank);
        if (holder != found->second.holders.end() && --holder->second == 0) {
            found->second.holders.erase(holder);
        }
        drop_if_unheld(name);
    }
    out.u8(held ? 1 : 0);
    return out.take();
}

std::string JobPeers::answer(std::uint32_t rank, Op op, std::uint32_t device,
                             std::string_view body) {
    WireReader in(body);
    WireWriter out;
    if (op == Op::stream_failure || op == Op::event_published || op == Op::pin || op == Op::unpin ||
        op == Op::withdrawn) {
        return answer_about_name(rank, op, in);
    }
    if (!member_ || device >= device_count_) {
        return out.take();  // An empty answer: the asker reads it as malformed.
    }
    // The claim store's own lock only: never a group lock, which a thread of this rank may hold
    // while it waits for an answer this watcher thread must read.
    ClaimStore& claims = member_->server(device).claims();
    switch (op) {
        case Op::first_claimed: {
            std::optional<std::vector<ClaimKey>> keys = read_keys(in);
            const auto found = keys ? claims.first_claimed(*keys) : std::nullopt;
            out.u8(found ? 1 : 0);
            if (found) {
                out.key(found->first);
                out.u64(found->second.value);
                out.rest(encode(claims.report(found->second, found->first)));
            }
            break;
        }
        case Op::check: {
            std::optional<std::vector<ClaimKey>> keys = read_keys(in);
            const Status checked = keys ? claims.check(*keys) : Status{};
            out.u8(checked ? 1 : 0);
            if (!checked) {
                out.rest(encode(checked.error()));
            }
            break;
        }
        case Op::report: {
            const FailureId failure{in.u64()};
            const ClaimKey needed = in.key();
            const std::optional<Error> report = claims.report_if_alive(failure, needed);
            out.u8(report ? 1 : 0);
            if (report) {
                out.rest(encode(*report));
            }
            break;
        }
        case Op::claim_failed: {
            std::optional<std::vector<ClaimKey>> keys = read_keys(in);
            std::optional<Error> error = decode_error(in.rest());
            if (keys && error) {
                (void)claims.fail(*keys, std::move(*error));
            }
            out.u8(keys && error ? 1 : 0);
            break;
        }
        case Op::claim_skipped: {
            std::optional<std::vector<ClaimKey>> keys = read_keys(in);
            const bool joins = in.u8() != 0;
            const FailureId join{in.u64()};
            std::optional<SkipRecord> hop = decode_skip_record(in.text());
            std::optional<Error> error = decode_error(in.rest());
            if (keys && hop && error) {
                claims.claim_skipped(*keys, joins ? std::optional<FailureId>(join) : std::nullopt,
                                     *error, std::move(*hop));
            }
            out.u8(keys && hop && error ? 1 : 0);
            break;
        }
        case Op::release: {
            const ClaimKey key = in.key();
            if (in.done()) {
                claims.release(key);
            }
            out.u8(in.done() ? 1 : 0);
            break;
        }
        default:
            break;
    }
    return out.take();
}

// ---------------------------------------------------------------- the directory of other ranks

ServiceId JobPeers::service_of(std::uint32_t device) const {
    return ServiceId{runtime_id_, device, 0, rank_};  // Not asked: work runs on local devices.
}

bool JobPeers::reaches(ServiceId service) const {
    if (service.rank >= met_.size() || service.rank == rank_) {
        return false;  // Before `meet`, no rank is reached.
    }
    const auto [runtime_id, device_count] = met_[service.rank];
    return device_count != 0 && runtime_id == service.runtime_id &&
           service.device_index < device_count;
}

std::optional<Error> JobPeers::lost(ServiceId owner) const { return gone(owner.rank, owner); }

const JobBoard* JobPeers::board_of(std::uint32_t rank) const {
    return rank < world_size_ ? boards_[rank].get() : nullptr;
}

bool JobPeers::peer_access_granted(ServiceId owner, ServiceId accessor) const {
    const JobBoard* board = board_of(owner.rank);
    return board != nullptr && board->granted(owner.device_index, accessor);
}

bool JobPeers::nothing_claimed(ServiceId /*owner*/) const {
    return false;  // Asked per allocation instead (`first_claimed` reads its word).
}

bool JobPeers::words_clean(std::span<const ClaimKey> keys) const {
    for (const ClaimKey& key : keys) {
        std::uint32_t rank = 0;
        std::size_t slot = 0;
        {
            std::shared_lock lock(slots_mutex_);
            auto found = slots_.find(key.memory);
            if (found == slots_.end()) {
                return false;  // Not published to this rank: ask the owner.
            }
            std::tie(rank, slot) = found->second;
        }
        const JobBoard* board = board_of(rank);
        if (board == nullptr || board->claimed(slot)) {
            return false;
        }
    }
    return true;
}

Status JobPeers::check(ServiceId owner, std::span<const ClaimKey> keys) const {
    if (words_clean(keys)) {
        return {};
    }
    WireWriter body;
    put_keys(body, keys);
    Result<std::string> answer = ask(owner, Op::check, body.take());
    if (!answer) {
        return answer.error();
    }
    WireReader in(*answer);
    if (in.u8() == 1 && in.done()) {
        return {};
    }
    std::optional<Error> error = decode_error(in.rest());
    return error ? *error : malformed(owner.rank);
}

std::optional<FoundClaim> JobPeers::first_claimed(ServiceId owner,
                                                  std::span<const ClaimKey> keys) const {
    if (words_clean(keys)) {
        return std::nullopt;
    }
    WireWriter body;
    put_keys(body, keys);
    Result<std::string> answer = ask(owner, Op::first_claimed, body.take());
    if (!answer) {
        // The rank is gone: the bytes are read as its loss says (D1).
        return FoundClaim{keys.empty() ? ClaimKey{} : keys.front(), FailureId{}, answer.error()};
    }
    WireReader in(*answer);
    if (in.u8() != 1) {
        return std::nullopt;
    }
    FoundClaim found{in.key(), FailureId{in.u64()}, malformed(owner.rank)};
    if (std::optional<Error> report = decode_error(in.rest())) {
        found.report = std::move(*report);
    }
    return found;
}

std::optional<Error> JobPeers::report(ServiceId owner, FailureId failure,
                                      const ClaimKey& needed) const {
    WireWriter body;
    body.u64(failure.value);
    body.key(needed);
    Result<std::string> answer = ask(owner, Op::report, body.take());
    if (!answer) {
        return answer.error();
    }
    WireReader in(*answer);
    if (in.u8() != 1) {
        return std::nullopt;
    }
    return decode_error(in.rest());
}

void JobPeers::claim_failed(ServiceId owner, std::span<const ClaimKey> keys, const Error& error) {
    WireWriter body;
    put_keys(body, keys);
    body.rest(encode(error));
    (void)ask(owner, Op::claim_failed, body.take());  // A lost owner keeps nothing to claim.
}

void JobPeers::claim_skipped(ServiceId owner, std::span<const ClaimKey> keys,
                             std::optional<FailureId> join, const Error& error, SkipRecord skip) {
    WireWriter body;
    put_keys(body, keys);
    body.u8(join ? 1 : 0);
    body.u64(join ? join->value : 0);
    body.text(encode(skip));
    body.rest(encode(error));
    (void)ask(owner, Op::claim_skipped, body.take());
}

void JobPeers::release(ServiceId owner, const ClaimKey& key) {
    const ClaimKey keys[] = {key};
    if (words_clean(keys)) {
        return;  // Nothing claimed on the allocation: a release changes nothing (C3).
    }
    WireWriter body;
    body.key(key);
    (void)ask(owner, Op::release, body.take());
}

void JobPeers::lost_here(ServiceId device) {
    std::lock_guard lock(mutex_);
    if (board_) {
        (void)board_->lose(device.device_index);
    }
}

void JobPeers::granted_remote(ServiceId owner, ServiceId accessor) {
    std::lock_guard lock(mutex_);
    if (board_) {
        (void)board_->grant(owner.device_index, accessor);
    }
}

std::optional<std::string> JobPeers::check_invariants(ServiceId /*owner*/) const {
    return std::nullopt;  // The owner checks its own claims.
}

std::size_t JobPeers::claims_size(ServiceId /*owner*/) const { return 0; }

}  // namespace tandem::job_detail
