#include "tandem/core/extent.hpp"

#include <string>

namespace tandem {

namespace {

Error offsets_past_size(const char* which, std::uint64_t bytes, const Extent& extent) {
    return Error::invalid_argument(
        std::string("adding ") + std::to_string(bytes) + " bytes to " + which +
        " would pass the size: offset_start " + std::to_string(extent.offset_start()) +
        ", offset_end " + std::to_string(extent.offset_end()) + ", size " +
        std::to_string(extent.size()));
}

}  // namespace

Result<Extent> Extent::add_offset_start(std::uint64_t bytes) const {
    // size_in_use() cannot underflow (the invariant), so this comparison cannot wrap.
    if (bytes > size_in_use()) {
        return offsets_past_size("offset_start", bytes, *this);
    }
    Extent grown = *this;
    grown.offset_start_ += bytes;
    return grown;
}

Result<Extent> Extent::add_offset_end(std::uint64_t bytes) const {
    if (bytes > size_in_use()) {
        return offsets_past_size("offset_end", bytes, *this);
    }
    Extent grown = *this;
    grown.offset_end_ += bytes;
    return grown;
}

Result<Extent> Extent::slice(std::uint64_t offset_bytes, std::uint64_t length_bytes) const {
    if (offset_bytes > size_in_use() || length_bytes > size_in_use() - offset_bytes) {
        return Error::invalid_argument(
            "slice of " + std::to_string(length_bytes) + " bytes at offset " +
            std::to_string(offset_bytes) + " passes the " + std::to_string(size_in_use()) +
            " bytes in use");
    }
    Extent sliced = *this;
    sliced.offset_start_ += offset_bytes;
    sliced.offset_end_ += size_in_use() - offset_bytes - length_bytes;
    return sliced;
}

}  // namespace tandem
