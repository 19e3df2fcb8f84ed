// `tandem doctor` (what this build and machine offer) and `tandem inspect` (a scenario's
// devices at the end of its run: a simulator runtime lives in one process, so inspect runs the
// scenario itself rather than attaching to another process).

#include "commands.hpp"

#if TANDEM_TOOL_HAS_CUDA
#include "tandem/cuda/runtime.hpp"
#endif
#include "scenario_run.hpp"

#include <sys/statvfs.h>
#include <cstdio>

namespace tandem::tool {
namespace {

struct DoctorFlags {
    std::uint32_t devices = 2;
};

void print_peer_matrix(sim::SimRuntime& runtime) {
    std::printf("peer access (row: owner, column: accessor) of a default runtime:\n      ");
    for (std::size_t accessor = 0; accessor < runtime.device_count(); ++accessor) {
        std::printf(" dev%-2zu", accessor);
    }
    std::printf("\n");
    for (std::size_t owner = 0; owner < runtime.device_count(); ++owner) {
        std::printf("  dev%-2zu", owner);
        for (std::size_t accessor = 0; accessor < runtime.device_count(); ++accessor) {
            const bool granted = runtime.client(owner).server().peer_access_granted(
                runtime.client(accessor).service());
            std::printf(" %-5s", owner == accessor ? "self" : granted ? "yes" : "no");
        }
        std::printf("\n");
    }
    std::printf("  (grants are explicit: Client::grant_peer_access, or grant_all_peers)\n");
}

/// The GPUs the CUDA backend would use, or why there are none. Returns whether GPUs are usable.
void print_gpus() {
#if TANDEM_TOOL_HAS_CUDA
    const cuda::GpuReport report = cuda::probe_gpus();
    if (!report.problem.empty()) {
        std::printf("backends: sim yes, cuda built (runtime %d) but no usable GPU: %s\n",
                    report.runtime_version, report.problem.c_str());
        return;
    }
    std::printf("backends: sim yes, cuda yes (driver %d, runtime %d)\n", report.driver_version,
                report.runtime_version);
    for (std::size_t gpu = 0; gpu < report.names.size(); ++gpu) {
        const auto [major, minor] = report.compute_capabilities[gpu];
        const bool tma = report.tma_encoder && major >= 9;
        std::printf("  gpu %zu: %s, compute capability %d.%d, tensor memory accelerator %s\n", gpu,
                    report.names[gpu].c_str(), major, minor,
                    tma ? "used for tiled copies" : "not used");
    }
    // Rows are owners and columns accessors, as in the simulator's matrix below.
    std::printf("peer access the driver allows (row: owner, column: accessor):\n       ");
    for (std::size_t accessor = 0; accessor < report.names.size(); ++accessor) {
        std::printf(" gpu%-2zu", accessor);
    }
    std::printf("\n");
    for (std::size_t owner = 0; owner < report.names.size(); ++owner) {
        std::printf("  gpu%-2zu", owner);
        for (std::size_t accessor = 0; accessor < report.names.size(); ++accessor) {
            std::printf(" %-5s", accessor == owner              ? "self"
                                 : report.peer[accessor][owner] ? "yes"
                                                                : "no");
        }
        std::printf("\n");
    }
#else
    std::printf("backends: sim yes, cuda no (no CUDA compiler where this tool was built)\n");
#endif
}

int doctor(const DoctorFlags& flags) {
    print_gpus();
    sim::SimOptions options;
    options.devices = flags.devices;
    options.capacity_bytes = std::uint64_t{64} << 20;
    auto runtime = sim::SimRuntime::create(options);
    if (!runtime) {
        std::printf("simulator: cannot start:\n%s", runtime.error().report().c_str());
        return 1;
    }
    std::printf("simulator devices (default runtime of %u, capacity %llu bytes each):\n",
                flags.devices, static_cast<unsigned long long>(options.capacity_bytes));
    for (const sim::DeviceSnapshot& device : (*runtime)->inspect()) {
        std::printf("  %s  segment /dev/shm/%s\n", to_string(device.service).c_str(),
                    device.segment.c_str());
    }
    print_peer_matrix(**runtime);
    struct statvfs shm {};
    if (::statvfs("/dev/shm", &shm) != 0) {
        std::printf("/dev/shm: not available (the simulator needs it)\n");
        return 1;
    }
    const double free_mib =
        static_cast<double>(shm.f_bavail) * static_cast<double>(shm.f_frsize) / (1 << 20);
    const double size_mib =
        static_cast<double>(shm.f_blocks) * static_cast<double>(shm.f_frsize) / (1 << 20);
    std::printf("/dev/shm: %.0f MiB free of %.0f MiB\n", free_mib, size_mib);
    return 0;
}

struct InspectFlags {
    std::string file;
    std::optional<std::uint64_t> seed;
};

int inspect(const InspectFlags& flags) {
    auto parsed = parse_scenario_file(flags.file);
    if (const auto* error = std::get_if<ParseError>(&parsed)) {
        std::fprintf(stderr, "%s\n", error->message.c_str());
        return 2;
    }
    const ScenarioResult result =
        run_scenario(std::get<Scenario>(parsed), RunOptions{flags.seed, false, true});
    std::printf("%s: %s (seed %llu, %zu steps, %llu scheduler steps)\n", flags.file.c_str(),
                result.passed ? "passed" : "FAILED", static_cast<unsigned long long>(result.seed),
                result.steps_run, static_cast<unsigned long long>(result.scheduler_steps));
    for (const std::string& outcome : result.outcomes) {
        std::printf("  %s\n", outcome.c_str());
    }
    std::printf("devices after the last step:\n");
    for (const sim::DeviceSnapshot& device : result.devices) {
        std::printf(
            "  %s%s\n    in use %llu bytes, reserved %llu, free %llu, largest free block %llu\n"
            "    allocations %zu, claimed allocations %zu, failures %zu\n",
            to_string(device.service).c_str(), device.lost ? " (LOST)" : "",
            static_cast<unsigned long long>(device.usage.in_use_bytes),
            static_cast<unsigned long long>(device.usage.reserved_bytes),
            static_cast<unsigned long long>(device.usage.free_bytes),
            static_cast<unsigned long long>(device.usage.largest_free_block_bytes),
            device.allocations, device.claimed_allocations, device.failures);
    }
    std::printf("races: %zu\n", result.races.size());
    for (const sim::RaceReport& race : result.races) {
        std::printf("  %s / %s on %s\n", race.first.c_str(), race.second.c_str(),
                    to_string(race.bytes).c_str());
    }
    if (!result.passed) {
        std::printf("%s\n", result.failure.c_str());
    }
    return result.passed ? 0 : 1;
}

}  // namespace

Run add_doctor(CLI::App& app) {
    auto flags = std::make_shared<DoctorFlags>();
    auto* command = app.add_subcommand("doctor",
                                       "Show the backends built, simulator devices, peer "
                                       "access and free space in /dev/shm");
    command->add_option("--devices", flags->devices, "Devices of the default runtime")
        ->check(CLI::Range(1, 64))
        ->capture_default_str();
    return [flags] { return doctor(*flags); };
}

Run add_inspect(CLI::App& app) {
    auto flags = std::make_shared<InspectFlags>();
    auto* command = app.add_subcommand(
        "inspect",
        "Run a scenario and print its devices, allocations, claims and failures at the end");
    command->add_option("file", flags->file, "The scenario file")->required();
    command->add_option("--seed", flags->seed, "Seed (overrides the file's)");
    return [flags] { return inspect(*flags); };
}

}  // namespace tandem::tool
