#pragma once

// The program's own kernel of the user-kernel comparison, written once as a program writes one
// (docs/BRING_YOUR_OWN_CUDA.md): buffer 1 = buffer 0, byte by byte.

#include "tandem/core/kernel.hpp"

#include <cstdint>

namespace tandem::bench {

/// Copies buffer 0 (read) into buffer 1 (write), as far as the shorter of the two.
struct UserCopy {
    static constexpr const char* name = "bench_user_copy";
    template <typename Context>
    TANDEM_HOST_DEVICE void operator()(Context& ctx) const {
        auto from = ctx.template buffer<std::uint8_t>(0);
        auto to = ctx.template buffer<std::uint8_t>(1);
        const std::uint64_t bytes = from.size() < to.size() ? from.size() : to.size();
        for (std::uint64_t i = ctx.thread_index(); i < bytes; i += ctx.thread_count()) {
            to.store(i, from.load(i));
        }
    }
};

}  // namespace tandem::bench
