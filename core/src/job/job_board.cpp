#include "job_board.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tandem::job_detail {
namespace {

// The layout: grant words (a device by a rank), the claim words of the slots, a loss word a
// device, the counters of the stream slots, the first failed event of each stream slot, the
// departure word.
constexpr std::size_t grant_words = std::size_t{JobBoard::devices_max} * job_ranks_max;
constexpr std::size_t loss_words_at = grant_words + JobBoard::slots;
constexpr std::size_t stream_words_at = loss_words_at + JobBoard::devices_max;
constexpr std::size_t failed_words_at = stream_words_at + JobBoard::stream_slots;
constexpr std::size_t departure_word_at = failed_words_at + JobBoard::stream_slots;
constexpr std::size_t board_bytes = (departure_word_at + 1) * sizeof(std::uint64_t);

/// The departure word: its kind in the low byte, the rank of a lost connection above it.
constexpr unsigned departure_rank_shift = 8;

static_assert(std::atomic<std::uint64_t>::is_always_lock_free,
              "board words are shared between processes");

std::string board_path(const std::string& folder, std::uint32_t rank) {
    return folder + "/board-" + std::to_string(rank);
}

Error board_error(const std::string& what, const std::string& path) {
    return Error(ErrorKind::PeerUnreachable, "cannot " + what + " " + path + ": " +
                                                 std::strerror(errno));
}

}  // namespace

Result<std::unique_ptr<JobBoard>> JobBoard::create(const std::string& folder, std::uint32_t rank) {
    const std::string path = board_path(folder, rank);
    ::unlink(path.c_str());  // A board of a process that held this seat and died.
    const int descriptor = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (descriptor < 0) {
        return board_error("create the rank's board", path);
    }
    if (::ftruncate(descriptor, static_cast<off_t>(board_bytes)) != 0 ||
        ::posix_fallocate(descriptor, 0, static_cast<off_t>(board_bytes)) != 0) {
        ::close(descriptor);
        ::unlink(path.c_str());
        return Error::out_of_memory("cannot size the rank's board " + path,
                                    OutOfMemoryDetails{board_bytes, 0, 0, 0});
    }
    void* data = ::mmap(nullptr, board_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0);
    ::close(descriptor);
    if (data == MAP_FAILED) {
        ::unlink(path.c_str());
        return board_error("map", path);
    }
    std::unique_ptr<JobBoard> board(new JobBoard(path, true, static_cast<std::byte*>(data)));
    for (std::size_t slot = slots; slot-- > 0;) {
        board->free_slots_.push_back(slot);
    }
    return board;
}

Result<std::unique_ptr<JobBoard>> JobBoard::open(const std::string& folder, std::uint32_t rank) {
    const std::string path = board_path(folder, rank);
    const int descriptor = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (descriptor < 0) {
        return board_error("open the board of rank " + std::to_string(rank) + ",", path);
    }
    struct stat status {};
    if (::fstat(descriptor, &status) != 0 || status.st_uid != ::geteuid() ||
        static_cast<std::size_t>(status.st_size) != board_bytes) {
        ::close(descriptor);
        return Error(ErrorKind::PeerUnreachable,
                     "the board " + path + " is not a board of this user's job");
    }
    void* data = ::mmap(nullptr, board_bytes, PROT_READ, MAP_SHARED, descriptor, 0);
    ::close(descriptor);
    if (data == MAP_FAILED) {
        return board_error("map", path);
    }
    return std::unique_ptr<JobBoard>(new JobBoard(path, false, static_cast<std::byte*>(data)));
}

JobBoard::JobBoard(std::string path, bool own, std::byte* data)
    : path_(std::move(path)), own_(own), data_(data) {}

JobBoard::~JobBoard() {
    ::munmap(data_, board_bytes);
    if (own_) {
        ::unlink(path_.c_str());
    }
}

std::atomic<std::uint64_t>& JobBoard::word(std::size_t index) const {
    // The mapping is page aligned and every word 8-byte aligned in it; atomics of this size are
    // lock-free and address-free, so two processes mapping the page share them.
    return *reinterpret_cast<std::atomic<std::uint64_t>*>(data_ + index * sizeof(std::uint64_t));
}

std::atomic<std::uint64_t>& JobBoard::claim_word(std::size_t slot) const {
    return word(grant_words + slot);
}

std::atomic<std::uint64_t>& JobBoard::stream_counter(std::size_t slot) const {
    return word(stream_words_at + slot);
}

std::atomic<std::uint64_t>& JobBoard::stream_failed_from(std::size_t slot) const {
    return word(failed_words_at + slot);
}

std::optional<std::size_t> JobBoard::take_slot() {
    if (free_slots_.empty()) {
        return std::nullopt;
    }
    const std::size_t slot = free_slots_.back();
    free_slots_.pop_back();
    claim_word(slot).store(0, std::memory_order_release);
    return slot;
}

void JobBoard::give_slot(std::size_t slot) { free_slots_.push_back(slot); }

bool JobBoard::grant(std::uint32_t device, const ServiceId& accessor) {
    if (device >= devices_max || accessor.device_index >= devices_max ||
        accessor.rank >= job_ranks_max) {
        return false;
    }
    word(std::size_t{device} * job_ranks_max + accessor.rank)
        .fetch_or(std::uint64_t{1} << accessor.device_index, std::memory_order_acq_rel);
    return true;
}

bool JobBoard::lose(std::uint32_t device) {
    if (device >= devices_max) {
        return false;
    }
    word(loss_words_at + device).store(1, std::memory_order_release);
    return true;
}

bool JobBoard::lost(std::uint32_t device) const {
    return device < devices_max && word(loss_words_at + device).load(std::memory_order_acquire) != 0;
}

void JobBoard::depart(const Departure& departure) {
    const std::uint64_t value = static_cast<std::uint64_t>(departure.kind) |
                                std::uint64_t{departure.rank} << departure_rank_shift;
    std::uint64_t none = 0;
    (void)word(departure_word_at).compare_exchange_strong(none, value, std::memory_order_acq_rel);
}

Departure JobBoard::departure() const {
    const std::uint64_t value = word(departure_word_at).load(std::memory_order_acquire);
    const auto kind = static_cast<std::uint8_t>(value & 0xff);
    if (kind > static_cast<std::uint8_t>(Departure::Kind::cut_off)) {
        return Departure{Departure::Kind::abandoned, 0};  // Not a word this version writes.
    }
    return Departure{static_cast<Departure::Kind>(kind),
                     static_cast<std::uint32_t>(value >> departure_rank_shift)};
}

bool JobBoard::granted(std::uint32_t device, const ServiceId& accessor) const {
    if (device >= devices_max || accessor.device_index >= devices_max ||
        accessor.rank >= job_ranks_max) {
        return false;
    }
    const std::uint64_t bits =
        word(std::size_t{device} * job_ranks_max + accessor.rank).load(std::memory_order_acquire);
    return (bits >> accessor.device_index & 1) != 0;
}

}  // namespace tandem::job_detail
