#pragma once

// How a device carves its memory into pools: what a runtime's options set (`SimOptions::pools`,
// `CudaOptions::pools`, the reference backend's).

#include <cstdint>

namespace tandem {

/// How a memory manager carves its storage into pools.
struct PoolOptions {
    /// Requests up to this size go to the sliced pool; larger ones get a region of their own.
    std::uint64_t slice_max_bytes = 256 * 1024;
    /// The size of each page the sliced pool takes from storage at a time.
    std::uint64_t page_size_bytes = 2 * 1024 * 1024;
    /// Keeps the live allocations by address, for `find_address` (the simulator's fault reports
    /// name the allocation an address falls in). Costs a hash insert and erase per allocation; a
    /// backend that never asks turns it off.
    bool index_addresses = true;
};

}  // namespace tandem
