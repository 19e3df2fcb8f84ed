#pragma once

// A rank's seat in the job folder: the lock that makes a rank's number this process's alone.
// Two processes told the same rank would otherwise both listen, and the ranks would pair with
// whichever answered first.

#include "tandem/core/result.hpp"

#include <cstdint>
#include <string>
#include <utility>

namespace tandem::job_detail {

/// A rank's seat in the job folder: an exclusive lock on `rank-R.lock`, holding the process id.
/// A second process that takes the same rank of the job finds the seat taken, and so does a
/// second `Job` of the same process (the lock is the open file's, not the process's). Move-only;
/// the seat's file is removed when it is released.
class RankSeat {
public:
    /// Takes rank `rank`'s seat in `folder`. `InvalidArgument` naming the process that holds it
    /// when another live process, or another `Job` of this one, has it (the rank joined twice).
    static Result<RankSeat> take(const std::string& folder, std::uint32_t rank,
                                 const std::string& job_id);
    RankSeat(RankSeat&& other) noexcept;
    RankSeat& operator=(RankSeat&& other) noexcept;
    RankSeat(const RankSeat&) = delete;
    RankSeat& operator=(const RankSeat&) = delete;
    ~RankSeat();
    /// Removes the seat's file and gives the lock up. Idempotent.
    void release();
    /// Whether some `Job` (of this process or another) holds rank `rank`'s seat in `folder` now:
    /// the rank is in the job. A seat is held on a descriptor closed on exec, so a process that
    /// runs another program gives it up. Costs an open and a lock tried (taken and given back at
    /// once when free).
    [[nodiscard]] static bool held(const std::string& folder, std::uint32_t rank);

private:
    RankSeat(std::string path, int descriptor) : path_(std::move(path)), descriptor_(descriptor) {}
    std::string path_;
    int descriptor_ = -1;
};

}  // namespace tandem::job_detail
