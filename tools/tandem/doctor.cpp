// `tandem doctor`: what this build and machine offer (the backends built, the GPUs and the peer
// access their driver allows, NCCL, a default simulator runtime, the space in /dev/shm), as lines
// or as one JSON document.

#include "commands.hpp"
#include "help_footer.hpp"
#include "json.hpp"
#include "nccl_library.hpp"

#if TANDEM_TOOL_HAS_CUDA
#include "tandem/cuda/runtime.hpp"
#endif
#include "tandem/open_runtime.hpp"
#include "tandem/sim/runtime.hpp"

#include <sys/statvfs.h>
#include <cstdio>

namespace tandem::tool {
namespace {

struct DoctorFlags {
    std::uint32_t devices = 2;
    bool json = false;
};

/// Whether device `owner` granted `accessor` access to its memory (a device, itself).
bool granted(sim::SimRuntime& runtime, std::size_t owner, std::size_t accessor) {
    return owner == accessor ||
           runtime.client(owner).peer_access_granted(runtime.client(accessor).service());
}

void print_peer_matrix(sim::SimRuntime& runtime) {
    std::printf("peer access (row: owner, column: accessor) of a default runtime:\n      ");
    for (std::size_t accessor = 0; accessor < runtime.device_count(); ++accessor) {
        std::printf(" dev%-2zu", accessor);
    }
    std::printf("\n");
    for (std::size_t owner = 0; owner < runtime.device_count(); ++owner) {
        std::printf("  dev%-2zu", owner);
        for (std::size_t accessor = 0; accessor < runtime.device_count(); ++accessor) {
            std::printf(" %-5s", owner == accessor                   ? "self"
                                 : granted(runtime, owner, accessor) ? "yes"
                                                                     : "no");
        }
        std::printf("\n");
    }
    std::printf("  (grants are explicit: Client::grant_peer_access, or grant_all_peers)\n");
}

#if TANDEM_TOOL_HAS_CUDA
/// Whether the driver lets GPU `accessor` read GPU `owner`'s memory (a GPU, its own).
bool gpu_peer(const cuda::GpuReport& report, std::size_t owner, std::size_t accessor) {
    return owner == accessor || report.peer[accessor][owner];
}

void print_gpus(const cuda::GpuReport& report) {
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
            std::printf(" %-5s", accessor == owner                   ? "self"
                                 : gpu_peer(report, owner, accessor) ? "yes"
                                                                     : "no");
        }
        std::printf("\n");
    }
}

Json cuda_json(const cuda::GpuReport& report) {
    Json gpus = Json::array();
    Json peer = Json::array();
    for (std::size_t gpu = 0; gpu < report.names.size(); ++gpu) {
        const auto [major, minor] = report.compute_capabilities[gpu];
        gpus.push_back({{"index", gpu},
                        {"name", report.names[gpu]},
                        {"compute_capability", std::to_string(major) + "." + std::to_string(minor)},
                        {"tensor_memory_accelerator", report.tma_encoder && major >= 9}});
        Json row = Json::array();
        for (std::size_t accessor = 0; accessor < report.names.size(); ++accessor) {
            row.push_back(gpu_peer(report, gpu, accessor));
        }
        peer.push_back(std::move(row));
    }
    return Json{{"built", true},
                {"usable", report.problem.empty()},
                {"problem", report.problem.empty() ? Json() : Json(report.problem)},
                {"driver_version", report.driver_version},
                {"runtime_version", report.runtime_version},
                {"gpus", std::move(gpus)},
                {"peer_access", std::move(peer)}};
}
#endif

/// The CUDA backend's part of the report, printed or as JSON.
Json cuda_part(bool json) {
#if TANDEM_TOOL_HAS_CUDA
    const cuda::GpuReport report = cuda::probe_gpus();
    if (!json) {
        print_gpus(report);
    }
    return cuda_json(report);
#else
    const char* problem = "no CUDA compiler where this tool was built";
    if (!json) {
        std::printf("backends: sim yes, cuda no (%s)\n", problem);
    }
    return Json{{"built", false},
                {"usable", false},
                {"problem", problem},
                {"driver_version", Json()},
                {"runtime_version", Json()},
                {"gpus", Json::array()},
                {"peer_access", Json::array()}};
#endif
}

