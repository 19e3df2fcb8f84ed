#pragma once

// One program, every backend: `open_runtime` creates the runtime the program asks for, or, for
// what the program leaves unset, the one the environment names. The same binary then runs on the
// simulator in CI (`TANDEM_BACKEND=sim`, the default) and on GPUs in production
// (`TANDEM_BACKEND=cuda`).
//
//   variable           values                              default      used by
//   TANDEM_BACKEND     sim | reference | cuda | auto        sim          every backend
//   TANDEM_DEVICES     1 to 64                              1            every backend
//   TANDEM_SEED        a decimal or 0x-hexadecimal u64      1            every backend
//   TANDEM_SCHEDULER   deterministic | threads              deterministic  sim
//   TANDEM_GPUS        CUDA ordinals, comma-separated       0, 1, ...    cuda
//
// A backend is there when the program links it: the reference backend always (tandem::core), the
// simulator with tandem::sim, CUDA with tandem::cuda. `auto` is CUDA where the program links it
// and a GPU is visible, the simulator otherwise. A
// variable that is set must hold a valid value even where the program sets the option itself
// (a typo is reported, never ignored); a variable a backend does not use is checked and left
// alone (TANDEM_SCHEDULER on CUDA), so one environment serves every backend.

#include "tandem/core/result.hpp"
#include "tandem/core/runtime.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tandem {

/// What a program asks `open_runtime` for. An option left unset is taken from the environment
/// variable named beside it, and from the default when that is unset too.
struct RuntimeOptions {
    /// "sim", "reference", "cuda" or "auto"; empty: `TANDEM_BACKEND`, else "sim" (the reference
    /// backend where the program does not link the simulator).
    std::string backend{};
    /// The number of devices, 1 to 64; unset: `TANDEM_DEVICES`, else 1.
    std::optional<std::uint32_t> devices{};
    /// The seed of injected faults by probability (and, on the simulator, of the schedule and of
    /// bytes never written); unset: `TANDEM_SEED`, else 1.
    std::optional<std::uint64_t> seed{};
    /// The simulator's scheduler, "deterministic" or "threads"; empty: `TANDEM_SCHEDULER`, else
    /// "deterministic". Other backends ignore it.
    std::string scheduler{};
    /// On CUDA, the GPU of each device by ordinal (several devices may share one GPU); empty:
    /// `TANDEM_GPUS`, else device `i` on GPU `i`. When set, it gives the device count. Other
    /// backends ignore it.
    std::vector<int> gpus{};
    /// The job rank the runtime serves; `Job::join` sets it (and a program under mpirun may set
    /// it to its MPI rank). Its devices are then named "device D of rank R", the memory they
    /// allocate "memory #3 of rank R" (the runtime's rank, not the process's: other runtimes of
    /// the process, other ranks' included, keep theirs), and the simulator places the devices in
    /// the rank's own part of the simulated address space, so no two ranks' devices share an
    /// address. Unset: no job (the environment is not read for it).
    std::optional<std::uint32_t> rank{};
    /// Whether unset options are read from the environment at all; false: from the defaults only.
    bool from_environment = true;
};

/// What `open_runtime` creates, every option resolved: the program's, the environment's or the
/// default.
struct RuntimeSettings {
    /// "sim", "reference" or "cuda" ("auto" resolved).
    std::string backend;
    /// The number of devices.
    std::uint32_t devices = 1;
    /// The seed.
    std::uint64_t seed = 1;
    /// "deterministic" or "threads" (meaningful on the simulator).
    std::string scheduler;
    /// The GPU of each device (on CUDA; empty means device `i` on GPU `i`).
    std::vector<int> gpus;
    /// The job rank, if the runtime serves one.
    std::optional<std::uint32_t> rank;
};

/// The backends this program can create: "reference" (in tandem::core), then, in name order,
/// those it links ("cuda" with tandem::cuda, "sim" with tandem::sim).
std::vector<std::string> available_backends();

/// The settings `open_runtime(options)` would create a runtime with. `InvalidArgument`, naming
/// the variable or option and the value, for a backend this build does not have or that no
/// backend is called (with the closest name), a device count outside 1 to 64, a seed that is not
/// a number or passes 64 bits, an unknown scheduler, or a GPU list that is not ordinals.
Result<RuntimeSettings> runtime_settings(const RuntimeOptions& options = {});

/// A runtime of the backend, devices and seed that `runtime_settings(options)` resolves; its
/// errors, then the backend's own (on CUDA: `DeviceLost` where there is no driver or no GPU,
/// `InvalidArgument` for more devices than visible GPUs, saying how `TANDEM_GPUS` places several
/// devices on one).
Result<std::shared_ptr<Runtime>> open_runtime(const RuntimeOptions& options = {});

}  // namespace tandem
