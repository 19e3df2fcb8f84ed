#pragma once

// Single-source kernels: one functor, compiled by g++ for the simulator and by nvcc for CUDA.
//
// A kernel is a functor with a `name` and a templated call operator taking its context:
//
//     struct Scale {
//         static constexpr const char* name = "scale";
//         template <typename Context>
//         TANDEM_HOST_DEVICE void operator()(Context& ctx) const {
//             auto data = ctx.template buffer<float>(0);
//             for (auto i = ctx.thread_index(); i < data.size(); i += ctx.thread_count())
//                 data.store(i, data.load(i) * static_cast<float>(ctx.f64(0)));
//         }
//     };
//
// The context gives thread indices, typed views of the launch's resources in declared order,
// scalar arguments and `fail(code)`. On cuda a view is a raw pointer; on sim every access is
// translated from a device address and checked. Views offer system-scope atomics and a wait, the
// only cross-device ordering a kernel has (rule P6); on sim each is a point where the
// deterministic scheduler may switch to other work.

#include <array>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define TANDEM_HOST_DEVICE __host__ __device__
#else
#define TANDEM_HOST_DEVICE
#endif

namespace tandem {

/// A count of blocks or threads in each of three dimensions, as CUDA's `dim3`.
struct Dim3 {
    /// Along x (the innermost).
    std::uint32_t x = 1;
    /// Along y.
    std::uint32_t y = 1;
    /// Along z (the outermost).
    std::uint32_t z = 1;

    /// How many in all: `x * y * z`, or `UINT64_MAX` when that does not fit in 64 bits (three
    /// 32-bit factors can reach 2^96), so a count is 0 only when some dimension is.
    [[nodiscard]] constexpr std::uint64_t count() const {
        const std::uint64_t xy = std::uint64_t{x} * std::uint64_t{y};  // Below 2^64.
        if (z != 0 && xy > UINT64_MAX / z) {
            return UINT64_MAX;
        }
        return xy * z;
    }
};

/// The most blocks of a grid in each dimension, and the most threads of a block in each, as on
/// the GPUs tandem targets (compute capability 9.0). Every backend refuses a launch past them.
inline constexpr std::uint32_t max_grid_x = 2147483647;
/// The most blocks of a grid in x, y and z.
inline constexpr Dim3 max_grid_dims{max_grid_x, 65535, 65535};
/// The most threads of a block in x, y and z.
inline constexpr Dim3 max_block_dims{1024, 1024, 64};

/// How many threads a launch runs: `grid` blocks of `block` threads.
struct LaunchConfig {
    /// Blocks of the grid.
    Dim3 grid;
    /// Threads of each block.
    Dim3 block;

    /// Every thread of the launch. Only for a configuration a launch accepts
    /// (`launchable`), whose count fits in 64 bits.
    [[nodiscard]] constexpr std::uint64_t thread_count() const {
        return grid.count() * block.count();
    }
    /// Whether the grid is empty: a launch of nothing, which changes no claim (C10). A block of
    /// no threads in a grid that is not empty is a configuration a launch refuses.
    [[nodiscard]] constexpr bool runs_nothing() const { return grid.count() == 0; }
    /// A one-dimensional launch of at least `threads` threads in blocks of `block_size`. A block
    /// size of zero for some threads gives one empty block, and more blocks than `max_grid_x` a
    /// grid one over it: configurations a launch refuses.
    static constexpr LaunchConfig linear(std::uint64_t threads, std::uint32_t block_size = 256) {
        if (threads == 0) {
            return LaunchConfig{Dim3{0, 1, 1}, Dim3{0, 1, 1}};
        }
        if (block_size == 0) {
            return LaunchConfig{Dim3{1, 1, 1}, Dim3{0, 1, 1}};
        }
        // Rounded up without `threads + block_size - 1`, which wraps near 2^64.
        const std::uint64_t blocks = threads / block_size + (threads % block_size != 0 ? 1 : 0);
        // More blocks than a grid holds give one over the limit, which a launch refuses, not a
        // grid cut down to the low bits of the count.
        const std::uint64_t grid_x =
            blocks <= std::uint64_t{max_grid_x} ? blocks : max_grid_x + 1ULL;
        return LaunchConfig{Dim3{static_cast<std::uint32_t>(grid_x), 1, 1}, Dim3{block_size, 1, 1}};
    }
};

/// The most threads per block a launch may ask for, as on the GPUs tandem targets.
inline constexpr std::uint64_t max_block_threads = 1024;

/// The most resources one launch binds, and the most of them that are tensor maps: what the
/// parameter block of a GPU launch holds. Every backend refuses more, so that a program the
/// simulator runs also runs on a GPU.
inline constexpr std::size_t max_launch_resources = 8;
/// The most tensor-map resources one launch binds.
inline constexpr std::size_t max_launch_tensor_maps = 2;
static_assert(max_launch_tensor_maps <= max_launch_resources);

/// Scalar arguments of a launch: up to eight 64-bit words, each an integer or a double.
class KernelArgs {
public:
    /// The most words a launch carries; a launch given more is refused.
    static constexpr std::size_t max_words = 8;

    /// Appends `value`. Past `max_words` it is not kept, and a launch given these arguments is
    /// refused (`InvalidArgument`, `overflowed`). Returns `*this`, to chain.
    KernelArgs& u64(std::uint64_t value) {
        if (count_ < max_words) {
            words_[count_++] = value;
        } else {
            overflowed_ = true;
        }
        return *this;
    }
    /// Appends the bits of `value`. Returns `*this`, to chain.
    KernelArgs& f64(double value) {
        std::uint64_t bits = 0;
        std::memcpy(&bits, &value, sizeof bits);
        return u64(bits);
    }
    /// Word `index` as an integer; 0 past the words given.
    [[nodiscard]] TANDEM_HOST_DEVICE std::uint64_t u64_at(std::size_t index) const {
        return index < count_ ? words_[index] : 0;
    }
    /// Word `index` as a double; 0 past the words given.
    [[nodiscard]] TANDEM_HOST_DEVICE double f64_at(std::size_t index) const {
        double value = 0;
        std::uint64_t bits = u64_at(index);
        std::memcpy(&value, &bits, sizeof value);
        return value;
    }
    /// How many words were kept.
    [[nodiscard]] std::size_t count() const { return count_; }
    /// Whether more than `max_words` were given.
    [[nodiscard]] bool overflowed() const { return overflowed_; }

private:
    std::array<std::uint64_t, max_words> words_{};
    std::size_t count_ = 0;
    bool overflowed_ = false;
};

}  // namespace tandem
