#pragma once

// A device's memory figures, as `Client::memory_usage` reports them.

#include <cstdint>

namespace tandem {

/// One device's memory figures at a moment, in bytes.
struct MemoryUsage {
    /// Bytes of live allocations, as requested.
    std::uint64_t in_use_bytes = 0;
    /// Bytes the pools hold from storage.
    std::uint64_t reserved_bytes = 0;
    /// The most bytes storage can hold.
    std::uint64_t capacity_bytes = 0;
    /// Bytes not in use: capacity less what is in use.
    std::uint64_t free_bytes = 0;
    /// The largest allocation that could succeed now without trimming.
    std::uint64_t largest_free_block_bytes = 0;
};

}  // namespace tandem
