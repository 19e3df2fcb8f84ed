#pragma once

// A runtime: the devices of one instance of a backend, and the client of each. Every backend's
// runtime is one (`sim::SimRuntime`, `cuda::CudaRuntime`, the reference backend's), so a program
// or a test suite written against this interface runs on any of them.

#include "tandem/core/client.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tandem {

/// The devices of one instance of a backend, and the client of each. Every backend's runtime
/// implements it, so a program written against it runs on any backend.
class Runtime {
public:
    virtual ~Runtime() = default;

    /// The backend's name: "reference", "sim" or "cuda".
    [[nodiscard]] virtual std::string_view backend() const = 0;
    /// The number of devices; clients are numbered from 0 to one below it.
    [[nodiscard]] virtual std::size_t device_count() const = 0;
    /// The client of device `index`; `std::out_of_range` is thrown for an index past
    /// `device_count()`. The client shares the runtime's devices: it works past the runtime.
    [[nodiscard]] virtual Client client(std::size_t index) const = 0;
    /// Unique across runtime instances in a process and across processes.
    [[nodiscard]] virtual std::uint64_t runtime_id() const = 0;
    /// Waits for every device's work; the first failure other than a lost device, if any.
    virtual Status sync_all() = 0;
    /// No claim, no failure and no live allocation on any device (after `sync_all`).
    [[nodiscard]] virtual bool drained() const = 0;
};

/// `sync` on every device of `runtime`, in order: the first failure other than a lost device, or
/// success. What a runtime's `sync_all` does when nothing smarter is needed.
Status sync_every_device(const Runtime& runtime);

/// Whether a runtime may serve job rank `rank` (none, or below `job_ranks_max`):
/// `InvalidArgument` naming it otherwise. Every backend's `create` checks it.
Status check_job_rank(std::optional<std::uint32_t> rank);

}  // namespace tandem
