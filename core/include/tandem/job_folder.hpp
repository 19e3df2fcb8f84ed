#pragma once

// The job folder: where the ranks of a job meet. It lives in /dev/shm (memory, gone at reboot),
// is named after the job id, and is this user's alone (mode 0700), so the sockets and lock files
// in it are out of other users' reach whatever their own modes. A folder that is not exactly
// that (another owner, another mode, a symbolic link) is refused, never repaired: someone else
// made it, and this job cannot trust what is in it.
//
// Every process of a job (each rank, and the launcher that made the folder) holds a shared lock
// (flock) on the folder's `job.lock` for as long as it is in the job. The locks go with the
// processes, however they end, so a folder whose lock nobody holds belongs to a job that is over:
// the last rank out removes it, `tandem launch` removes its own at the end, and `tandem clean`
// removes those left by a job whose processes all died at once.
//
// These functions are for launchers and tools; a program joins with `Job::join` (job.hpp).

#include "tandem/core/result.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace tandem {

/// Where job folders are made, unless TANDEM_JOB_DIR says otherwise.
inline constexpr const char* job_folders_root = "/dev/shm";
/// The prefix of a job folder's name; the job id follows it.
inline constexpr const char* job_folder_prefix = "tandem-job-";

/// A new random job id: 16 hexadecimal digits.
std::string new_job_id();
/// `InvalidArgument` naming `job_id` when it is empty, longer than 64 characters, starts with a
/// dot or holds a character outside [A-Za-z0-9._-].
Status check_job_id(const std::string& job_id);
/// The folder of job `job_id` under `job_folders_root`.
std::string job_folder_path(const std::string& job_id);

/// `InvalidArgument` when `path` is not a directory (a symbolic link is not), is owned by another
/// user than this process's, or has another mode than 0700; the message names the owner or the
/// mode found.
Status check_job_folder(const std::string& path);

/// A shared lock on a job folder: this process is in the job while it holds it. Move-only;
/// released when destroyed (and by the system when the process ends, however it ends).
class JobFolderLock {
public:
    /// Creates the folder `path` (mode 0700) when it is missing, checks it (`check_job_folder`)
    /// and takes the shared lock. `InvalidArgument` for a folder that fails the check.
    static Result<JobFolderLock> hold(const std::string& path);
    /// Creates `path`, which must not exist yet, and takes the lock: what a launcher does.
    static Result<JobFolderLock> create(const std::string& path);

    /// Takes `other`'s lock; `other` holds none after.
    JobFolderLock(JobFolderLock&& other) noexcept;
    /// Gives this lock up (removing nothing), then takes `other`'s.
    JobFolderLock& operator=(JobFolderLock&& other) noexcept;
    JobFolderLock(const JobFolderLock&) = delete;
    JobFolderLock& operator=(const JobFolderLock&) = delete;
    /// Gives the lock up, removing nothing.
    ~JobFolderLock();

    /// The folder.
    [[nodiscard]] const std::string& path() const { return path_; }
    /// Gives the lock up, and removes the folder when no other process holds it; true when it
    /// removed the folder.
    bool release_and_remove_if_last();
    /// Gives the lock up and removes the folder and every file in it, whoever else holds it:
    /// what a launcher does once every rank has ended.
    void release_and_remove();

private:
    JobFolderLock(std::string path, int descriptor);
    std::string path_;
    int descriptor_ = -1;
};

/// A job folder of this user in `job_folders_root`, as `tandem clean` sees it.
struct JobFolderEntry {
    /// The folder's path.
    std::string path;
    /// The job id its name carries.
    std::string job_id;
    /// Whether a process holds its lock (a job that is running).
    bool in_use = false;
};

/// This user's job folders in `job_folders_root`, in name order.
std::vector<JobFolderEntry> list_job_folders();
/// Removes this user's job folders that no process holds, and returns their paths.
std::vector<std::string> clean_job_folders();

}  // namespace tandem
