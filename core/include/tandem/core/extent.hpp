#pragma once

// The bytes a handle or binding addresses inside its allocation.
//
// `offset_end` counts bytes trimmed from the end; it is not an end position. The invariant
// `offset_start + offset_end <= size` holds for every extent that exists: the only way to change
// offsets goes through checked functions that refuse, with `InvalidArgument`, any offset that
// would break it or wrap.

#include "tandem/core/ids.hpp"
#include "tandem/core/result.hpp"

#include <cstdint>

namespace tandem {

/// The bytes of an allocation that a handle or binding addresses: the allocation's size and the
/// bytes trimmed from its start and from its end. Every extent keeps
/// `offset_start + offset_end <= size`.
class Extent {
public:
    /// The whole of an allocation of `size_bytes`.
    explicit constexpr Extent(std::uint64_t size_bytes) : size_(size_bytes) {}

    /// The size of the whole allocation, in bytes.
    [[nodiscard]] constexpr std::uint64_t size() const { return size_; }
    /// Bytes trimmed from the allocation's start.
    [[nodiscard]] constexpr std::uint64_t offset_start() const { return offset_start_; }
    /// Bytes trimmed from the allocation's end (a count, not an end position).
    [[nodiscard]] constexpr std::uint64_t offset_end() const { return offset_end_; }
    /// `[offset_start, size - offset_end)`.
    [[nodiscard]] constexpr ByteRange range() const {
        return ByteRange{offset_start_, size_ - offset_end_};
    }
    /// The bytes the offsets leave.
    [[nodiscard]] constexpr std::uint64_t size_in_use() const {
        return size_ - offset_start_ - offset_end_;
    }

    /// `offset_start` grown by `bytes`, or `InvalidArgument` if the offsets would pass the size.
    [[nodiscard]] Result<Extent> add_offset_start(std::uint64_t bytes) const;
    /// `offset_end` grown by `bytes`, or `InvalidArgument` if the offsets would pass the size.
    [[nodiscard]] Result<Extent> add_offset_end(std::uint64_t bytes) const;
    /// The `length_bytes` bytes at `offset_bytes` into the current range, or `InvalidArgument`.
    [[nodiscard]] Result<Extent> slice(std::uint64_t offset_bytes,
                                       std::uint64_t length_bytes) const;

    /// Equal when the size and both offsets are.
    friend constexpr bool operator==(const Extent&, const Extent&) = default;

private:
    std::uint64_t size_ = 0;
    std::uint64_t offset_start_ = 0;
    std::uint64_t offset_end_ = 0;
};

}  // namespace tandem
