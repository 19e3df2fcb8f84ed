// A rank's seat: an exclusive flock on rank-R.lock in the job folder, holding the pid.

#include "rank_seat.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tandem::job_detail {

namespace {

std::string seat_path(const std::string& folder, std::uint32_t rank) {
    return folder + "/rank-" + std::to_string(rank) + ".lock";
}

}  // namespace

bool RankSeat::held(const std::string& folder, std::uint32_t rank) {
    const std::string path = seat_path(folder, rank);
    const int descriptor = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (descriptor < 0) {
        return false;  // Released (its file goes first), or never taken.
    }
    // flock's locks are an open file's: this new one conflicts with the holder's, whether the
    // holder is another process or another `Job` of this one.
    int locked = 0;
    while ((locked = ::flock(descriptor, LOCK_EX | LOCK_NB)) != 0 && errno == EINTR) {
    }
    const bool taken_by_another = locked != 0 && errno == EWOULDBLOCK;
    ::close(descriptor);  // Gives the lock back when it was taken.
    return taken_by_another;
}

Result<RankSeat> RankSeat::take(const std::string& folder, std::uint32_t rank,
                                const std::string& job_id) {
    const std::string path = seat_path(folder, rank);
    const int descriptor = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (descriptor < 0) {
        return Error::invalid_argument("cannot open " + path + ": " + std::strerror(errno));
    }
    if (::flock(descriptor, LOCK_EX | LOCK_NB) != 0) {
        // The holder writes its pid just after it locks: a second comer may read nothing yet.
        char holder[32] = {};
        (void)::pread(descriptor, holder, sizeof holder - 1, 0);
        ::close(descriptor);
        // flock's locks belong to an open file, not to a process: a second `Job` of this
        // process taking the seat finds it taken too, and is told it is its own process's.
        const bool here = std::string(holder) == std::to_string(::getpid());
        const std::string who = here ? "another Job of this process " + std::string(holder)
                                : holder[0] != '\0' ? "process " + std::string(holder)
                                                    : std::string("another process");
        return Error::invalid_argument("rank " + std::to_string(rank) + " of job '" + job_id +
                                       "' joined twice: " + who + " holds it already (" + path +
                                       ")");
    }
    const std::string pid = std::to_string(::getpid());
    if (::ftruncate(descriptor, 0) != 0 ||
        ::pwrite(descriptor, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
        // The pid is for the message a second holder gets; the lock alone keeps the seat.
    }
    return RankSeat(path, descriptor);
}

RankSeat::RankSeat(RankSeat&& other) noexcept
    : path_(std::move(other.path_)), descriptor_(std::exchange(other.descriptor_, -1)) {}

RankSeat& RankSeat::operator=(RankSeat&& other) noexcept {
    if (this != &other) {
        release();
        path_ = std::move(other.path_);
        descriptor_ = std::exchange(other.descriptor_, -1);
    }
    return *this;
}

RankSeat::~RankSeat() { release(); }

void RankSeat::release() {
    if (descriptor_ >= 0) {
        ::unlink(path_.c_str());
        ::close(std::exchange(descriptor_, -1));
    }
}

}  // namespace tandem::job_detail
