#include "tandem/sim/segment.hpp"

#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/shared_memory_object.hpp>

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <mutex>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

namespace tandem::sim {
namespace {

// Live segment names, kept where a signal handler can read them without allocating.
constexpr std::size_t max_live_segments = 256;
constexpr std::size_t max_name_bytes = 96;
std::array<std::array<char, max_name_bytes>, max_live_segments> live_names{};
std::array<std::atomic<bool>, max_live_segments> live_used{};
std::once_flag handlers_installed;
struct sigaction previous_int{};
struct sigaction previous_term{};

void remove_live_segments_and_reraise(int signal_number) {
    for (std::size_t slot = 0; slot < max_live_segments; ++slot) {
        if (live_used[slot].load(std::memory_order_acquire)) {
            shm_unlink(live_names[slot].data());
        }
    }
    sigaction(signal_number, signal_number == SIGINT ? &previous_int : &previous_term, nullptr);
    raise(signal_number);
}

void install_handlers() {
    struct sigaction action{};
    action.sa_handler = remove_live_segments_and_reraise;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &previous_int);
    sigaction(SIGTERM, &action, &previous_term);
}

int register_live(const std::string& name) {
    std::call_once(handlers_installed, install_handlers);
    for (std::size_t slot = 0; slot < max_live_segments; ++slot) {
        bool expected = false;
        if (live_used[slot].load() == false &&
            live_used[slot].compare_exchange_strong(expected, true)) {
            std::snprintf(live_names[slot].data(), max_name_bytes, "/%s", name.c_str());
            return static_cast<int>(slot);
        }
    }
    return -1;  // Past the bound: the segment is still removed by its destructor.
}

void unregister_live(const std::string& name) {
    for (std::size_t slot = 0; slot < max_live_segments; ++slot) {
        if (live_used[slot].load() && name == live_names[slot].data() + 1) {
            live_used[slot].store(false, std::memory_order_release);
        }
    }
}

}  // namespace

std::string Segment::name_for(std::uint64_t runtime_id, std::uint32_t device_index) {
    char name[max_name_bytes];
    std::snprintf(name, sizeof name, "tandem-%d-%016llx-d%u", static_cast<int>(getpid()),
                  static_cast<unsigned long long>(runtime_id), device_index);
    return name;
}

struct Segment::Mapping {
    boost::interprocess::shared_memory_object object;
    boost::interprocess::mapped_region region;
};

Result<std::unique_ptr<Segment>> Segment::create(std::string name, std::uint64_t capacity_bytes) {
    namespace ipc = boost::interprocess;
    if (name.size() + 2 > max_name_bytes) {
        return Error::invalid_argument("segment name too long: " + name);
    }
    auto mapping = std::make_unique<Mapping>();
    try {
        // create_only: a new run never opens a segment that already exists, a dead run's included.
        ipc::permissions owner_only(0600);
        mapping->object = ipc::shared_memory_object(ipc::create_only, name.c_str(),
                                                    ipc::read_write, owner_only);
    } catch (const ipc::interprocess_exception& error) {
        return Error::invalid_argument("cannot create segment " + name + ": " + error.what());
    }
    try {
        // The umask may have narrowed the mode further but never widened it; make it exact.
        fchmod(mapping->object.get_mapping_handle().handle, 0600);
        mapping->object.truncate(static_cast<ipc::offset_t>(capacity_bytes));
        mapping->region = ipc::mapped_region(mapping->object, ipc::read_write);
    } catch (const ipc::interprocess_exception& error) {
        ipc::shared_memory_object::remove(name.c_str());
        return Error::out_of_memory("cannot size or map segment " + name + ": " + error.what(),
                                    OutOfMemoryDetails{capacity_bytes, 0, 0, 0});
    }
    register_live(name);
    return std::unique_ptr<Segment>(new Segment(std::move(name), capacity_bytes, std::move(mapping)));
}

Segment::Segment(std::string name, std::uint64_t capacity_bytes, std::unique_ptr<Mapping> mapping)
    : name_(std::move(name)),
      capacity_bytes_(capacity_bytes),
      mapping_(std::move(mapping)),
      data_(static_cast<std::byte*>(mapping_->region.get_address())) {}

Segment::~Segment() {
    mapping_.reset();
    boost::interprocess::shared_memory_object::remove(name_.c_str());
    unregister_live(name_);
}

Status Segment::reserve_pages(std::uint64_t offset, std::uint64_t size_bytes) {
    const int descriptor = mapping_->object.get_mapping_handle().handle;
    struct statvfs filesystem{};
    std::uint64_t free_bytes = 0;
    if (fstatvfs(descriptor, &filesystem) == 0) {
        free_bytes = std::uint64_t{filesystem.f_bavail} * filesystem.f_frsize;
    }
    const auto refuse = [&](const char* reason) {
        return Error::out_of_memory("shared memory cannot back " + std::to_string(size_bytes) +
                                        " bytes of segment " + name_ + ": " + reason,
                                    OutOfMemoryDetails{size_bytes, free_bytes, 0, free_bytes});
    };
    // Refuse at once what cannot fit: reserving pages only to fail part way costs the time to
    // zero them. posix_fallocate then makes sure the pages are there, so no access can SIGBUS.
    if (size_bytes > free_bytes) {
        return refuse("/dev/shm has too little free space");
    }
    const int status = posix_fallocate(descriptor, static_cast<off_t>(offset),
                                       static_cast<off_t>(size_bytes));
    if (status != 0) {
        return refuse(std::strerror(status));
    }
    return {};
}

std::vector<StaleSegment> list_segments() {
    std::vector<StaleSegment> found;
    DIR* directory = opendir("/dev/shm");
    if (directory == nullptr) {
        return found;
    }
    while (dirent* entry = readdir(directory)) {
        int pid = 0;
        unsigned long long runtime = 0;
        unsigned device = 0;
        if (std::sscanf(entry->d_name, "tandem-%d-%16llx-d%u", &pid, &runtime, &device) != 3) {
            continue;
        }
        struct stat status{};
        const std::string path = std::string("/dev/shm/") + entry->d_name;
        if (stat(path.c_str(), &status) != 0 || status.st_uid != getuid()) {
            continue;
        }
        const bool alive = kill(pid, 0) == 0 || errno == EPERM;
        found.push_back(StaleSegment{entry->d_name, pid, alive});
    }
    closedir(directory);
    return found;
}

std::vector<std::string> clean_stale_segments() {
    std::vector<std::string> removed;
    for (const StaleSegment& segment : list_segments()) {
        if (!segment.owner_alive && shm_unlink(("/" + segment.name).c_str()) == 0) {
            removed.push_back(segment.name);
        }
    }
    return removed;
}

}  // namespace tandem::sim
