#pragma once

// Where pools get their bytes. A storage hands out whole regions of device address space and
// takes them back; pools carve and reuse them. The simulator's storage carves a shared-memory
// segment, the CUDA backend's reserves device memory, and `HostStorage` serves core's own tests.

#include "tandem/core/result.hpp"

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace tandem {

/// A contiguous region of a device's address space.
struct StorageRegion {
    /// The region's first device address.
    std::uint64_t address = 0;
    /// The region's length.
    std::uint64_t size_bytes = 0;
};

/// Where a device's pools get their memory: regions of a device's address space, reserved and given
/// back whole. Each backend provides one (host memory, a shared-memory segment, `cudaMalloc`).
class Storage {
public:
    virtual ~Storage() = default;
    /// A region of exactly `size_bytes` (a multiple of `alignment_bytes()`), or `OutOfMemory`.
    virtual Result<StorageRegion> reserve(std::uint64_t size_bytes) = 0;
    /// Gives back a region `reserve` returned.
    virtual void release(StorageRegion region) = 0;
    /// The most bytes this storage can hold at once.
    [[nodiscard]] virtual std::uint64_t capacity_bytes() const = 0;
    /// Bytes currently reserved.
    [[nodiscard]] virtual std::uint64_t reserved_bytes() const = 0;
    /// The largest region a `reserve` could return now.
    [[nodiscard]] virtual std::uint64_t largest_reservable_bytes() const = 0;
    /// Every region starts at a multiple of this, and pools round sizes up to it. Each storage
    /// holds its host-visible memory in `HeldRanges`, so memory adopted from elsewhere never
    /// aliases it.
    [[nodiscard]] virtual std::uint64_t alignment_bytes() const { return 256; }
};

/// Host memory with a capacity limit, for tests and tools that need no device.
class HostStorage final : public Storage {
public:
    /// Host memory of at most `capacity_bytes`, reserved on demand.
    explicit HostStorage(std::uint64_t capacity_bytes);
    ~HostStorage() override;

    Result<StorageRegion> reserve(std::uint64_t size_bytes) override;
    void release(StorageRegion region) override;
    [[nodiscard]] std::uint64_t capacity_bytes() const override { return capacity_bytes_; }
    [[nodiscard]] std::uint64_t reserved_bytes() const override;
    [[nodiscard]] std::uint64_t largest_reservable_bytes() const override;

private:
    const std::uint64_t capacity_bytes_;
    mutable std::mutex mutex_;
    std::uint64_t reserved_bytes_ = 0;
    std::unordered_map<std::uint64_t, std::uint64_t> regions_;
};

}  // namespace tandem
