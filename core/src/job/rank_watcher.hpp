#pragma once

// The rank watcher: one thread that reads every connection to the other ranks, so that the end of
// a rank is noticed by what its connection reads, not by a heartbeat. The system closes a
// process's sockets as it ends, whatever ends it (SIGKILL included), and a peer's poll wakes at
// once on the end of the stream: no timeout to tune, no traffic while everyone is alive.
//
// A rank that leaves says "bye" first, so its peers can tell a rank that left from one that
// died. For one that died, the watcher asks the system how its process ended while the system
// still shows it (`how_process_ended`). A connection that ends while the rank's process runs on
// was either the rank's own end (abandoned, or cut off for a connection of its own, as its board
// says) or the loss of that connection alone, the rank living on (`Departures`): the job then
// parts the pair by cutting off the higher rank (job.hpp), so the watcher of the higher rank
// closes every connection of its own (`cut_off`), and the lower one reports the higher cut off.

#include "job_board.hpp"
#include "rendezvous.hpp"

#include "tandem/job.hpp"

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace tandem::job_detail {

/// How process `pid` ended, as /proc shows a process that is ending or ended and not yet reaped:
/// `exited` with its code or `killed` with its signal; `vanished` when the system no longer shows
/// it (its parent reaped it); `abandoned` when it shows it still running (a process's sockets
/// close after the system marks it exiting, so a rank whose connection ended while its process
/// runs was abandoned, or its process closed the connection itself).
std::pair<RankEnd, int> how_process_ended(std::int64_t pid);
/// How process `pid`, known to be ending (its life word says so), ended: `how_process_ended` once
/// /proc shows its end, read again a bounded number of times until it does; `abandoned` past
/// them (its process runs on: it ran another program).
std::pair<RankEnd, int> how_ending_process_ended(std::int64_t pid);

/// What the watcher does with a frame other than "bye": called on the watcher thread, in the
/// order the rank sent them, with the descriptors that rank passed and no frame took yet (a
/// handler takes those its frame carries, from the front, and owns them). It must not block on
/// anything a frame still to be read would bring.
using FrameHandler =
    std::function<void(std::uint32_t rank, const Frame& frame, std::vector<int>& passed)>;

/// What a rank left in the job folder when its connection ends while its process runs on, and
/// what this rank leaves there before it cuts itself off: the boards' departure words and the
/// seats (job_peers.hpp reads and writes them).
struct Departures {
    /// How rank `rank` departed: its board's word, or `abandoned` when the word says nothing but
    /// the rank no longer holds its seat or the system marked its life word (its process ran
    /// another program), or when its board cannot be read (the ranks have not met yet).
    /// `Kind::none`: the rank lives in the job.
    std::function<Departure(std::uint32_t rank)> of;
    /// Writes on this rank's board that it is cut off for the loss of its connection to `rank`.
    std::function<void(std::uint32_t rank)> mark_cut_off;
};

/// "this rank was cut off from the job: its connection to rank R was lost ...": why a rank cut
/// off for its connection to `rank` sees every other rank lost and refuses every job call.
std::string cut_off_words(std::uint32_t rank);

/// Watches the connections to every other rank and reports each rank lost, once; hands every
/// other frame to its handler, and sends frames to a rank whole, whatever thread sends them.
class RankWatcher {
public:
    /// Takes the connections of `peers` (one entry a rank; `own_rank`'s has none) and starts the
    /// watcher thread, which hands frames to `handler` and each loss to `on_loss` first, before
    /// anyone waiting for it or subscribed to it hears of it (so that what the job does about a
    /// loss is done when a program learns of it). Without `departures`, a connection that ends
    /// while its rank's process runs on is that rank's end (`RankEnd::abandoned`).
    RankWatcher(std::uint32_t own_rank, std::vector<RankConnection> peers, FrameHandler handler,
                std::function<void(const RankLoss&)> on_loss = {}, Departures departures = {});
    RankWatcher(const RankWatcher&) = delete;
    RankWatcher& operator=(const RankWatcher&) = delete;
    /// Stops the thread and closes every connection, without a word to the peers.
    ~RankWatcher();

    /// Whether `rank`'s connection is still open (always true for this rank's own entry).
    [[nodiscard]] bool alive(std::uint32_t rank) const;
    /// The losses so far, in the order noticed.
    [[nodiscard]] std::vector<RankLoss> losses() const;
    /// The first loss (of `rank`, when given), waiting up to `timeout`.
    [[nodiscard]] std::optional<RankLoss> wait(std::optional<std::uint32_t> rank,
                                               std::chrono::milliseconds timeout) const;
    /// Registers `callback` and calls it for the losses so far. False past
    /// `Job::loss_callbacks_max`.
    bool subscribe(std::function<void(const RankLoss&)> callback);
    /// Stops the thread, tells every rank still connected that this rank leaves, and closes
    /// every connection. Idempotent.
    void say_goodbye();
    /// Stops the thread and closes every connection without a word, as the end of this rank's
    /// process would: every peer reports this rank lost (`Job::abandon`). Idempotent.
    void hang_up();
    /// Sends one frame to `rank` (with `passed`, a descriptor, or -1), whole even while other
    /// threads send to it. `PeerUnreachable` for a rank lost or not connected.
    Status send(std::uint32_t rank, FrameKind kind, std::string_view payload, int passed = -1);
    /// Breaks the connection to `rank` (`Job::cut_connection`): both ends read its end as this
    /// watcher's thread and `rank`'s do any other. `InvalidArgument`, changing nothing, for a
    /// rank that is not another of the job, one lost already or whose connection was cut
    /// already, and once this rank is cut off.
    Status cut(std::uint32_t rank);
    /// The rank whose lost connection cut this rank off from the job; none while it is in it.
    [[nodiscard]] std::optional<std::uint32_t> cut_off_from() const;
    /// Rank `rank`'s process is ending: its life word says so (life_words.hpp), before the
    /// system has closed its connections, or where a process it forked holds them open. Called
    /// from the thread watching the life words; the watcher thread then reads what the rank
    /// sent before it ended and reports it lost with how its process ended, once.
    void process_ending(std::uint32_t rank);
    /// The ranks of the job, this one included.
    [[nodiscard]] std::uint32_t world_size() const {
        return static_cast<std::uint32_t>(peers_.size());
    }

private:
    struct Peer {
        int descriptor = -1;
        std::int64_t pid = 0;
        std::string received;
        /// Descriptors the rank passed that no frame took yet.
        std::vector<int> passed;
        bool said_bye = false;
        /// Written by the watcher thread alone (under `mutex_`); read there without it.
        bool alive = true;
        /// Whether `cut` broke the connection; under `sending`.
        bool cut = false;
        /// Held while a frame goes out, and while the connection is closed.
        std::unique_ptr<std::mutex> sending = std::make_unique<std::mutex>();
    };
    void run();
    void stop();
    /// Stops the thread and closes every connection, saying "bye" first on each when `bye`.
    void close_all(bool bye);
    /// Reads what `rank`'s connection holds; true when the connection ended.
    bool read_from(std::uint32_t rank);
    /// `rank`'s connection ended: reports it lost, or cuts this rank off when the connection
    /// alone was lost and `rank` is the lower of the two.
    void lose(std::uint32_t rank);
    /// Reports the ranks `process_ending` named, each after reading what it sent.
    void lose_ending();
    /// Tells `on_loss`, the waiters and the subscribers of `loss`, once.
    void report(const RankLoss& loss);
    /// Leaves the job for the loss of the connection to `rank`, a lower rank that lives: marks
    /// this rank's board, closes every connection without a word and reports every rank still
    /// heard from lost (`RankEnd::this_rank_cut_off`). On the watcher thread.
    void cut_off(std::uint32_t rank);
    /// The loss of `rank` reported so far, if any.
    [[nodiscard]] std::optional<RankLoss> loss_of(std::uint32_t rank) const;

    std::uint32_t own_rank_;
    FrameHandler handler_;
    std::function<void(const RankLoss&)> on_loss_;
    Departures departures_;
    /// Touched by the watcher thread only while it runs; `alive` is read under `mutex_`.
    std::vector<Peer> peers_;
    int wake_descriptor_ = -1;
    /// Written when `process_ending` names a rank, which waits in `ending_`.
    int ending_descriptor_ = -1;
    std::vector<std::uint32_t> ending_;
    std::thread thread_;
    mutable std::mutex mutex_;
    mutable std::condition_variable changed_;
    std::vector<RankLoss> losses_;
    std::vector<std::function<void(const RankLoss&)>> callbacks_;
    bool stopped_ = false;
    /// Set by `cut_off`, under `mutex_`.
    std::optional<std::uint32_t> cut_off_from_;
};

}  // namespace tandem::job_detail
