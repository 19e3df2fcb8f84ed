// Meetings of ranks: the job's barrier, where every rank meets every other, and the meeting of
// two ranks alone that a send and its receive hold. Each is a frame to the ranks met ("I reached
// meeting n, and voted this") and a wait until each of them reached it too, or was lost (a lost
// rank ends the wait at once, failed: never a hang). A vote is how a rank's failed step becomes
// every rank's outcome (the collectives' agreements). A pair keeps one sequence of meetings per
// direction, so two ranks that each send to the other first wait for the other's receive, and
// say so when the time is up, instead of taking two sends for a send and its receive. An exchange
// is a meeting of every rank whose frame also carries a value (`Job::exchange`).

#include "error_codec.hpp"
#include "job_peers.hpp"
#include "wire.hpp"

namespace tandem::job_detail {
namespace {

/// What messages call a meeting of frames of `kind`: "barrier", "exchange", "meeting".
std::string_view meeting_name(FrameKind kind) {
    return kind == FrameKind::barrier    ? "barrier"
           : kind == FrameKind::exchange ? "exchange"
                                         : "meeting";
}

}  // namespace

std::uint64_t JobPeers::meetings_key(std::optional<std::uint32_t> rank, bool sending) {
    return rank ? 1 + 2 * static_cast<std::uint64_t>(*rank) + (sending ? 1 : 0) : 0;
}

std::vector<std::uint32_t> JobPeers::other_ranks() const {
    std::vector<std::uint32_t> others;
    for (std::uint32_t rank = 0; rank < world_size_; ++rank) {
        if (rank != rank_) {
            others.push_back(rank);
        }
    }
    return others;
}

Status JobPeers::barrier(std::chrono::milliseconds timeout, const std::optional<Error>& failure) {
    return meet(meetings_key(std::nullopt, false), other_ranks(), FrameKind::barrier, {}, timeout,
                failure);
}

Result<std::vector<std::string>> JobPeers::exchange(std::string_view value,
                                                    std::chrono::milliseconds timeout) {
    if (value.size() > exchange_bytes_max) {
        return Error::invalid_argument("an exchange carries at most " +
                                       std::to_string(exchange_bytes_max) + " bytes a rank, not " +
                                       std::to_string(value.size()));
    }
    std::uint64_t generation = 0;
    if (Status met = meet(exchanges_key, other_ranks(), FrameKind::exchange, {}, timeout,
                          std::nullopt, value, &generation);
        !met) {
        return met.error();
    }
    std::vector<std::string> values(world_size_);
    values[rank_] = std::string(value);
    std::lock_guard lock(mutex_);
    Meetings& exchanges = meetings_[exchanges_key];
    for (std::uint32_t rank : other_ranks()) {
        auto given = exchanges.values.find({rank, generation});
        if (given != exchanges.values.end()) {
            values[rank] = std::move(given->second);
            exchanges.values.erase(given);
        }
    }
    return values;
}

Status JobPeers::meet_pair(std::uint32_t rank, bool sending, std::chrono::milliseconds timeout,
                           const std::optional<Error>& failure) {
    const std::uint32_t ranks[] = {rank};
    const char direction = sending ? '\1' : '\0';
    return meet(meetings_key(rank, sending), ranks, FrameKind::meeting,
                std::string_view(&direction, 1), timeout, failure);
}

Status JobPeers::meet(std::uint64_t key, std::span<const std::uint32_t> ranks, FrameKind kind,
                      std::string_view prefix, std::chrono::milliseconds timeout,
                      const std::optional<Error>& failure, std::string_view value,
                      std::uint64_t* generation_out) {
    if (std::optional<Error> refused = refusal(meeting_name(kind))) {
        return *refused;  // Before it takes a generation: nothing of the meeting happens.
    }
    std::unique_lock lock(mutex_);
    const std::uint64_t generation = ++meetings_[key].held;
    lock.unlock();
    if (generation_out != nullptr) {
        *generation_out = generation;
    }
    WireWriter out;
    out.rest(prefix);
    out.u64(generation);
    out.u8(failure ? 1 : 0);
    out.text(failure ? encode(*failure) : std::string());
    out.text(value);
    const std::string payload = out.take();
    for (std::uint32_t rank : ranks) {
        (void)send(rank, kind, payload);
    }
    lock.lock();
    std::optional<std::uint32_t> missing;
    const bool met = changed_.wait_for(lock, timeout, [&] {
        // Every rank not come yet is looked at: a lost one ends the wait, failed, whichever rank
        // the meeting still waits for first; else the first missing one is named on a timeout.
        missing.reset();
        for (std::uint32_t rank : ranks) {
            if (meetings_[key].seen[rank] < generation) {
                if (!runtimes_[rank].loss.empty()) {
                    missing = rank;
                    return true;
                }
                missing = missing.value_or(rank);
            }
        }
        return !missing;
    });
    if (missing) {
        const std::string& loss = runtimes_[*missing].loss;
        return Error(met ? ErrorKind::DeviceLost : ErrorKind::PeerUnreachable,
                     "the " + std::string(meeting_name(kind)) + " cannot be passed: " +
                         (met ? loss
                              : "rank " + std::to_string(*missing) + " did not reach it within " +
                                    std::to_string(timeout.count()) + " ms"));
    }
    return vote_of(meetings_[key], generation, failure);
}

void JobPeers::on_meeting(std::uint32_t rank, const Frame& frame) {
    WireReader in(frame.payload);
    // A meeting frame says which end of the transfer its sender is; this rank is the other.
    const std::uint64_t key = frame.kind == FrameKind::barrier ? meetings_key(std::nullopt, false)
                              : frame.kind == FrameKind::exchange
                                  ? exchanges_key
                                  : meetings_key(rank, in.u8() == 0);
    const std::uint64_t generation = in.u64();
    const bool failed = in.u8() != 0;
    const std::string vote = in.text();
    std::string value = in.text();
    std::optional<Error> failure;
    if (failed) {
        failure = decode_error(vote);
    }
    std::lock_guard lock(mutex_);
    Meetings& meetings = meetings_[key];
    if (frame.kind == FrameKind::exchange && in.ok()) {
        meetings.values.insert_or_assign({rank, generation}, std::move(value));
    }
    if (failed) {
        meetings.failed_votes.insert_or_assign(
            {rank, generation},
            failure.value_or(Error(ErrorKind::PeerUnreachable, "a malformed vote")));
    }
    meetings.seen[rank] = std::max(meetings.seen[rank], generation);
    changed_.notify_all();
}

Status JobPeers::vote_of(Meetings& meetings, std::uint64_t generation,
                         const std::optional<Error>& failure) const {
    // The lowest failing rank's vote, this rank's own included, in the same words on every rank
    // ("rank R: ..."): a rank that failed must not keep its own error while the others report a
    // lower rank's, nor word its own differently from how the others word it.
    std::optional<std::uint32_t> voter_first = failure ? std::optional(rank_) : std::nullopt;
    const Error* first = failure ? &*failure : nullptr;
    // The map is in rank order: the first failure of this meeting found is the lowest rank's.
    for (const auto& [voter, error] : meetings.failed_votes) {
        if (voter.second == generation) {
            if (!voter_first || voter.first < *voter_first) {
                voter_first = voter.first;
                first = &error;
            }
            break;
        }
    }
    Status outcome =
        first ? Status(Error(first->kind(),
                             "rank " + std::to_string(*voter_first) + ": " + first->message(),
                             first->details()))
              : Status{};
    std::erase_if(meetings.failed_votes,
                  [generation](const auto& vote) { return vote.first.second <= generation; });
    return outcome;
}

}  // namespace tandem::job_detail
