#pragma once

// The kernel catalog: the kernels every backend registers by name, so scenarios and the tool can
// launch them. Resources are listed in the order a launch binds them, with the access each needs.
// Each kernel shares its elements among its threads (`ThreadShare`: a grid stride on a GPU, a
// contiguous run a thread on a host backend), so any launch size covers the data.

#include "tandem/core/bfloat16.hpp"
#include "tandem/core/kernel.hpp"

#include <array>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <utility>

namespace tandem::kernels {

/// The elements of `count` one thread of a launch takes. On a GPU, a grid stride: thread t takes
/// t, t + T, t + 2T, ... so that neighbouring threads touch neighbouring elements (coalesced). On
/// a host backend, which runs the threads of a launch one after another, a contiguous share:
/// thread t takes the t-th of T nearly equal runs, so that each thread walks memory in order.
/// Either way every element is taken by exactly one thread.
struct ThreadShare {
    /// The first element the thread takes.
    std::uint64_t begin = 0;
    /// One past the last element it may take.
    std::uint64_t end = 0;
    /// The distance between the elements it takes.
    std::uint64_t step = 1;

    /// The share of `ctx`'s running thread of `count` elements.
    template <typename Context>
    TANDEM_HOST_DEVICE ThreadShare(const Context& ctx, std::uint64_t count) {
        const std::uint64_t thread = ctx.thread_index();
        const std::uint64_t threads = ctx.thread_count();
#if defined(__CUDA_ARCH__)
        begin = thread;
        end = count;
        step = threads;
#else
        if (threads == 0) {
            return;  // No thread runs; nothing to share.
        }
        // Runs of count / threads, the first count % threads of them one longer; no product
        // of two counts is formed, so nothing wraps.
        const std::uint64_t run = count / threads;
        const std::uint64_t longer = count % threads;
        begin = thread * run + (thread < longer ? thread : longer);
        end = begin + run + (thread < longer ? 1 : 0);
#endif
    }
};

/// Does nothing. Resources: none. For measuring launch overhead.
struct Empty {
    /// The name a launch gives to run it.
    static constexpr const char* name = "empty";
    /// Runs one thread of the launch on `ctx`, the backend's kernel context.
    template <typename Context>
    TANDEM_HOST_DEVICE void operator()(Context&) const {}
};

/// Sets every byte of buffer 0 (write) to the low byte of u64 argument 0.
struct Fill {
    /// The name a launch gives to run it.
    static constexpr const char* name = "fill";
    /// Runs one thread of the launch on `ctx`, the backend's kernel context.
    template <typename Context>
    TANDEM_HOST_DEVICE void operator()(Context& ctx) const {
        auto out = ctx.template buffer<std::uint8_t>(0);
        const auto value = static_cast<std::uint8_t>(ctx.u64(0));
        const ThreadShare share(ctx, out.size());
        for (std::uint64_t i = share.begin; i < share.end; i += share.step) {
            out.store(i, value);
        }
    }
};

/// Copies buffer 0 (read) into buffer 1 (write), as many bytes as the smaller holds.
struct Copy {
    /// The name a launch gives to run it.
    static constexpr const char* name = "copy";
    /// Runs one thread of the launch on `ctx`, the backend's kernel context.
    template <typename Context>
    TANDEM_HOST_DEVICE void operator()(Context& ctx) const {
        auto in = ctx.template buffer<std::uint8_t>(0);
        auto out = ctx.template buffer<std::uint8_t>(1);
        const std::uint64_t count = in.size() < out.size() ? in.size() : out.size();
        const ThreadShare share(ctx, count);
        for (std::uint64_t i = share.begin; i < share.end; i += share.step) {
            out.store(i, in.load(i));
        }
    }
};

/// Buffer 2 (write) = buffer 0 (read) + buffer 1 (read), element-wise over float32.
struct Add {
    /// The name a launch gives to run it.
    static constexpr const char* name = "add";
    /// Runs one thread of the launch on `ctx`, the backend's kernel context.
    template <typename Context>
    TANDEM_HOST_DEVICE void operator()(Context& ctx) const {
        auto a = ctx.template buffer<float>(0);
        auto b = ctx.template buffer<float>(1);
        auto out = ctx.template buffer<float>(2);
        const ThreadShare share(ctx, out.size());
        for (std::uint64_t i = share.begin; i < share.end; i += share.step) {
            out.store(i, a.load(i) + b.load(i));
        }
    }
};

/// Buffer 1 (read-write) = f64 argument 0 * buffer 0 (read) + buffer 1, over float32.
struct Axpy {
    /// The name a launch gives to run it.
    static constexpr const char* name = "axpy";
    /// Runs one thread of the launch on `ctx`, the backend's kernel context.
    template <typename Context>
    TANDEM_HOST_DEVICE void operator()(Context& ctx) const {
        auto x = ctx.template buffer<float>(0);
        auto y = ctx.template buffer<float>(1);
        const auto alpha = static_cast<float>(ctx.f64(0));
        const ThreadShare share(ctx, y.size());
        for (std::uint64_t i = share.begin; i < share.end; i += share.step) {
            y.store(i, alpha * x.load(i) + y.load(i));
        }
    }
};

/// Element 0 of buffer 1 (write, float32) = the sum of buffer 0 (read, float32). One thread
/// sums, so the result is the same on every backend and every launch size.
struct ReduceSum {
    /// The name a launch gives to run it.
    static constexpr const char* name = "reduce_sum";
    /// Runs one thread of the launch on `ctx`, the backend's kernel context.
    template <typename Context>
    TANDEM_HOST_DEVICE void operator()(Context& ctx) const {
        if (ctx.thread_index() != 0) {
            return;
        }
        auto in = ctx.template buffer<float>(0);
        auto out = ctx.template buffer<float>(1);
        float sum = 0;
        for (std::uint64_t i = 0; i < in.size(); ++i) {
            sum += in.load(i);
        }
        out.store(0, sum);
    }
};

/// Buffer 0 (read-write) = buffer 0 `op` buffer 1 (read), element-wise, over the element type
/// u64 argument 1 names (0 float32, 1 float64, 2 int32, 3 int64, 4 bfloat16) with the operation
/// u64 argument 0 names (0 sum, 1 max, 2 min): a step of an all-reduce
/// (`tandem/core/collectives.hpp`, whose enumerations give these numbers). An unknown number
/// leaves buffer 0 as it is. A bfloat16 step is tandem/core/bfloat16.hpp's, the same lines on a
/// host backend and on a GPU, so every backend gives the same bytes.
struct Combine {
    /// The name a launch gives to run it.
    static constexpr const char* name = "combine";
    /// Runs one thread of the launch on `ctx`, the backend's kernel context.
    template <typename Context>
    TANDEM_HOST_DEVICE void operator()(Context& ctx) const {
        switch (ctx.u64(1)) {
            case 0: combine<Numbers<float>>(ctx); break;
            case 1: combine<Numbers<double>>(ctx); break;
            case 2: combine<Numbers<std::int32_t>>(ctx); break;
            case 3: combine<Numbers<std::int64_t>>(ctx); break;
            case 4: combine<Bfloat16>(ctx); break;
            default: break;
        }
    }

private:
    /// The steps over a type the device computes in: its own `+`, `>` and `<`.
    template <typename Element>
    struct Numbers {
        /// What a buffer holds an element as.
        using Stored = Element;
        /// The sum (wrapping for integers).
        struct Sum {
            /// `mine` + `theirs`.
            TANDEM_HOST_DEVICE Element operator()(Element mine, Element theirs) const {
                return static_cast<Element>(mine + theirs);
            }
        };
        /// The larger.
        struct Max {
            /// `theirs` where it is larger, else `mine`.
            TANDEM_HOST_DEVICE Element operator()(Element mine, Element theirs) const {
                return theirs > mine ? theirs : mine;
            }
        };
        /// The smaller.
        struct Min {
            /// `theirs` where it is smaller, else `mine`.
            TANDEM_HOST_DEVICE Element operator()(Element mine, Element theirs) const {
                return theirs < mine ? theirs : mine;
            }
        };
    };

