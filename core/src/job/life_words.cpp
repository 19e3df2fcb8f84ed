// Life words: a robust futex a rank, watched by its peers (life_words.hpp says why).

#include "life_words.hpp"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <climits>
#include <cstring>
#include <future>

namespace tandem::job_detail {
namespace {

static_assert(std::atomic<std::uint32_t>::is_always_lock_free &&
                  sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t),
              "a life word is a futex shared between processes");

/// The size flag of a 32-bit word in a `futex_waitv` entry (`FUTEX_32` in newer headers).
constexpr std::uint32_t waitv_size_u32 = 2;

std::string life_path(const std::string& folder, std::uint32_t rank) {
    return folder + "/life-" + std::to_string(rank);
}

Error life_error(const std::string& what, const std::string& path) {
    return Error(ErrorKind::PeerUnreachable,
                 "cannot " + what + " the life word " + path + ": " + std::strerror(errno));
}

/// Maps the word of the open file `descriptor` (closed here).
std::atomic<std::uint32_t>* map_word(int descriptor) {
    void* data = ::mmap(nullptr, sizeof(std::uint32_t), PROT_READ | PROT_WRITE, MAP_SHARED,
                        descriptor, 0);
    ::close(descriptor);
    return data == MAP_FAILED ? nullptr : static_cast<std::atomic<std::uint32_t>*>(data);
}

void unmap_word(std::atomic<std::uint32_t>* word) {
    if (word != nullptr) {
        ::munmap(static_cast<void*>(word), sizeof(std::uint32_t));
    }
}

/// Wakes every waiter on `word`: of every process (`shared`), or of this one.
void wake_all(std::atomic<std::uint32_t>* word, bool shared) {
    ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word),
              shared ? FUTEX_WAKE : FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

/// Whether the system has `futex_waitv`: a call with no waiters is refused as invalid there,
/// and as unknown where it is not.
bool waitv_available() {
#ifdef SYS_futex_waitv
    static const bool available =
        ::syscall(SYS_futex_waitv, nullptr, 0, 0, nullptr, 0) == -1 && errno != ENOSYS;
    return available;
#else
    return false;
#endif
}

}  // namespace

Result<std::unique_ptr<LifeWords>> LifeWords::create(const std::string& folder,
                                                     std::uint32_t rank) {
    const std::string path = life_path(folder, rank);
    ::unlink(path.c_str());  // The word of a process that held this seat and died.
    const int descriptor = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (descriptor < 0) {
        return life_error("create", path);
    }
    if (::posix_fallocate(descriptor, 0, sizeof(std::uint32_t)) != 0) {
        ::close(descriptor);
        ::unlink(path.c_str());
        return Error::out_of_memory("cannot size the life word " + path,
                                    OutOfMemoryDetails{sizeof(std::uint32_t), 0, 0, 0});
    }
    std::atomic<std::uint32_t>* word = map_word(descriptor);
    if (word == nullptr) {
        const Error error = life_error("map", path);
        ::unlink(path.c_str());
        return error;
    }
    return std::unique_ptr<LifeWords>(new LifeWords(folder, rank, word));
}

LifeWords::LifeWords(std::string folder, std::uint32_t rank, std::atomic<std::uint32_t>* word)
    : folder_(std::move(folder)), rank_(rank), word_(word) {}

LifeWords::~LifeWords() {
    stop();
    for (const Peer& peer : peers_) {
        unmap_word(peer.word);
    }
    unmap_word(word_);
    ::unlink(life_path(folder_, rank_).c_str());
}

