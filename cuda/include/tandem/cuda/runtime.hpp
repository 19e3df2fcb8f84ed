#pragma once

// The CUDA backend: the same Server contract as the simulator, on real NVIDIA GPUs.
//
// Memory comes from the core pools over regions of exportable device memory (virtual memory
// management, so that another process of a job maps them; cudaMalloc where the GPU lacks it), so
// an allocation after warm-up is a pool operation, not a driver call. Work goes straight to CUDA streams; every
// launch carries a status word the kernel sets when it fails (or did not run because a producer
// of its inputs failed), and the server resolves status words in enqueue order when the host
// synchronises, applying the same claims the simulator applies (rules C8, C9, C13).

#include "tandem/core/client.hpp"
#include "tandem/core/pool_options.hpp"
#include "tandem/core/runtime.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tandem::cuda {

/// What a CUDA runtime is made of: which GPUs, the seed for injected faults, and how each GPU's
/// memory is pooled.
struct CudaOptions {
    /// How many GPUs to use, the first visible ones; 0 means all visible (or, with `gpus`, one
    /// device for each entry of it).
    std::uint32_t devices = 0;
    /// The GPU each device runs on, by CUDA ordinal, device 0 first; empty means device `i` on
    /// GPU `i`. An ordinal may appear more than once: devices on one GPU are still separate
    /// devices, each with its own memory, streams, status words and claims, and the same rules
    /// (a kernel binds another device's memory only once that device granted it, P7). A program
    /// written for several GPUs so runs, checked, on one. Such devices share what the GPU has:
    /// its free memory is split between them (unless `capacity_bytes` says otherwise), and a
    /// fault that loses the GPU's context (a trap) loses all of them. A device's sync waits for
    /// its own streams only.
    std::vector<int> gpus{};
    /// The most devices a runtime has.
    static constexpr std::uint32_t max_devices = 64;
    /// Draws injected faults by probability.
    std::uint64_t seed = 1;
    /// How each GPU's pools carve the regions they reserve.
    PoolOptions pools{
        .slice_max_bytes = 1 << 20, .page_size_bytes = 8 << 20, .index_addresses = false};
    /// Bytes each device's pools may reserve; 0 means the device's free memory at start.
    std::uint64_t capacity_bytes = 0;
    /// Whether the pools reserve memory that another process of the host can map (virtual memory
    /// management, exported to a POSIX file descriptor once per region), where the GPU and driver
    /// offer it: what lets a job's other ranks bind this runtime's memory. Unset: on for a runtime
    /// that serves a rank of a job (`rank` set, as `Job::join` opens it), off for the others,
    /// which never publish: a launch binding such memory cost 60 to 75 ns more than one binding
    /// cudaMalloc memory on an H100 (docs/PERFORMANCE.md). Off, or a GPU or driver without it,
    /// reserves with cudaMalloc, and publishing memory to another rank is refused saying why.
    std::optional<bool> exportable_memory{};
    /// Whether a launch makes its call to the driver after letting go of the runtime's lock, so
    /// that threads launching on other streams or GPUs reach the driver at the same time (the
    /// call is most of a launch's host time). Launches on one stream still reach it in the order
    /// they were enqueued. False makes every call holding the lock, one thread at a time: for
    /// comparison, or for a driver that wants its calls serialised.
    bool unlocked_launch_calls = true;
    /// The first launch id each device hands out. A status word names the launch that wrote it,
    /// so the ids of launches and replays come from [1, `last_launch_id`], and when they run out
    /// the runtime settles everything and clears every word before it starts again at 1 (about
    /// every two billion launches); a graph's id comes from a range of its own above. Only tests
    /// set this, to reach that restart at once.
    std::uint32_t first_launch_id = 1;
    /// The last launch id before the ids start again.
    static constexpr std::uint32_t last_launch_id = 0x7fffffff;
    /// The job rank the runtime serves (`Job::join`, through `open_runtime`): its devices are
    /// named "device D of rank R". Unset outside a job.
    std::optional<std::uint32_t> rank{};
};

