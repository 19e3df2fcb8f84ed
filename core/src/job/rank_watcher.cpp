// The rank watcher: poll on every connection, a loss reported once, with why where the system
// still shows it.

#include "rank_watcher.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace tandem::job_detail {
namespace {

/// The kernel's flag for a task that is exiting (field 9 of /proc/PID/stat).
constexpr unsigned long task_exiting_flag = 0x4;
/// The field of /proc/PID/stat that holds the exit status, as waitpid reports it.
constexpr int exit_code_field = 52;

}  // namespace

std::pair<RankEnd, int> how_process_ended(std::int64_t pid) {
    std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    // The command name (field 2) may hold spaces and parentheses: fields are counted after the
    // last closing parenthesis, where field 3 (the state) starts.
    const std::size_t name_end = text.rfind(')');
    if (name_end == std::string::npos) {
        return {RankEnd::vanished, 0};
    }
    std::istringstream fields(text.substr(name_end + 1));
    std::string field;
    char state = '?';
    unsigned long flags = 0;
    int status = 0;
    for (int index = 3; index <= exit_code_field && (fields >> field); ++index) {
        if (index == 3) {
            state = field[0];
        } else if (index == 9) {
            flags = std::stoul(field);
        } else if (index == exit_code_field) {
            status = std::stoi(field);
        }
    }
    const bool ending = state == 'Z' || state == 'X' || (flags & task_exiting_flag) != 0;
    if (!ending) {
        return {RankEnd::abandoned, 0};
    }
    if (WIFSIGNALED(status)) {
        return {RankEnd::killed, WTERMSIG(status)};
    }
    return {RankEnd::exited, WEXITSTATUS(status)};
}