Status LifeWords::watch(std::uint32_t world_size, std::function<void(std::uint32_t)> on_ending) {
    if (!waitv_available() || world_size - 1 > peers_max || keeper_.joinable()) {
        return {};
    }
    for (std::uint32_t rank = 0; rank < world_size; ++rank) {
        if (rank == rank_) {
            continue;
        }
        const std::string path = life_path(folder_, rank);
        const int descriptor = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
        if (descriptor < 0 && errno == ENOENT) {
            continue;  // A peer that keeps no word: its connection alone tells.
        }
        std::atomic<std::uint32_t>* word = descriptor < 0 ? nullptr : map_word(descriptor);
        if (word == nullptr) {
            const Error error = life_error(descriptor < 0 ? "open" : "map", path);
            for (const Peer& peer : std::exchange(peers_, {})) {
                unmap_word(peer.word);
            }
            return error;
        }
        peers_.push_back(Peer{rank, word, false});
    }
    peers_mapped_.store(true, std::memory_order_release);
    on_ending_ = std::move(on_ending);
    // Returns once the keeper holds the word: a death from then on marks it.
    std::promise<void> holding;
    std::future<void> held = holding.get_future();
    keeper_ = std::thread([this, &holding] { keep(holding); });
    held.wait();
    return {};
}

bool LifeWords::ended(std::uint32_t rank) const {
    if (!peers_mapped_.load(std::memory_order_acquire)) {
        return false;
    }
    for (const Peer& peer : peers_) {
        if (peer.rank == rank) {
            return (peer.word->load(std::memory_order_acquire) & FUTEX_OWNER_DIED) != 0;
        }
    }
    return false;
}

void LifeWords::keep(std::promise<void>& holding) {
    // The word is this thread's robust futex while it runs; the C library's list is put back
    // before the thread returns.
    robust_list_head* library_list = nullptr;
    std::size_t library_length = 0;
    ::syscall(SYS_get_robust_list, 0, &library_list, &library_length);
    robust_list entry{};
    robust_list_head head{};
    head.list.next = &entry;
    entry.next = &head.list;
    head.futex_offset = reinterpret_cast<char*>(word_) - reinterpret_cast<char*>(&entry);
    head.list_op_pending = nullptr;
    ::syscall(SYS_set_robust_list, &head, sizeof head);
    word_->store(static_cast<std::uint32_t>(::syscall(SYS_gettid)), std::memory_order_release);
    wake_all(word_, true);  // A peer that found the word clear waits on it.
    holding.set_value();
    while (stopping_.load(std::memory_order_acquire) == 0) {
        wait_once();
    }
    word_->store(0, std::memory_order_release);  // An end that is not a death.
    wake_all(word_, true);
    ::syscall(SYS_set_robust_list, library_list, library_length);
}

void LifeWords::wait_once() {
    std::array<futex_waitv, peers_max + 1> waits{};
    waits[0] = {0, reinterpret_cast<std::uintptr_t>(&stopping_),
                waitv_size_u32 | FUTEX_PRIVATE_FLAG, 0};
    std::size_t count = 1;
    bool changed = false;
    for (Peer& peer : peers_) {
        std::uint32_t value = peer.word->load(std::memory_order_acquire);
        if (peer.ended) {
            continue;
        }
        if ((value & FUTEX_OWNER_DIED) != 0) {
            peer.ended = true;
            wake_all(peer.word, true);  // The system woke one waiter of the rank's peers.
            on_ending_(peer.rank);
            continue;
        }
        // The system wakes a waiter at the owner's death only where the word says one waits.
        if (value != 0 && (value & FUTEX_WAITERS) == 0 &&
            !peer.word->compare_exchange_strong(value, value | FUTEX_WAITERS)) {
            changed = true;  // Read it again before waiting on it.
            continue;
        }
        value |= value != 0 ? FUTEX_WAITERS : 0;
        waits[count++] = {value, reinterpret_cast<std::uintptr_t>(peer.word), waitv_size_u32, 0};
    }
    if (!changed && stopping_.load(std::memory_order_acquire) == 0) {
        // Returns when a word differs from what was read, on a wake, or on a signal.
        ::syscall(SYS_futex_waitv, waits.data(), count, 0, nullptr, 0);
    }
}

void LifeWords::stop() {
    if (!keeper_.joinable()) {
        return;
    }
    stopping_.store(1, std::memory_order_release);
    wake_all(&stopping_, false);
    keeper_.join();
}

}  // namespace tandem::job_detail
