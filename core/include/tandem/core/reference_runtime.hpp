#pragma once

// The reference backend: the smallest runtime that obeys the whole Server contract. Each device's
// memory is host memory; work runs on the caller's thread, in full, when it is enqueued, with
// every kernel access checked as on the simulator. There is no scheduler and no concurrency, so
// its outcomes are the contract's and nothing else: the conformance suite's first instantiation,
// and the template to copy when adding a backend (`core/src/reference/`).
//
// What it cannot do, by construction: a kernel that waits for another kernel (a cross-device
// handoff) waits for work that can never run while it does, and is reported as a deadlock
// (`TornDown`) instead of hanging.

#include "tandem/core/pool_options.hpp"
#include "tandem/core/runtime.hpp"

#include <cstdint>
#include <memory>

namespace tandem::reference {

/// What a reference runtime is made of: how many devices, the seed for injected faults, and each
/// device's memory.
struct ReferenceOptions {
    /// At most this many devices per runtime.
    static constexpr std::uint32_t max_devices = 64;

    /// Devices of the runtime, from 1 to `max_devices`.
    std::uint32_t devices = 2;
    /// Draws injected faults by probability.
    std::uint64_t seed = 1;
    /// Bytes each device's pools may reserve from the host.
    std::uint64_t capacity_bytes = std::uint64_t{64} << 20;
    /// How each device's pools carve its memory.
    PoolOptions pools{};
    /// The job rank the runtime serves (`Job::join`, through `open_runtime`): its devices are
    /// named "device D of rank R". Unset outside a job.
    std::optional<std::uint32_t> rank{};
};

class ReferenceEngine;

/// The reference backend's runtime: host-memory devices whose work runs in full on the caller's
/// thread when it is enqueued. A kernel that waits for another kernel is reported as a deadlock
/// (`TornDown`).
class ReferenceRuntime final : public Runtime {
public:
    /// A runtime of `options.devices` devices; `InvalidArgument` for zero or too many devices or
    /// a capacity below one pool page.
    static Result<std::shared_ptr<ReferenceRuntime>> create(ReferenceOptions options = {});
    /// Its devices, and what they hold, live while the runtime or any client of it does: a
    /// client kept past the runtime still works, and the last of them lets go of the devices
    /// (after their work is done).
    ~ReferenceRuntime() override;
    ReferenceRuntime(const ReferenceRuntime&) = delete;
    ReferenceRuntime& operator=(const ReferenceRuntime&) = delete;

    [[nodiscard]] std::string_view backend() const override { return "reference"; }
    /// The number of devices, as created.
    [[nodiscard]] std::size_t device_count() const override;
    [[nodiscard]] Client client(std::size_t index) const override;
    [[nodiscard]] std::uint64_t runtime_id() const override;
    Status sync_all() override;
    [[nodiscard]] bool drained() const override;

private:
    explicit ReferenceRuntime(std::unique_ptr<ReferenceEngine> engine);
    /// Shared with every client it hands out (`client`), which point at one of its devices.
    std::shared_ptr<ReferenceEngine> engine_;
};

}  // namespace tandem::reference