void print_nccl(const cuda::NcclLoad& load) {
    if (!load.usable) {
        std::printf("NCCL: %s (%s); collectives on CUDA need it\n",
                    load.opened ? "unusable" : "not found", load.problem.c_str());
        return;
    }
    std::printf("NCCL: %s at %s (ncclCommShrink: %s, ncclCommRevoke: %s)\n",
                load.version->text().c_str(), load.path.c_str(),
                load.has_comm_shrink() ? "yes" : "no", load.has_comm_revoke() ? "yes" : "no");
}

Json nccl_json(const cuda::NcclLoad& load) {
    const auto text_or_null = [](const std::string& text) {
        return text.empty() ? Json() : Json(text);
    };
    return Json{{"found", load.opened},
                {"usable", load.usable},
                {"library", load.library},
                {"path", text_or_null(load.path)},
                {"version", load.version ? Json(load.version->text()) : Json()},
                {"version_code", load.version ? Json(load.version->code) : Json()},
                {"problem", text_or_null(load.problem)},
                {"missing", load.missing},
                {"optional",
                 {{"ncclCommInitRankConfig", load.has_comm_init_rank_config()},
                  {"ncclCommRevoke", load.has_comm_revoke()},
                  {"ncclCommShrink", load.has_comm_shrink()}}}};
}

/// NCCL as a CUDA program of this machine would load it (TANDEM_NCCL_LIBRARY, else
/// libnccl.so.2), printed or as JSON. Its absence fails nothing: only collectives on CUDA need it.
Json nccl_part(bool json) {
    const cuda::NcclLoad& load = cuda::nccl_library();
    if (!json) {
        print_nccl(load);
    }
    return nccl_json(load);
}

Json simulator_json(sim::SimRuntime& runtime, std::uint64_t capacity_bytes) {
    Json devices = Json::array();
    for (const sim::DeviceSnapshot& device : runtime.inspect()) {
        devices.push_back({{"service", to_string(device.service)}, {"segment", device.segment}});
    }
    Json peer = Json::array();
    for (std::size_t owner = 0; owner < runtime.device_count(); ++owner) {
        Json row = Json::array();
        for (std::size_t accessor = 0; accessor < runtime.device_count(); ++accessor) {
            row.push_back(granted(runtime, owner, accessor));
        }
        peer.push_back(std::move(row));
    }
    return Json{{"started", true},
                {"problem", Json()},
                {"capacity_bytes", capacity_bytes},
                {"devices", std::move(devices)},
                {"peer_access", std::move(peer)}};
}

/// The simulator's part: a default runtime of `devices`, printed or as JSON. `started` is false
/// when it could not start.
Json simulator_part(std::uint32_t devices, bool json) {
    sim::SimOptions options;
    options.devices = devices;
    options.capacity_bytes = std::uint64_t{64} << 20;
    auto runtime = sim::SimRuntime::create(options);
    if (!runtime) {
        if (!json) {
            std::printf("simulator: cannot start:\n%s", runtime.error().report().c_str());
        }
        return Json{{"started", false}, {"problem", runtime.error().report()}};
    }
    if (!json) {
        std::printf("simulator devices (default runtime of %u, capacity %llu bytes each):\n",
                    devices, static_cast<unsigned long long>(options.capacity_bytes));
        for (const sim::DeviceSnapshot& device : (*runtime)->inspect()) {
            std::printf("  %s  segment %s (unlinked once mapped)\n",
                        to_string(device.service).c_str(), device.segment.c_str());
        }
        print_peer_matrix(**runtime);
    }
    return simulator_json(**runtime, options.capacity_bytes);
}

/// The space in /dev/shm, which holds the simulator's device memory, printed or as JSON.
Json shm_part(bool json) {
    struct statvfs shm {};
    if (::statvfs("/dev/shm", &shm) != 0) {
        if (!json) {
            std::printf("/dev/shm: not available (the simulator needs it)\n");
        }
        return Json{{"available", false}, {"free_bytes", Json()}, {"size_bytes", Json()}};
    }
    const std::uint64_t free_bytes = std::uint64_t{shm.f_bavail} * shm.f_frsize;
    const std::uint64_t size_bytes = std::uint64_t{shm.f_blocks} * shm.f_frsize;
    if (!json) {
        std::printf("/dev/shm: %.0f MiB free of %.0f MiB\n",
                    static_cast<double>(free_bytes) / (1 << 20),
                    static_cast<double>(size_bytes) / (1 << 20));
    }
    return Json{{"available", true}, {"free_bytes", free_bytes}, {"size_bytes", size_bytes}};
}

