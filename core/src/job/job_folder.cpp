// The job folder: created 0700, checked before it is trusted, held by a shared lock while a
// process is in the job, removed by whoever finds the lock free.

#include "tandem/job_folder.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <random>
#include <utility>

namespace tandem {
namespace {

/// A folder without a lock file younger than this is being created; older, it is left over.
constexpr std::time_t unlocked_folder_grace_s = 60;
/// How often `hold` starts over when the folder it locked was removed under it.
constexpr int hold_attempts_max = 8;

std::string lock_path(const std::string& folder) { return folder + "/job.lock"; }

std::string system_error(const std::string& what, int error) {
    return what + ": " + std::strerror(error);
}

/// Removes every entry of `folder` (one level: a job folder holds files and sockets only), then
/// the folder.
void remove_folder(const std::string& folder) {
    if (DIR* listing = ::opendir(folder.c_str())) {
        while (const dirent* entry = ::readdir(listing)) {
            const std::string name = entry->d_name;
            if (name != "." && name != "..") {
                ::unlink((folder + "/" + name).c_str());
            }
        }
        ::closedir(listing);
    }
    ::rmdir(folder.c_str());
}

/// The lock file of `folder`, opened (created when missing), without following a link.
Result<int> open_lock(const std::string& folder) {
    const int descriptor =
        ::open(lock_path(folder).c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (descriptor < 0) {
        return Error::invalid_argument(system_error("cannot open " + lock_path(folder), errno));
    }
    return descriptor;
}

/// Whether `descriptor` is still the file at `folder`'s lock path (a last rank out may have
/// removed the folder between our open and our lock).
bool still_there(const std::string& folder, int descriptor) {
    struct stat opened {};
    struct stat named {};
    return ::fstat(descriptor, &opened) == 0 && ::stat(lock_path(folder).c_str(), &named) == 0 &&
           opened.st_ino == named.st_ino && opened.st_dev == named.st_dev;
}

}  // namespace

std::string new_job_id() {
    std::random_device device;
    const std::uint64_t bits = (static_cast<std::uint64_t>(device()) << 32) ^ device();
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(bits));
    return text;
}

Status check_job_id(const std::string& job_id) {
    const auto bad = [&job_id](const std::string& why) {
        return Error::invalid_argument("job id '" + job_id + "': " + why);
    };
    if (job_id.empty() || job_id.size() > 64) {
        return bad("a job id has 1 to 64 characters");
    }
    if (job_id[0] == '.') {
        return bad("a job id does not start with a dot");
    }
    for (const char c : job_id) {
        const bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                             (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
        if (!allowed) {
            return bad("a job id has only the characters [A-Za-z0-9._-]");
        }
    }
    return {};
}

std::string job_folder_path(const std::string& job_id) {
    return std::string(job_folders_root) + "/" + job_folder_prefix + job_id;
}

Status check_job_folder(const std::string& path) {
    struct stat status {};
    if (::lstat(path.c_str(), &status) != 0) {
        return Error::invalid_argument(system_error("job folder " + path, errno));
    }
    if (!S_ISDIR(status.st_mode)) {
        return Error::invalid_argument("job folder " + path +
                                       " is not a directory (a symbolic link is not one)");
    }
    if (status.st_uid != ::geteuid()) {
        return Error::invalid_argument("job folder " + path + " is owned by uid " +
                                       std::to_string(status.st_uid) + ", not by this user (uid " +
                                       std::to_string(::geteuid()) + "): it is not this job's");
    }
    const mode_t mode = status.st_mode & 07777;
    if (mode != 0700) {
        char found[8];
        std::snprintf(found, sizeof found, "%04o", static_cast<unsigned>(mode));
        return Error::invalid_argument("job folder " + path + " has mode " + found +
                                       ", not 0700: other users could reach its sockets");
    }
    return {};
}

Result<JobFolderLock> JobFolderLock::hold(const std::string& path) {
    for (int attempt = 0; attempt < hold_attempts_max; ++attempt) {
        // The umask may take bits off mkdir's mode; chmod sets exactly 0700 on what we made.
        if (::mkdir(path.c_str(), 0700) == 0) {
            ::chmod(path.c_str(), 0700);
        } else if (errno != EEXIST) {
            return Error::invalid_argument(system_error("cannot create job folder " + path, errno));
        }
        if (Status checked = check_job_folder(path); !checked) {
            return checked.error();
        }
        Result<int> descriptor = open_lock(path);
        if (!descriptor) {
            return descriptor.error();
        }
        ::flock(*descriptor, LOCK_SH);
        if (still_there(path, *descriptor)) {
            return JobFolderLock(path, *descriptor);
        }
        ::close(*descriptor);
    }
    return Error::invalid_argument("job folder " + path + " was removed under this process " +
                                   std::to_string(hold_attempts_max) + " times while joining");
}

Result<JobFolderLock> JobFolderLock::create(const std::string& path) {
    if (::mkdir(path.c_str(), 0700) != 0) {
        return Error::invalid_argument(system_error("cannot create job folder " + path, errno));
    }
    ::chmod(path.c_str(), 0700);
    Result<int> descriptor = open_lock(path);
    if (!descriptor) {
        ::rmdir(path.c_str());
        return descriptor.error();
    }
    ::flock(*descriptor, LOCK_SH);
    return JobFolderLock(path, *descriptor);
}

JobFolderLock::JobFolderLock(std::string path, int descriptor)
    : path_(std::move(path)), descriptor_(descriptor) {}

JobFolderLock::JobFolderLock(JobFolderLock&& other) noexcept
    : path_(std::move(other.path_)), descriptor_(std::exchange(other.descriptor_, -1)) {}

JobFolderLock& JobFolderLock::operator=(JobFolderLock&& other) noexcept {
    if (this != &other) {
        if (descriptor_ >= 0) {
            ::close(descriptor_);
        }
        path_ = std::move(other.path_);
        descriptor_ = std::exchange(other.descriptor_, -1);
    }
    return *this;
}

JobFolderLock::~JobFolderLock() {
    if (descriptor_ >= 0) {
        ::close(descriptor_);
    }
}

bool JobFolderLock::release_and_remove_if_last() {
    if (descriptor_ < 0) {
        return false;
    }
    // Converting the shared lock to an exclusive one succeeds only when no other process holds
    // the folder; a rank that opens the lock file meanwhile finds it gone and starts over.
    const bool last = ::flock(descriptor_, LOCK_EX | LOCK_NB) == 0;
    if (last) {
        remove_folder(path_);
    }
    ::close(std::exchange(descriptor_, -1));
    return last;
}

void JobFolderLock::release_and_remove() {
    if (descriptor_ >= 0) {
        remove_folder(path_);
        ::close(std::exchange(descriptor_, -1));
    }
}

std::vector<JobFolderEntry> list_job_folders() {
    std::vector<JobFolderEntry> entries;
    DIR* listing = ::opendir(job_folders_root);
    if (listing == nullptr) {
        return entries;
    }
    const std::string prefix = job_folder_prefix;
    while (const dirent* entry = ::readdir(listing)) {
        const std::string name = entry->d_name;
        const std::string path = std::string(job_folders_root) + "/" + name;
        struct stat status {};
        if (!name.starts_with(prefix) || ::lstat(path.c_str(), &status) != 0 ||
            !S_ISDIR(status.st_mode) || status.st_uid != ::geteuid()) {
            continue;
        }
        JobFolderEntry folder{path, name.substr(prefix.size()), false};
        const int descriptor = ::open(lock_path(path).c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
        if (descriptor < 0) {
            folder.in_use = std::time(nullptr) - status.st_mtime < unlocked_folder_grace_s;
        } else {
            folder.in_use = ::flock(descriptor, LOCK_EX | LOCK_NB) != 0;
            ::close(descriptor);
        }
        entries.push_back(std::move(folder));
    }
    ::closedir(listing);
    std::sort(entries.begin(), entries.end(),
              [](const JobFolderEntry& a, const JobFolderEntry& b) { return a.path < b.path; });
    return entries;
}

std::vector<std::string> clean_job_folders() {
    std::vector<std::string> removed;
    for (const JobFolderEntry& folder : list_job_folders()) {
        if (folder.in_use) {
            continue;
        }
        // Checked again under the lock: a job may have started in the folder since the listing.
        const int descriptor =
            ::open(lock_path(folder.path).c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
        if (descriptor >= 0 && ::flock(descriptor, LOCK_EX | LOCK_NB) != 0) {
            ::close(descriptor);
            continue;
        }
        remove_folder(folder.path);
        if (descriptor >= 0) {
            ::close(descriptor);
        }
        removed.push_back(folder.path);
    }
    return removed;
}

}  // namespace tandem
