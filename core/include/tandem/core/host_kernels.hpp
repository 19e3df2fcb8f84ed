#pragma once

// Kernels as a host backend runs them (the simulator, the reference backend): every thread of
// the launch in turn, with a point where a scheduler may switch after each block; and the
// process's registry of kernels by name, which scenarios, the tool and launches by name use.
//
// The core catalog is always registered. A program adds its own single-source kernels with
// `register_kernel<Kernel>()` or, at static initialisation, `TANDEM_REGISTER_KERNEL(Kernel)`; a
// typed launch (`Client::launch<Kernel>`) needs no registration on a host backend.

#include "tandem/core/host_kernel_context.hpp"
#include "tandem/core/kernel_entry.hpp"
#include "tandem/core/result.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace tandem {

/// Runs every thread of a launch of `Kernel`, yielding between blocks.
template <typename Kernel>
void run_kernel(HostKernelContext& context, const LaunchConfig& config) {
    const Kernel kernel{};
    const std::uint64_t block = config.block.count();
    const std::uint64_t threads = config.thread_count();  // A whole number of blocks.
    context.set_block_threads(block);
    // Block by block rather than a division per thread to find the block's end: a 64-bit
    // division costs tens of cycles, which was most of an empty kernel's time.
    for (std::uint64_t first = 0; first < threads; first += block) {
        if (first != 0) {
            context.host().yield();
        }
        for (std::uint64_t thread = first; thread < first + block; ++thread) {
            context.set_thread(thread);
            kernel(context);
        }
    }
}

/// The entry of kernel type `Kernel`, one per process: what a typed launch carries.
template <typename Kernel>
inline KernelEntry kernel_entry{Kernel::name, &run_kernel<Kernel>};

/// The registered kernel called `name`, or null.
const KernelEntry* find_kernel(std::string_view name);
/// The names of every registered kernel: the catalog's, then the program's in registration order.
std::vector<std::string> kernel_names();
/// The error of a launch by name of a kernel no one registered (C10): it names the registered
/// kernels and the closest to `name`.
Error unknown_kernel(std::string_view name);

/// Registers `entry` (which lives as long as the process) under its name, for every backend's
/// runtime of the process. `InvalidArgument` when the name is empty or taken by another kernel;
/// registering the same entry again changes nothing.
Status register_kernel(const KernelEntry& entry);
/// Registers `runner` as `name`: a kernel with a host build only (a CUDA launch of it is
/// refused). `InvalidArgument` as above, or for a null runner.
Status register_kernel(std::string name, KernelRunner runner);

template <typename Kernel>
/// Registers `Kernel` (a functor type with a `name`) for every host backend of the process;
/// `InvalidArgument` when its name is empty or already registered.
Status register_kernel() {
    return register_kernel(kernel_entry<Kernel>);
}

namespace detail {
/// Registers `Kernel` when constructed; what `TANDEM_REGISTER_KERNEL` defines.
template <typename Kernel>
struct KernelRegistration {
    KernelRegistration() { (void)register_kernel<Kernel>(); }
};
}  // namespace detail

}  // namespace tandem

/// Registers the kernel functor `Kernel` by name at static initialisation, in a source file of
/// the program (not of a static library, whose unreferenced objects the linker may drop).
#define TANDEM_REGISTER_KERNEL(Kernel)                                                          \
    static const ::tandem::detail::KernelRegistration<Kernel> TANDEM_DETAIL_CONCAT(             \
        tandem_kernel_registration_, __COUNTER__) {}
