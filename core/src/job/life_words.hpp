#pragma once

// A rank's life word: how its peers hear that its process is ending before the system has freed
// the process's memory and closed its sockets, and even when a process it forked (a data loader's
// worker, say) holds its sockets open, so the connections never end.
//
// Each rank creates a file of one word in the job folder (`life-R`, 0600, fresh: a seat's old
// file is replaced) before it meets the others. After the rendezvous a thread of the rank (its
// keeper) writes its thread id into the word and names the word to the system as a robust
// futex: when that thread ends, whatever ends it, the system sets the word's owner-died bit and
// wakes a waiter, as the first step of the thread's end, before the process's memory is freed
// (about 0.06 s a GiB, measured) and its descriptors closed. The keeper also waits on every
// other rank's word (`futex_waitv`) and says which ones the system marked; a waiter woken by a
// death wakes the others. A rank that leaves, or is abandoned, clears its word first: those
// ends are read from the connections, as before, and so is a death where the system has no
// `futex_waitv` (Linux before 5.16).
//
// Costs: one thread a rank, asleep, and one mapped page a peer; nothing on any message.

#include "tandem/core/result.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace tandem::job_detail {

class LifeWords {
public:
    /// The peers one keeper waits on: `futex_waitv` takes 128 words, one of them its stop word.
    static constexpr std::uint32_t peers_max = 127;

    /// Creates rank `rank`'s word in `folder`, fresh and clear. `PeerUnreachable` naming the file
    /// when it cannot be made or mapped.
    static Result<std::unique_ptr<LifeWords>> create(const std::string& folder,
                                                     std::uint32_t rank);
    /// Clears this rank's word (an end that is not a death), stops the keeper, unmaps every word
    /// and removes this rank's file.
    ~LifeWords();
    LifeWords(const LifeWords&) = delete;
    LifeWords& operator=(const LifeWords&) = delete;

    /// Maps the words of the other ranks of a job of `world_size` ranks and starts the keeper,
    /// which calls `on_ending(rank)` on its thread once for each rank whose keeper ended without
    /// clearing its word. Every rank of this version created its word before the rendezvous; a
    /// peer without one is not watched. Without `futex_waitv`, or past `peers_max` peers, nothing
    /// is watched and success is returned: the connections still say when a rank ends. Returns
    /// once the keeper holds this rank's word. `PeerUnreachable` naming a word that cannot be
    /// opened (but for one that is not there) or mapped; called once.
    Status watch(std::uint32_t world_size, std::function<void(std::uint32_t)> on_ending);
    /// Clears this rank's word (an end that is not a death) and stops the keeper: no `on_ending`
    /// call is made after it returns. The words stay mapped until destruction. Idempotent.
    void stop();
    /// Whether the keeper runs: this rank's word names it and the others' are watched.
    [[nodiscard]] bool watching() const { return keeper_.joinable(); }
    /// Whether the system marked rank `rank`'s word: its keeper ended without clearing it, as
    /// it does when the rank's process ends or runs another program. False for a rank not
    /// watched, and before `watch` has mapped the words. Safe from any thread.
    [[nodiscard]] bool ended(std::uint32_t rank) const;

private:
    struct Peer {
        std::uint32_t rank = 0;
        std::atomic<std::uint32_t>* word = nullptr;
        bool ended = false;
    };
    LifeWords(std::string folder, std::uint32_t rank, std::atomic<std::uint32_t>* word);
    /// The keeper's thread: holds the word (then sets `holding`) and watches until stopped.
    void keep(std::promise<void>& holding);
    /// Waits until a watched word changes or the keeper is stopped; reports each marked word.
    void wait_once();

    std::string folder_;
    std::uint32_t rank_;
    std::atomic<std::uint32_t>* word_;
    std::vector<Peer> peers_;
    /// Set once `peers_` is complete; `ended` reads `peers_` only after.
    std::atomic<bool> peers_mapped_{false};
    std::function<void(std::uint32_t)> on_ending_;
    /// Set to 1, with a wake, to end the keeper.
    std::atomic<std::uint32_t> stopping_{0};
    std::thread keeper_;
};

}  // namespace tandem::job_detail
