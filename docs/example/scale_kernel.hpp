// A kernel of the program's own, written once for every backend as tandem's catalog kernels are:
// the simulator runs it checked on the host, the CUDA backend on the GPU.
#pragma once

#include <tandem/core/kernel.hpp>

#include <cstdint>

/// Buffer 1 (write, float32) = f64 argument 0 * buffer 0 (read, float32), element-wise.
struct Scale {
    static constexpr const char* name = "example_scale";
    template <typename Context>
    TANDEM_HOST_DEVICE void operator()(Context& ctx) const {
        auto in = ctx.template buffer<float>(0);
        auto out = ctx.template buffer<float>(1);
        const auto factor = static_cast<float>(ctx.f64(0));
        for (std::uint64_t i = ctx.thread_index(); i < out.size(); i += ctx.thread_count()) {
            out.store(i, factor * in.load(i));
        }
    }
};