/// What `open_runtime` would create from this environment (TANDEM_BACKEND and the rest), or why
/// it would refuse: a program that opens its runtime so meets the same answer.
Json environment_part(bool json) {
    Result<RuntimeSettings> settings = runtime_settings();
    Json backends = Json::array();
    for (const std::string& name : available_backends()) {
        backends.push_back(name);
    }
    if (!settings) {
        if (!json) {
            std::printf("open_runtime: refuses this environment: %s\n",
                        settings.error().message().c_str());
        }
        return Json{{"backends", backends}, {"problem", settings.error().message()}};
    }
    if (!json) {
        std::printf("open_runtime: backend %s, %u device%s, seed %llu%s (from TANDEM_BACKEND, "
                    "TANDEM_DEVICES, TANDEM_SEED, ... or their defaults)\n",
                    settings->backend.c_str(), settings->devices, settings->devices == 1 ? "" : "s",
                    static_cast<unsigned long long>(settings->seed),
                    settings->backend == "sim" ? (", " + settings->scheduler).c_str() : "");
    }
    return Json{{"backends", backends}, {"problem", Json()},
                {"backend", settings->backend}, {"devices", settings->devices},
                {"seed", settings->seed}, {"scheduler", settings->scheduler},
                {"gpus", settings->gpus}};
}

int doctor(const DoctorFlags& flags) {
    Json document = json_document("doctor");
    document["cuda"] = cuda_part(flags.json);
    document["nccl"] = nccl_part(flags.json);
    document["simulator"] = simulator_part(flags.devices, flags.json);
    // A simulator that cannot start says why; the space of /dev/shm is then beside the point.
    const bool started = document["simulator"]["started"].get<bool>();
    document["shm"] = started ? shm_part(flags.json) : Json();
    document["environment"] = environment_part(flags.json);
    const bool ok = started && document["shm"]["available"].get<bool>() &&
                    document["environment"]["problem"].is_null();
    document["ok"] = ok;
    if (flags.json) {
        std::printf("%s\n", json_text(document, 2).c_str());
    }
    return ok ? 0 : 1;
}

}  // namespace

Run add_doctor(CLI::App& app) {
    auto flags = std::make_shared<DoctorFlags>();
    auto* command = app.add_subcommand("doctor",
                                       "Show the backends built, NCCL, simulator devices, "
                                       "peer access and free space in /dev/shm");
    command->add_option("--devices", flags->devices, "Devices of the default runtime")
        ->check(whole_number(1, sim::SimOptions::max_devices))
        ->capture_default_str();
    command->add_flag("--json", flags->json, "Print one JSON document on stdout instead of lines");
    set_help_footer(
        *command,
        "{schema, command: \"doctor\", cuda: {built, usable, problem, driver_version, "
        "runtime_version, gpus: [{index, name, compute_capability, tensor_memory_accelerator}], "
        "peer_access}, nccl: {found, usable, library, path, version, version_code, problem, "
        "missing, optional: {ncclCommInitRankConfig, ncclCommRevoke, ncclCommShrink}}, "
        "simulator: {started, problem, capacity_bytes, devices: [{service, segment}], "
        "peer_access}, shm: {available, free_bytes, size_bytes}, environment: {backends, "
        "problem, backend, devices, seed, scheduler, gpus}, ok}. environment is what "
        "open_runtime would create from TANDEM_BACKEND and the other variables; nccl is the "
        "library TANDEM_NCCL_LIBRARY names, else libnccl.so.2, and its absence fails nothing. "
        "peer_access[owner][accessor] is true where the accessor may use the owner's memory (a "
        "device its own); problem is null when there is none; shm is null when the simulator "
        "could not start.",
        {{0, "the simulator starts, /dev/shm is there and the TANDEM_ variables are valid (a "
             "machine without a GPU or NCCL is fine)"},
         {1, "the simulator cannot start, /dev/shm is missing, or a TANDEM_ variable is invalid"},
         {2, "usage or input error: an unknown option, a value out of range"}});
    return [flags] { return doctor(*flags); };
}

}  // namespace tandem::tool