    /// The steps over bfloat16, on its bits (tandem/core/bfloat16.hpp).
    struct Bfloat16 {
        /// What a buffer holds an element as: its bits.
        using Stored = std::uint16_t;
        /// The sum, rounded to nearest even.
        struct Sum {
            /// `bf16_sum(mine, theirs)`.
            TANDEM_HOST_DEVICE Stored operator()(Stored mine, Stored theirs) const {
                return bf16_sum(mine, theirs);
            }
        };
        /// The larger, a NaN giving way to a number.
        struct Max {
            /// `bf16_max(mine, theirs)`.
            TANDEM_HOST_DEVICE Stored operator()(Stored mine, Stored theirs) const {
                return bf16_max(mine, theirs);
            }
        };
        /// The smaller, a NaN giving way to a number.
        struct Min {
            /// `bf16_min(mine, theirs)`.
            TANDEM_HOST_DEVICE Stored operator()(Stored mine, Stored theirs) const {
                return bf16_min(mine, theirs);
            }
        };
    };

    template <typename Steps, typename Context>
    TANDEM_HOST_DEVICE static void combine(Context& ctx) {
        using Stored = typename Steps::Stored;
        switch (ctx.u64(0)) {
            case 0: combine_with<Stored>(ctx, typename Steps::Sum{}); break;
            case 1: combine_with<Stored>(ctx, typename Steps::Max{}); break;
            case 2: combine_with<Stored>(ctx, typename Steps::Min{}); break;
            default: break;
        }
    }