/// What `tandem doctor` prints about the GPUs of this machine.
struct GpuReport {
    /// Empty when the CUDA runtime answered; otherwise why there is no usable GPU.
    std::string problem;
    /// The driver's CUDA version (as `cudaDriverGetVersion` gives it, 12040 for 12.4); 0 without a
    /// driver.
    int driver_version = 0;
    /// The CUDA runtime's version this tool was built with, as `cudaRuntimeGetVersion` gives it.
    int runtime_version = 0;
    /// Each visible GPU's name.
    std::vector<std::string> names;
    /// Each GPU's compute capability (major, minor).
    std::vector<std::pair<int, int>> compute_capabilities;
    /// Whether the driver provides the tensor-map encoder; GPUs of compute capability 9.0 or
    /// later then move tiles through their tensor memory accelerator.
    bool tma_encoder = false;
    /// `peer[a][b]`: whether GPU a can access GPU b's memory.
    std::vector<std::vector<bool>> peer;
};

/// Asks the driver which GPUs there are. Never fails: problems are described in the report.
GpuReport probe_gpus();

/// `devices` devices placed on `visible` GPUs in turn (device `i` on GPU `i % visible`), for
/// `CudaOptions::gpus`: a program of more devices than the machine has GPUs. Empty when `visible`
/// is 0.
std::vector<int> gpus_in_turn(std::uint32_t devices, std::size_t visible);

class CudaEngine;

/// The CUDA backend's runtime: the same contract as the simulator on NVIDIA GPUs. Outcomes are
/// resolved on the host at a sync, in enqueue order, with the claims every backend applies.
class CudaRuntime final : public Runtime {
public:
    /// A runtime over the first `options.devices` visible GPUs, or over those `options.gpus`
    /// names. Errors: no driver or no GPU (`DeviceLost` naming the CUDA error), fewer GPUs than
    /// asked for, an ordinal in `gpus` that no visible GPU has, `devices` other than 0 or the
    /// length of `gpus`, or more devices than `max_devices` (`InvalidArgument`, each naming the
    /// figures).
    static Result<std::shared_ptr<CudaRuntime>> create(CudaOptions options = {});
    /// Its devices, and what they hold, live while the runtime or any client of it does: a
    /// client kept past the runtime still works, and the last of them lets go of the devices
    /// (after their work is done).
    ~CudaRuntime() override;

    [[nodiscard]] std::string_view backend() const override { return "cuda"; }
    CudaRuntime(const CudaRuntime&) = delete;
    CudaRuntime& operator=(const CudaRuntime&) = delete;

    [[nodiscard]] std::size_t device_count() const override;
    [[nodiscard]] Client client(std::size_t index) const override;
    [[nodiscard]] std::uint64_t runtime_id() const override;
    Status sync_all() override;
    /// No claim, no failure and no live allocation on any device (after `sync_all`).
    [[nodiscard]] bool drained() const override;
    /// Launches on device `index` that the GPU itself did not compute, resolved so far: their
    /// kernel found a failed producer's status word before computing (C13 on the device, for
    /// producers on the same GPU or on one whose memory this GPU was granted).
    [[nodiscard]] std::uint64_t skipped_on_device(std::size_t index) const;
    /// Launches on device `index` whose tensor maps were encoded for the GPU's tensor memory
    /// accelerator and moved by it (the others move tiles with plain loads and stores).
    [[nodiscard]] std::uint64_t tma_launches(std::size_t index) const;
    /// Recorded events not yet known complete, on all devices. A sync of their device, or a wait
    /// on one, completes them and their CUDA events are reused; a record past `max_live_events`
    /// waits for the oldest first (and forgets those after it that are complete), not for
    /// everything queued.
    [[nodiscard]] std::size_t live_events() const;
    /// The most recorded events that may be unresolved at once in one group of devices (each
    /// device starts in a group of its own, joined with another's when a call involves both:
    /// docs/DESIGN.md), so at most this many times the device count in a runtime.
    static constexpr std::size_t max_live_events = 4096;

private:
    explicit CudaRuntime(std::unique_ptr<CudaEngine> engine);
    /// The engine, for the side of the runtime a job reaches (the backend's own, internal).
    friend std::shared_ptr<CudaEngine> engine_of(const CudaRuntime& runtime);
    /// Shared with every client it hands out (`client`), which point at one of its devices.
    std::shared_ptr<CudaEngine> engine_;
};

}  // namespace tandem::cuda
