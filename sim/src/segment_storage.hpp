#pragma once

// Storage over one device's segment: regions of the device's address range, backed by real
// pages before a pool hands them out.

#include "tandem/backend/storage.hpp"
#include "tandem/sim/segment.hpp"

#include <map>
#include <mutex>

namespace tandem::sim {

class SegmentStorage final : public Storage {
public:
    /// Storage of `segment`, whose bytes have device addresses from `base_address`; the mapping
    /// is held in `HeldRanges` for the storage's life.
    SegmentStorage(Segment& segment, std::uint64_t base_address);
    ~SegmentStorage() override;
    SegmentStorage(const SegmentStorage&) = delete;
    SegmentStorage& operator=(const SegmentStorage&) = delete;

    Result<StorageRegion> reserve(std::uint64_t size_bytes) override;
    void release(StorageRegion region) override;
    [[nodiscard]] std::uint64_t capacity_bytes() const override {
        return segment_.capacity_bytes();
    }
    [[nodiscard]] std::uint64_t reserved_bytes() const override;
    [[nodiscard]] std::uint64_t largest_reservable_bytes() const override;
    /// Whether the range touches the segment's device addresses, reserved or not (where it is
    /// mapped in this process, what `native` hands out, is in `HeldRanges`).
    [[nodiscard]] bool overlaps(std::uint64_t address, std::uint64_t size_bytes) const {
        const std::uint64_t capacity = segment_.capacity_bytes();
        return address < base_address_ + capacity && base_address_ < address + size_bytes;
    }

    [[nodiscard]] std::uint64_t base_address() const { return base_address_; }
    /// The host pointer of a device address inside this segment.
    /// Where the byte at device `address` is in this process: in the segment, or, for memory
    /// adopted from the host (outside the segment's range), at that address itself.
    [[nodiscard]] std::byte* host(std::uint64_t address) const {
        if (address - base_address_ < segment_.capacity_bytes()) [[likely]] {
            return segment_.data() + (address - base_address_);
        }
        return reinterpret_cast<std::byte*>(address);
    }
    /// The host bytes of a new allocation, about to be filled: noted as written, so that a
    /// segment kept for a later runtime is zeroed there.
    [[nodiscard]] std::byte* host_of_new(std::uint64_t address, std::uint64_t size_bytes) {
        segment_.note_written(address - base_address_, size_bytes);
        return host(address);
    }

private:
    Segment& segment_;
    const std::uint64_t base_address_;
    mutable std::mutex mutex_;
    std::map<std::uint64_t, std::uint64_t> free_;  // Offset to size, fused.
    std::uint64_t reserved_bytes_ = 0;
};

}  // namespace tandem::sim