    template <typename Element, typename Context, typename Op>
    TANDEM_HOST_DEVICE static void combine_with(Context& ctx, Op op) {
        auto into = ctx.template buffer<Element>(0);
        auto from = ctx.template buffer<Element>(1);
        const ThreadShare share(ctx, into.size());
        for (std::uint64_t i = share.begin; i < share.end; i += share.step) {
            into.store(i, op(into.load(i), from.load(i)));
        }
    }
};

/// Element 0 of buffer 1 (write, u64) = the FNV-1a hash of the bytes of buffer 0 (read).
struct Checksum {
    /// The name a launch gives to run it.
    static constexpr const char* name = "checksum";
    /// Runs one thread of the launch on `ctx`, the backend's kernel context.
    template <typename Context>
    TANDEM_HOST_DEVICE void operator()(Context& ctx) const {
        if (ctx.thread_index() != 0) {
            return;
        }
        auto in = ctx.template buffer<std::uint8_t>(0);
        auto out = ctx.template buffer<std::uint64_t>(1);
        std::uint64_t hash = 0xcbf29ce484222325ULL;
        for (std::uint64_t i = 0; i < in.size(); ++i) {
            hash = (hash ^ in.load(i)) * 0x100000001b3ULL;
        }
        out.store(0, hash);
    }
};

/// Reports failure code u64 argument 0 from inside; its outputs (any resources) are claimed.
struct FailWithCode {
    /// The name a launch gives to run it.
    static constexpr const char* name = "fail";
    /// Runs one thread of the launch on `ctx`, the backend's kernel context.
    template <typename Context>
    TANDEM_HOST_DEVICE void operator()(Context& ctx) const {
        if (ctx.thread_index() == 0) {
            ctx.fail(static_cast<std::uint32_t>(ctx.u64(0)));
        }
    }
};

/// Stops the device with a sticky fault from inside (a trap): the device is lost (D1), and on a
/// GPU every later call of the process on it fails. Resources: any (its outputs are claimed).
struct Trap {
    /// The name a launch gives to run it.
    static constexpr const char* name = "trap";
    /// Runs one thread of the launch on `ctx`, the backend's kernel context.
    template <typename Context>
    TANDEM_HOST_DEVICE void operator()(Context& ctx) const {
        ctx.trap();
    }
};

/// The producer of a cross-device handoff: copies buffer 0 (read) into buffer 1 (write, usually
/// peer memory), then sets the u32 flag in buffer 2 (read-write, usually peer memory) to 1 with
/// a system-scope release. Run it with one thread: the flag must follow every byte.
struct HandoffProduce {
    /// The name a launch gives to run it.
    static constexpr const char* name = "handoff_produce";
    /// Runs one thread of the launch on `ctx`, the backend's kernel context.
    template <typename Context>
    TANDEM_HOST_DEVICE void operator()(Context& ctx) const {
        if (ctx.thread_index() != 0) {
            return;
        }
        auto in = ctx.template buffer<std::uint8_t>(0);
        auto out = ctx.template buffer<std::uint8_t>(1);
        auto flag = ctx.template buffer<std::uint32_t>(2);
        const std::uint64_t count = in.size() < out.size() ? in.size() : out.size();
        for (std::uint64_t i = 0; i < count; ++i) {
            out.store(i, in.load(i));
        }
        flag.atomic_store_release(0, 1u);
    }
};

/// The consumer of a cross-device handoff: waits, with a system-scope acquire, until the u32
/// flag in buffer 0 (read) is 1, then copies buffer 1 (read) into buffer 2 (write).
struct HandoffConsume {
    /// The name a launch gives to run it.
    static constexpr const char* name = "handoff_consume";
    /// Runs one thread of the launch on `ctx`, the backend's kernel context.
    template <typename Context>
    TANDEM_HOST_DEVICE void operator()(Context& ctx) const {
        auto flag = ctx.template buffer<std::uint32_t>(0);
        auto in = ctx.template buffer<std::uint8_t>(1);
        auto out = ctx.template buffer<std::uint8_t>(2);
        ctx.wait_until_equal(flag, 0, 1u);
        const std::uint64_t count = in.size() < out.size() ? in.size() : out.size();
        const ThreadShare share(ctx, count);
        for (std::uint64_t i = share.begin; i < share.end; i += share.step) {
            out.store(i, in.load(i));
        }
    }
};

/// Copies tensor map 0 (read) into tensor map 1 (write) tile by tile: each thread moves whole
/// boxes of the source's box shape. Both maps must have the same dimensions and element size.
struct TiledCopy {
    /// The name a launch gives to run it.
    static constexpr const char* name = "tiled_copy";
    /// It views its buffers through tensor maps (kernel_entry.hpp).
    static constexpr bool reads_tensor_maps = true;
    /// Runs one thread of the launch on `ctx`, the backend's kernel context.
    template <typename Context>
    TANDEM_HOST_DEVICE void operator()(Context& ctx) const {
        auto src = ctx.template tensor_map<std::uint8_t>(0);
        auto dst = ctx.template tensor_map<std::uint8_t>(1);
        const std::uint64_t tiles = src.tile_count();
        for (std::uint64_t tile = ctx.thread_index(); tile < tiles; tile += ctx.thread_count()) {
            src.copy_tile_to(tile, dst);
        }
    }
};

/// Kernels as a list a backend builds its table from.
template <typename... Kernels>
struct KernelList {
    /// `{Kernel::name, Entry<Kernel>::value}` for each kernel, in order: a backend's table of
    /// what it runs for each name.
    template <template <typename> class Entry>
    static constexpr auto table() {
        using Value = std::common_type_t<std::remove_cv_t<decltype(Entry<Kernels>::value)>...>;
        return std::array<std::pair<std::string_view, Value>, sizeof...(Kernels)>{
            std::pair<std::string_view, Value>{Kernels::name, Entry<Kernels>::value}...};
    }
};

/// The whole catalog. Every backend registers it from this one list, so a kernel added here
/// reaches them all.
using Catalog = KernelList<Empty, Fill, Copy, Add, Axpy, ReduceSum, Combine, Checksum,
                           FailWithCode, Trap, HandoffProduce, HandoffConsume, TiledCopy>;

}  // namespace tandem::kernels
