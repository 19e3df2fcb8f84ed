#include "imported_regions.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace tandem::sim {

ImportedRegions::~ImportedRegions() {
    const std::size_t count = count_.load(std::memory_order_acquire);
    for (std::size_t index = 0; index < count; ++index) {
        ::munmap(regions_[index].data, regions_[index].size_bytes);
    }
}

Status ImportedRegions::add(int descriptor, std::uint64_t base_address, std::uint64_t size_bytes) {
    std::lock_guard lock(mutex_);
    const std::size_t count = count_.load(std::memory_order_relaxed);
    for (std::size_t index = 0; index < count; ++index) {
        const Region& region = regions_[index];
        if (region.base_address == base_address && region.size_bytes == size_bytes) {
            ::close(descriptor);
            return {};
        }
        if (base_address < region.base_address + region.size_bytes &&
            region.base_address < base_address + size_bytes) {
            ::close(descriptor);
            return Error::invalid_argument("a peer's region at device address " +
                                           std::to_string(base_address) +
                                           " overlaps one already mapped");
        }
    }
    if (count == max_regions) {
        ::close(descriptor);
        return Error::invalid_argument("this runtime maps at most " + std::to_string(max_regions) +
                                       " regions of other processes");
    }
    void* data = ::mmap(nullptr, size_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0);
    const int error = errno;
    ::close(descriptor);  // The mapping keeps the memory.
    if (data == MAP_FAILED) {
        return Error::invalid_argument("cannot map a peer's region of " +
                                       std::to_string(size_bytes) +
                                       " bytes: " + std::strerror(error));
    }
    regions_[count] = Region{base_address, size_bytes, static_cast<std::byte*>(data)};
    count_.store(count + 1, std::memory_order_release);
    return {};
}

std::byte* ImportedRegions::host(std::uint64_t address) const {
    const std::size_t count = count_.load(std::memory_order_acquire);
    for (std::size_t index = 0; index < count; ++index) {
        const Region& region = regions_[index];
        if (address - region.base_address < region.size_bytes) {
            return region.data + (address - region.base_address);
        }
    }
    return nullptr;
}

}  // namespace tandem::sim
