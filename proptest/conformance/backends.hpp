#pragma once

// The backends the conformance suite and the property suites run on: one list, so a new backend
// added here gets every suite. Each makes a runtime of a given number of devices, or says why it
// cannot here (no GPU, fewer GPUs than asked for); a test that needs what is missing skips and
// says so by name.

#include "tandem/core/reference_runtime.hpp"
#include "tandem/core/runtime.hpp"

#ifdef TANDEM_HAVE_SIM
#include "tandem/sim/runtime.hpp"
#endif
#ifdef TANDEM_HAVE_CUDA
#include "tandem/cuda/runtime.hpp"
#endif

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>

namespace tandem::conformance {

/// A runtime of a backend, or why there is none.
struct Made {
    std::shared_ptr<Runtime> runtime;
    std::string why_not;
};

struct ReferenceBackend {
    static constexpr const char* name = "reference";
    /// Runs work on the caller's thread as it is enqueued: nothing is ever left to wait for.
    static constexpr bool runs_at_enqueue = true;
    /// A stream costs a few bytes: a test may create `Server::max_streams` of them.
    static constexpr bool cheap_streams = true;
    /// Whether a host thread blocked waiting for the device leaves the runtime to other threads
    /// meanwhile. Not here: nothing is ever left to wait for.
    static constexpr bool waits_apart = false;
    /// Whether devices that share nothing are locked apart (device_groups.hpp): a thread blocked
    /// in a call on one leaves the others to other threads.
    static constexpr bool locks_devices_apart = true;
    /// Whether a kernel that traps loses every device of its process, not only its own: so on a
    /// GPU, where the fault is the process's CUDA context's. Not here: a trap loses its device.
    static constexpr bool traps_lose_the_process = false;
    static std::uint32_t devices_available() { return reference::ReferenceOptions::max_devices; }
    static Made make(std::uint32_t devices, std::uint64_t seed = 1) {
        auto runtime = reference::ReferenceRuntime::create(
            reference::ReferenceOptions{.devices = devices, .seed = seed});
        if (!runtime) {
            return {nullptr, runtime.error().report()};
        }
        return {*runtime, {}};
    }
};

#ifdef TANDEM_HAVE_SIM
struct SimBackend {
    static constexpr const char* name = "sim";
    static constexpr bool runs_at_enqueue = false;
    static constexpr bool cheap_streams = true;
    /// The deterministic scheduler runs the work on the thread that waits for it, under the
    /// engine's lock: one thread's wait runs every stream, the other threads' work with it.
    static constexpr bool waits_apart = false;
    /// One schedule of every device: one group.
    static constexpr bool locks_devices_apart = false;
    static constexpr bool traps_lose_the_process = false;
    static std::uint32_t devices_available() { return sim::SimOptions::max_devices; }
    static Made make(std::uint32_t devices, std::uint64_t seed = 1) {
        auto runtime = sim::SimRuntime::create(
            sim::SimOptions{.devices = devices, .seed = seed, .capacity_bytes = 64 << 20});
        if (!runtime) {
            return {nullptr, runtime.error().report()};
        }
        return {*runtime, {}};
    }
};

/// The simulator with a worker thread per stream (`SchedulerMode::Threads`): real concurrency,
/// as a program under a thread sanitizer runs it, under the same contract.
struct SimThreadsBackend {
    static constexpr const char* name = "sim_threads";
    static constexpr bool runs_at_enqueue = false;
    /// A stream is a worker thread, and streams are bounded at 1024 here.
    static constexpr bool cheap_streams = false;
    /// A wait lets go of the engine's lock while the workers run the streams.
    static constexpr bool waits_apart = true;
    /// One schedule of every device: one group.
    static constexpr bool locks_devices_apart = false;
    static constexpr bool traps_lose_the_process = false;
    static std::uint32_t devices_available() { return sim::SimOptions::max_devices; }
    static Made make(std::uint32_t devices, std::uint64_t seed = 1) {
        auto runtime = sim::SimRuntime::create(sim::SimOptions{.devices = devices,
                                                               .seed = seed,
                                                               .mode = sim::SchedulerMode::Threads,
                                                               .capacity_bytes = 64 << 20});
        if (!runtime) {
            return {nullptr, runtime.error().report()};
        }
        return {*runtime, {}};
    }
};
#endif

#ifdef TANDEM_HAVE_CUDA
struct CudaBackend {
    static constexpr const char* name = "cuda";
    static constexpr bool runs_at_enqueue = false;
    /// A stream is a CUDA stream: the driver's resources, not a test's to exhaust.
    static constexpr bool cheap_streams = false;
    /// A read, a sync or a host wait waits for the GPU with the engine's lock let go.
    static constexpr bool waits_apart = true;
    static constexpr bool locks_devices_apart = true;
    /// A trap is a sticky fault of the process's CUDA context: every GPU of the process is lost.
    static constexpr bool traps_lose_the_process = true;
    /// Devices a test may ask for: where there are fewer GPUs than devices, devices share them
    /// (`CudaOptions::gpus`), so the cases of several devices run on one GPU too.
    static std::uint32_t devices_available() {
        const cuda::GpuReport gpus = cuda::probe_gpus();
        return gpus.problem.empty() && !gpus.names.empty() ? cuda::CudaOptions::max_devices : 0;
    }
    static Made make(std::uint32_t devices, std::uint64_t seed = 1) {
        const cuda::GpuReport gpus = cuda::probe_gpus();
        if (!gpus.problem.empty()) {
            return {nullptr, "no usable GPU here: " + gpus.problem};
        }
        cuda::CudaOptions options{.devices = devices, .seed = seed, .capacity_bytes = 256 << 20};
        if (gpus.names.size() < devices) {
            options.gpus = cuda::gpus_in_turn(devices, gpus.names.size());
        }
        auto runtime = cuda::CudaRuntime::create(options);
        if (!runtime) {
            return {nullptr, runtime.error().report()};
        }
        return {*runtime, {}};
    }
};
#endif

using Backends = ::testing::Types<ReferenceBackend
#ifdef TANDEM_HAVE_SIM
                                  ,
                                  SimBackend, SimThreadsBackend
#endif
#ifdef TANDEM_HAVE_CUDA
                                  ,
                                  CudaBackend
#endif
                                  >;

/// Names the typed instantiations after their backend: `Conformance/sim.<test>`.
struct BackendNames {
    template <typename Backend>
    static std::string GetName(int) {
        return Backend::name;
    }
};

}  // namespace tandem::conformance