std::pair<RankEnd, int> how_ending_process_ended(std::int64_t pid) {
    // Each thread of a process marks itself exiting as it ends, so the life word's thread may
    // end before the main thread, whose state /proc shows, says so: a bounded number of reads
    // (the main thread is on its way out). A process that still runs after them ran another
    // program, which also lets the word go: `abandoned`, as its documentation says.
    constexpr int reads_max = 1000;
    for (int read = 0; read < reads_max; ++read) {
        const std::pair<RankEnd, int> how = how_process_ended(pid);
        if (how.first != RankEnd::abandoned) {
            return how;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    return {RankEnd::abandoned, 0};
}

std::string cut_off_words(std::uint32_t rank) {
    return "this rank was cut off from the job: its connection to rank " + std::to_string(rank) +
           " was lost while both ranks lived, and the job parts such a pair by cutting off the "
           "higher rank";
}

RankWatcher::RankWatcher(std::uint32_t own_rank, std::vector<RankConnection> peers,
                         FrameHandler handler, std::function<void(const RankLoss&)> on_loss,
                         Departures departures)
    : own_rank_(own_rank),
      handler_(std::move(handler)),
      on_loss_(std::move(on_loss)),
      departures_(std::move(departures)),
      wake_descriptor_(::eventfd(0, EFD_CLOEXEC)),
      ending_descriptor_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    for (std::uint32_t rank = 0; rank < peers.size(); ++rank) {
        Peer peer;
        peer.descriptor = peers[rank].descriptor;
        peer.pid = peers[rank].pid;
        peers_.push_back(std::move(peer));
    }
    thread_ = std::thread([this] { run(); });
}

RankWatcher::~RankWatcher() {
    stop();
    for (Peer& peer : peers_) {
        std::lock_guard sending(*peer.sending);
        if (peer.descriptor >= 0) {
            ::close(std::exchange(peer.descriptor, -1));
        }
        for (int passed : std::exchange(peer.passed, {})) {
            ::close(passed);
        }
    }
    ::close(wake_descriptor_);
    ::close(ending_descriptor_);
}

void RankWatcher::stop() {
    {
        std::lock_guard lock(mutex_);
        if (stopped_) {
            return;
        }
        stopped_ = true;
    }
    const std::uint64_t one = 1;
    (void)!::write(wake_descriptor_, &one, sizeof one);
    thread_.join();
}

void RankWatcher::say_goodbye() { close_all(true); }

void RankWatcher::hang_up() { close_all(false); }

void RankWatcher::close_all(bool bye) {
    stop();
    for (Peer& peer : peers_) {
        std::lock_guard sending(*peer.sending);
        if (peer.descriptor >= 0) {
            if (bye && peer.alive) {
                (void)send_frame(peer.descriptor, FrameKind::bye, {});
            }
            ::close(std::exchange(peer.descriptor, -1));
        }
    }
}

Status RankWatcher::send(std::uint32_t rank, FrameKind kind, std::string_view payload,
                         int passed) {
    if (rank >= peers_.size() || rank == own_rank_) {
        return Error(ErrorKind::PeerUnreachable, "rank " + std::to_string(rank) +
                                                     " is not another rank of this job");
    }
    Peer& peer = peers_[rank];
    std::lock_guard sending(*peer.sending);
    if (peer.descriptor < 0 || !alive(rank)) {
        return Error(ErrorKind::PeerUnreachable,
                     "rank " + std::to_string(rank) + " is no longer in the job");
    }
    return send_frame(peer.descriptor, kind, payload, passed);
}

void RankWatcher::run() {
    std::vector<pollfd> polled;
    std::vector<std::uint32_t> ranks;
    while (true) {
        polled.assign({pollfd{wake_descriptor_, POLLIN, 0}, pollfd{ending_descriptor_, POLLIN, 0}});
        ranks.assign(2, own_rank_);
        for (std::uint32_t rank = 0; rank < peers_.size(); ++rank) {
            if (peers_[rank].descriptor >= 0 && peers_[rank].alive) {
                polled.push_back({peers_[rank].descriptor, POLLIN, 0});
                ranks.push_back(rank);
            }
        }
        if (::poll(polled.data(), polled.size(), -1) < 0 && errno != EINTR) {
            return;
        }
        if (polled[0].revents != 0) {
            return;
        }
        if (polled[1].revents != 0) {
            lose_ending();
        }
        for (std::size_t index = 2; index < polled.size(); ++index) {
            // A rank cut off meanwhile closed every connection: the rest of the list is stale.
            const Peer& peer = peers_[ranks[index]];
            if (polled[index].revents != 0 && peer.alive && peer.descriptor >= 0 &&
                read_from(ranks[index])) {
                lose(ranks[index]);
            }
        }
    }
}

bool RankWatcher::read_from(std::uint32_t rank) {
    Peer& peer = peers_[rank];
    const bool open = receive_available(peer.descriptor, peer.received, peer.passed);
    while (true) {
        Result<std::optional<Frame>> frame = take_frame(peer.received);
        if (!frame) {
            return true;  // Bytes that are not this protocol: the rank is not one to trust.
        }
        if (!*frame) {
            return !open;
        }
        if ((*frame)->kind == FrameKind::bye) {
            peer.said_bye = true;
        } else if (handler_) {
            handler_(rank, **frame, peer.passed);
        }
    }
}

void RankWatcher::lose(std::uint32_t rank) {
    const Peer& peer = peers_[rank];
    RankLoss loss{rank, RankEnd::left, 0, peer.pid, std::chrono::steady_clock::now()};
    if (!peer.said_bye) {
        std::tie(loss.how, loss.code) = how_process_ended(peer.pid);
    }
    if (loss.how == RankEnd::abandoned && departures_.of) {
        // Its process runs on: its board and its seat say whether the rank ended its part or
        // lives on with only this connection lost.
        const Departure departure = departures_.of(rank);
        if (departure.kind == Departure::Kind::cut_off) {
            loss.how = RankEnd::cut_off;
            loss.code = static_cast<int>(departure.rank);
        } else if (departure.kind == Departure::Kind::none && rank < own_rank_) {
            cut_off(rank);  // The higher of the pair goes: this rank.
            return;
        } else if (departure.kind == Departure::Kind::none) {
            // The higher of the pair goes, as its own watcher decides from the same facts.
            loss.how = RankEnd::cut_off;
            loss.code = static_cast<int>(own_rank_);
        }
    }
    report(loss);
}

void RankWatcher::process_ending(std::uint32_t rank) {
    {
        std::lock_guard lock(mutex_);
        ending_.push_back(rank);
    }
    const std::uint64_t one = 1;
    (void)!::write(ending_descriptor_, &one, sizeof one);
}

void RankWatcher::lose_ending() {
    std::uint64_t count = 0;
    (void)!::read(ending_descriptor_, &count, sizeof count);
    std::vector<std::uint32_t> ending;
    {
        std::lock_guard lock(mutex_);
        ending.swap(ending_);
    }
    for (const std::uint32_t rank : ending) {
        if (rank >= peers_.size() || rank == own_rank_ || !peers_[rank].alive ||
            peers_[rank].descriptor < 0) {
            continue;  // Reported already, by its connection's end or a cut.
        }
        const Peer& peer = peers_[rank];
        (void)read_from(rank);  // What it sent before it ended comes first.
        RankLoss loss{rank, RankEnd::vanished, 0, peer.pid, std::chrono::steady_clock::now()};
        std::tie(loss.how, loss.code) = how_ending_process_ended(peer.pid);
        report(loss);
    }
}

void RankWatcher::report(const RankLoss& loss) {
    if (on_loss_) {
        on_loss_(loss);
    }
    std::vector<std::function<void(const RankLoss&)>> callbacks;
    {
        std::lock_guard lock(mutex_);
        peers_[loss.rank].alive = false;
        losses_.push_back(loss);
        callbacks = callbacks_;
    }
    changed_.notify_all();
    for (const auto& callback : callbacks) {
        callback(loss);
    }
}

void RankWatcher::cut_off(std::uint32_t rank) {
    // The word goes first: a peer that reads the end of a connection closed below reads it.
    if (departures_.mark_cut_off) {
        departures_.mark_cut_off(rank);
    }
    {
        std::lock_guard lock(mutex_);
        cut_off_from_ = rank;
    }
    for (Peer& peer : peers_) {
        std::lock_guard sending(*peer.sending);
        if (peer.descriptor >= 0) {
            ::close(std::exchange(peer.descriptor, -1));
        }
    }
    const auto now = std::chrono::steady_clock::now();
    for (std::uint32_t other = 0; other < peers_.size(); ++other) {
        if (other != own_rank_ && peers_[other].alive) {
            report(RankLoss{other, RankEnd::this_rank_cut_off, static_cast<int>(rank),
                            peers_[other].pid, now});
        }
    }
}

Status RankWatcher::cut(std::uint32_t rank) {
    const std::string to = "rank " + std::to_string(rank);
    if (rank >= peers_.size() || rank == own_rank_) {
        return Error::invalid_argument(to + " is not another rank of this job of " +
                                       std::to_string(peers_.size()) + " ranks");
    }
    Peer& peer = peers_[rank];
    std::lock_guard sending(*peer.sending);
    if (std::optional<std::uint32_t> from = cut_off_from()) {
        return Error::invalid_argument("this rank has no connection to cut: " +
                                       cut_off_words(*from));
    }
    if (std::optional<RankLoss> loss = loss_of(rank)) {
        return Error::invalid_argument(to + " is lost to this rank already: " + loss->describe());
    }
    if (peer.descriptor < 0) {
        return Error::invalid_argument("this rank has no connection to " + to + " to cut");
    }
    if (peer.cut) {
        return Error::invalid_argument("the connection to " + to +
                                       " was cut already; its ends are being read");
    }
    if (::shutdown(peer.descriptor, SHUT_RDWR) != 0) {
        return Error(ErrorKind::PeerUnreachable,
                     "cannot cut the connection to " + to + ": " + std::strerror(errno));
    }
    peer.cut = true;
    return {};
}

std::optional<std::uint32_t> RankWatcher::cut_off_from() const {
    std::lock_guard lock(mutex_);
    return cut_off_from_;
}

std::optional<RankLoss> RankWatcher::loss_of(std::uint32_t rank) const {
    std::lock_guard lock(mutex_);
    for (const RankLoss& loss : losses_) {
        if (loss.rank == rank) {
            return loss;
        }
    }
    return std::nullopt;
}

bool RankWatcher::alive(std::uint32_t rank) const {
    std::lock_guard lock(mutex_);
    return rank == own_rank_ || (rank < peers_.size() && peers_[rank].alive);
}

std::vector<RankLoss> RankWatcher::losses() const {
    std::lock_guard lock(mutex_);
    return losses_;
}

std::optional<RankLoss> RankWatcher::wait(std::optional<std::uint32_t> rank,
                                          std::chrono::milliseconds timeout) const {
    std::unique_lock lock(mutex_);
    std::optional<RankLoss> found;
    changed_.wait_for(lock, timeout, [&] {
        for (const RankLoss& loss : losses_) {
            if (!rank || loss.rank == *rank) {
                found = loss;
                return true;
            }
        }
        return false;
    });
    return found;
}

bool RankWatcher::subscribe(std::function<void(const RankLoss&)> callback) {
    std::vector<RankLoss> past;
    {
        std::lock_guard lock(mutex_);
        if (callbacks_.size() >= Job::loss_callbacks_max) {
            return false;
        }
        callbacks_.push_back(callback);
        past = losses_;
    }
    for (const RankLoss& loss : past) {
        callback(loss);
    }
    return true;
}

}  // namespace tandem::job_detail
