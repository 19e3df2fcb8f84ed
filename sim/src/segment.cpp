#include "tandem/sim/segment.hpp"

#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/shared_memory_object.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace tandem::sim {
namespace {

constexpr std::size_t max_name_bytes = 96;

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

/// What a SegmentPool keeps, shared with the segments it handed out (which hold it weakly).
struct Segment::Shelf {
    /// Keeps `segment`, or unmaps it when the shelf is full.
    void keep(std::unique_ptr<Segment> segment) {
        std::lock_guard lock(mutex);
        if (segments.size() < SegmentPool::max_kept_segments) {
            segments.push_back(std::move(segment));
        }
    }

    mutable std::mutex mutex;
    std::vector<std::unique_ptr<Segment>> segments;
    std::uint64_t reused = 0;
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
        mapping->object =
            ipc::shared_memory_object(ipc::create_only, name.c_str(), ipc::read_write, owner_only);
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
    // Mapped, and the descriptor stays open for reservations: the name has done its work. Gone
    // from /dev/shm now, the pages go back to the system when the last mapping does, however the
    // process ends.
    ipc::shared_memory_object::remove(name.c_str());
    return std::unique_ptr<Segment>(
        new Segment(std::move(name), capacity_bytes, std::move(mapping)));
}

Segment::Segment(std::string name, std::uint64_t capacity_bytes, std::unique_ptr<Mapping> mapping)
    : name_(std::move(name)),
      capacity_bytes_(capacity_bytes),
      mapping_(std::move(mapping)),
      data_(static_cast<std::byte*>(mapping_->region.get_address())) {}

Segment::~Segment() {
    if (mapping_ == nullptr) {
        return;  // Its mapping went back to a pool, in another Segment.
    }
    if (std::shared_ptr<Shelf> shelf = home_.lock(); shelf != nullptr && reset()) {
        // Moved into a segment of the pool's own, so the caller's object can go. A full pool
        // lets that one go too, and with no home it is removed.
        std::unique_ptr<Segment> kept(
            new Segment(std::move(name_), capacity_bytes_, std::move(mapping_)));
        kept->backed_ = std::move(backed_);
        kept->device_index_ = device_index_;
        shelf->keep(std::move(kept));
        return;
    }
    mapping_.reset();  // Unmaps and closes; the name was removed when the segment was mapped.
}

int Segment::descriptor() const { return mapping_->object.get_mapping_handle().handle; }

bool Segment::backed(std::uint64_t offset, std::uint64_t size_bytes) const {
    auto range = backed_.upper_bound(offset);
    if (range == backed_.begin()) {
        return false;
    }
    --range;
    return range->first <= offset && offset + size_bytes <= range->second;
}

void Segment::note_backed(std::uint64_t offset, std::uint64_t size_bytes) {
    std::uint64_t begin = offset;
    std::uint64_t end = offset + size_bytes;
    // Fuses with every range it touches or overlaps.
    auto range = backed_.upper_bound(begin);
    if (range != backed_.begin() && std::prev(range)->second >= begin) {
        --range;
    }
    while (range != backed_.end() && range->first <= end) {
        begin = std::min(begin, range->first);
        end = std::max(end, range->second);
        range = backed_.erase(range);
    }
    if (backed_.size() < max_backed_ranges) {
        backed_.emplace(begin, end);
    }
}

void Segment::note_written(std::uint64_t offset, std::uint64_t size_bytes) {
    written_begin_ = std::min(written_begin_, offset);
    written_end_ = std::max(written_end_, offset + size_bytes);
}

bool Segment::reset() {
    std::uint64_t backed_bytes = 0;
    for (const auto& [begin, end] : backed_) {
        backed_bytes += end - begin;
    }
    const std::uint64_t written_bytes =
        written_end_ > written_begin_ ? written_end_ - written_begin_ : 0;
    if (backed_bytes > SegmentPool::max_kept_bytes || written_bytes > SegmentPool::max_kept_bytes) {
        return false;
    }
    if (written_bytes != 0) {
        std::memset(data_ + written_begin_, 0, written_bytes);
    }
    written_begin_ = UINT64_MAX;
    written_end_ = 0;
    return true;
}

Status Segment::reserve_pages(std::uint64_t offset, std::uint64_t size_bytes) {
    if (backed(offset, size_bytes)) {
        return {};
    }
    const int descriptor = mapping_->object.get_mapping_handle().handle;
    struct statvfs filesystem {};
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
    const int status =
        posix_fallocate(descriptor, static_cast<off_t>(offset), static_cast<off_t>(size_bytes));
    if (status != 0) {
        return refuse(std::strerror(status));
    }
    note_backed(offset, size_bytes);
    return {};
}

// ---------------------------------------------------------------- the pool

SegmentPool::SegmentPool() : shelf_(std::make_shared<Segment::Shelf>()) {}

SegmentPool::~SegmentPool() = default;

Result<std::unique_ptr<Segment>> SegmentPool::take(std::uint64_t runtime_id,
                                                   std::uint32_t device_index,
                                                   std::uint64_t capacity_bytes) {
    std::unique_ptr<Segment> segment;
    {
        std::lock_guard lock(shelf_->mutex);
        auto& kept = shelf_->segments;
        auto found = std::find_if(kept.begin(), kept.end(), [&](const auto& each) {
            return each->capacity_bytes() == capacity_bytes && each->device_index_ == device_index;
        });
        if (found != kept.end()) {
            segment = std::move(*found);
            kept.erase(found);
            ++shelf_->reused;
        }
    }
    if (segment == nullptr) {
        Result<std::unique_ptr<Segment>> created =
            Segment::create(Segment::name_for(runtime_id, device_index), capacity_bytes);
        if (!created) {
            return created.error();
        }
        segment = std::move(*created);
    }
    segment->home_ = shelf_;
    segment->device_index_ = device_index;
    return segment;
}

std::size_t SegmentPool::kept() const {
    std::lock_guard lock(shelf_->mutex);
    return shelf_->segments.size();
}

std::uint64_t SegmentPool::reused() const {
    std::lock_guard lock(shelf_->mutex);
    return shelf_->reused;
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
        struct stat status {};
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
