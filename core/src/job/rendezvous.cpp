// The rendezvous: seats, hellos and the full mesh of connections that is the join's barrier.

#include "rendezvous.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace tandem::job_detail {
namespace {

/// How long an accepted connection may take to say hello: a process that connects and says
/// nothing does not hold the join past this.
constexpr auto hello_wait_max = std::chrono::seconds(5);
/// How often a rank tries again to connect to a lower rank that is not listening yet.
constexpr int connect_retry_ms = 5;

/// The state of one rank's rendezvous.
struct Meeting {
    const JobEnvironment& environment;
    Clock::time_point deadline;
    std::vector<RankConnection> peers;
    int listener = -1;

    [[nodiscard]] Clock::time_point hello_deadline() const {
        return std::min(deadline, Clock::now() + hello_wait_max);
    }
    [[nodiscard]] RankIntroduction introduction() const {
        return {environment.rank, environment.world_size, environment.job_id};
    }
};

/// Why the hello `frame` cannot be accepted by this rank; empty when it can.
std::string refusal_for(const Meeting& meeting, const Frame& frame) {
    const std::optional<RankIntroduction> hello = decode_introduction(frame.payload);
    const JobEnvironment& own = meeting.environment;
    if (frame.kind != FrameKind::hello || !hello) {
        return "the first frame was not a hello";
    }
    if (hello->job_id != own.job_id) {
        return "the hello is for job '" + hello->job_id + "', but rank " +
               std::to_string(own.rank) + " is in job '" + own.job_id +
               "' (a wrong TANDEM_JOB_ID, or another job's TANDEM_JOB_DIR)";
    }
    if (hello->world_size != own.world_size) {
        return "the hello is for a job of " + std::to_string(hello->world_size) +
               " ranks, but job '" + own.job_id + "' has " + std::to_string(own.world_size);
    }
    if (hello->rank >= own.world_size || hello->rank <= own.rank) {
        return "rank " + std::to_string(hello->rank) + " may not connect to rank " +
               std::to_string(own.rank) + " (ranks connect to the ranks below them" +
               (hello->rank == own.rank ? "; this rank joined twice)" : ")");
    }
    const RankConnection& known = meeting.peers[hello->rank];
    if (known.descriptor >= 0) {
        return "rank " + std::to_string(hello->rank) + " joined twice: rank " +
               std::to_string(own.rank) + " is connected to rank " + std::to_string(hello->rank) +
               " (pid " + std::to_string(known.pid) + ") already";
    }
    return {};
}

/// Accepts one connection and answers its hello; a refused one is closed and forgotten (its
/// sender learns why from the refusal).
void accept_one(Meeting& meeting) {
    const int descriptor = ::accept4(meeting.listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (descriptor < 0) {
        return;
    }
    Result<PeerCredentials> peer = check_peer_user(descriptor, ::geteuid());
    if (!peer) {
        (void)send_frame(descriptor, FrameKind::refusal, peer.error().message());
        ::close(descriptor);
        return;
    }
    Result<Frame> hello = receive_frame(descriptor, meeting.hello_deadline());
    if (!hello) {
        ::close(descriptor);
        return;
    }
    const std::string refusal = refusal_for(meeting, *hello);
    if (!refusal.empty()) {
        (void)send_frame(descriptor, FrameKind::refusal, refusal);
        ::close(descriptor);
        return;
    }
    if (!send_frame(descriptor, FrameKind::welcome, encode(meeting.introduction()))) {
        ::close(descriptor);
        return;
    }
    meeting.peers[decode_introduction(hello->payload)->rank] = {descriptor, peer->pid};
}

/// The welcome of rank `peer` checked: `InvalidArgument` when it refused this rank, or answered
/// as another rank, job or world size.
Status check_answer(const Meeting& meeting, std::uint32_t peer, const Frame& answer) {
    const JobEnvironment& own = meeting.environment;
    const std::string whom = "rank " + std::to_string(peer) + " of job folder " + own.job_folder;
    if (answer.kind == FrameKind::refusal) {
        return Error::invalid_argument(whom + " refused rank " + std::to_string(own.rank) +
                                       " of job '" + own.job_id + "': " + answer.payload);
    }
    const std::optional<RankIntroduction> welcome = decode_introduction(answer.payload);
    if (answer.kind != FrameKind::welcome || !welcome || welcome->rank != peer ||
        welcome->job_id != own.job_id || welcome->world_size != own.world_size) {
        return Error::invalid_argument(
            whom + " answered as rank " + (welcome ? std::to_string(welcome->rank) : "?") +
            " of job '" + (welcome ? welcome->job_id : "?") + "', not as rank " +
            std::to_string(peer) + " of job '" + own.job_id + "'");
    }
    return {};
}

/// Says hello on `descriptor`, a connection to rank `peer`, once its peer is checked to be this
/// user's: the peer's process id once its answer is checked too.
Result<std::int64_t> greet(const Meeting& meeting, std::uint32_t peer, int descriptor) {
    Result<PeerCredentials> credentials = check_peer_user(descriptor, ::geteuid());
    if (!credentials) {
        return credentials.error();
    }
    if (Status sent = send_frame(descriptor, FrameKind::hello, encode(meeting.introduction()));
        !sent) {
        return sent.error();
    }
    Result<Frame> answer = receive_frame(descriptor, meeting.hello_deadline());
    if (!answer) {
        return answer.error();
    }
    if (Status checked = check_answer(meeting, peer, *answer); !checked) {
        return checked.error();
    }
    return static_cast<std::int64_t>(credentials->pid);
}

/// Connects to rank `peer` (below this one) when it listens; success without a connection when
/// it does not yet. An error when it refused this rank or is not of this job.
Status connect_below(Meeting& meeting, std::uint32_t peer) {
    Result<std::optional<int>> connected =
        connect_to(socket_path(meeting.environment.job_folder, peer));
    if (!connected) {
        return connected.error();
    }
    if (!*connected) {
        return {};
    }
    const int descriptor = **connected;
    Result<std::int64_t> pid = greet(meeting, peer, descriptor);
    if (!pid) {
        ::close(descriptor);
        return pid.error();
    }
    meeting.peers[peer] = {descriptor, *pid};
    return {};
}

/// The ranks not connected yet, as a message lists them: "ranks 1 and 2".
std::string missing_ranks(const Meeting& meeting) {
    std::vector<std::uint32_t> missing;
    for (std::uint32_t rank = 0; rank < meeting.peers.size(); ++rank) {
        if (rank != meeting.environment.rank && meeting.peers[rank].descriptor < 0) {
            missing.push_back(rank);
        }
    }
    std::string listed = missing.size() == 1 ? "rank " : "ranks ";
    for (std::size_t index = 0; index < missing.size(); ++index) {
        const bool last = index + 1 == missing.size();
        listed += (index == 0 ? "" : last ? " and " : ", ") + std::to_string(missing[index]);
    }
    return listed;
}

bool everyone_connected(const Meeting& meeting) {
    for (std::uint32_t rank = 0; rank < meeting.peers.size(); ++rank) {
        if (rank != meeting.environment.rank && meeting.peers[rank].descriptor < 0) {
            return false;
        }
    }
    return true;
}

/// Closes every connection and the listener, and removes this rank's socket.
void close_all(Meeting& meeting) {
    for (RankConnection& peer : meeting.peers) {
        if (peer.descriptor >= 0) {
            ::close(std::exchange(peer.descriptor, -1));
        }
    }
    if (meeting.listener >= 0) {
        ::close(std::exchange(meeting.listener, -1));
        ::unlink(socket_path(meeting.environment.job_folder, meeting.environment.rank).c_str());
    }
}

/// One round: connects to the lower ranks that listen now, then accepts what comes until the
/// next retry. An error when a peer refused this rank.
Status meet_once(Meeting& meeting) {
    bool lower_missing = false;
    for (std::uint32_t peer = 0; peer < meeting.environment.rank; ++peer) {
        if (meeting.peers[peer].descriptor < 0) {
            if (Status connected = connect_below(meeting, peer); !connected) {
                return connected;
            }
            lower_missing = lower_missing || meeting.peers[peer].descriptor < 0;
        }
    }
    if (everyone_connected(meeting)) {
        return {};
    }
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(meeting.deadline - Clock::now());
    const int wait_ms = static_cast<int>(std::max<std::int64_t>(
        0, lower_missing ? std::min<std::int64_t>(left.count(), connect_retry_ms) : left.count()));
    pollfd waiting{meeting.listener, POLLIN, 0};
    if (::poll(&waiting, 1, wait_ms) > 0) {
        accept_one(meeting);
    }
    return {};
}

}  // namespace

Result<std::vector<RankConnection>> rendezvous(const JobEnvironment& environment,
                                               std::chrono::milliseconds timeout) {
    Meeting meeting{environment, Clock::now() + timeout,
                    std::vector<RankConnection>(environment.world_size)};
    if (environment.world_size == 1) {
        return std::move(meeting.peers);
    }
    Result<int> listener = listen_at(socket_path(environment.job_folder, environment.rank),
                                     static_cast<int>(environment.world_size));
    if (!listener) {
        return listener.error();
    }
    meeting.listener = *listener;
    while (!everyone_connected(meeting)) {
        if (Status met = meet_once(meeting); !met) {
            close_all(meeting);
            return met.error();
        }
        if (!everyone_connected(meeting) && Clock::now() >= meeting.deadline) {
            const std::string missing = missing_ranks(meeting);
            close_all(meeting);
            return Error(ErrorKind::PeerUnreachable,
                         "rank " + std::to_string(environment.rank) + " of job '" +
                             environment.job_id + "' waited " + std::to_string(timeout.count()) +
                             " ms for the other ranks to join; " + missing +
                             " never came (job folder " + environment.job_folder + ")");
        }
    }
    ::close(std::exchange(meeting.listener, -1));
    ::unlink(socket_path(environment.job_folder, environment.rank).c_str());
    return std::move(meeting.peers);
}

}  // namespace tandem::job_detail
