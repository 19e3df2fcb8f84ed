// job_environment: this process's place in a job, from the variables of the launcher that started
// it. One launcher's variables are read as a set (TANDEM_*, else Open MPI's, else Slurm's), so a
// job never mixes a rank from one launcher with a world size from another: mpirun inside a Slurm
// allocation still sees SLURM_PROCID=0 from the batch step, and Open MPI's win there.

#include "tandem/job.hpp"
#include "tandem/job_folder.hpp"

#include <charconv>
#include <cstdlib>
#include <string_view>

namespace tandem {
namespace {

/// The names a launcher gives the rank, the world size and the local rank.
struct LauncherVariables {
    JobLauncher launcher;
    const char* rank;
    const char* world_size;
    const char* local_rank;
};

constexpr LauncherVariables launchers[] = {
    {JobLauncher::tandem, "TANDEM_RANK", "TANDEM_WORLD_SIZE", "TANDEM_LOCAL_RANK"},
    {JobLauncher::open_mpi, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
     "OMPI_COMM_WORLD_LOCAL_RANK"},
    {JobLauncher::slurm, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
};

/// The variable's value, or null when it is unset or empty (an empty variable counts as unset).
const char* variable(const char* name) {
    const char* value = std::getenv(name);
    return value != nullptr && *value != '\0' ? value : nullptr;
}

Error bad(const char* name, std::string_view value, const std::string& why) {
    return Error::invalid_argument(std::string(name) + "='" + std::string(value) + "': " + why);
}

/// Variable `name` as a decimal number below `limit`.
Result<std::uint32_t> number(const char* name, std::uint32_t limit, const std::string& rule) {
    const char* text = variable(name);
    if (text == nullptr) {
        return bad(name, "", "unset; " + rule);
    }
    const std::string_view view = text;
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(view.data(), view.data() + view.size(), value);
    if (error != std::errc{} || end != view.data() + view.size() || value >= limit) {
        return bad(name, view, rule);
    }
    return static_cast<std::uint32_t>(value);
}

/// The job id: TANDEM_JOB_ID wherever it is set, else what the launcher gives every rank alike.
Result<std::string> job_id(JobLauncher launcher) {
    std::string id;
    const char* source = "TANDEM_JOB_ID";
    if (const char* given = variable("TANDEM_JOB_ID")) {
        id = given;
    } else if (launcher == JobLauncher::slurm && variable("SLURM_JOB_ID") != nullptr &&
               variable("SLURM_STEP_ID") != nullptr) {
        id = std::string("slurm-") + variable("SLURM_JOB_ID") + "." + variable("SLURM_STEP_ID");
        source = "SLURM_JOB_ID and SLURM_STEP_ID";
    } else if (launcher == JobLauncher::open_mpi && variable("PMIX_NAMESPACE") != nullptr) {
        // A PMIx namespace ("prterun-host-4242@1") is one per job; its other characters become
        // dashes so that it names a folder.
        id = variable("PMIX_NAMESPACE");
        for (char& c : id) {
            const bool kept = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                              (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
            c = kept ? c : '-';
        }
        source = "PMIX_NAMESPACE";
    } else {
        return Error::invalid_argument(
            "TANDEM_JOB_ID is unset and " + std::string(to_string(launcher)) +
            " gives no job id: set TANDEM_JOB_ID to the same value in every rank "
            "(mpirun -x TANDEM_JOB_ID=...)");
    }
    if (Status checked = check_job_id(id); !checked) {
        return Error::invalid_argument(std::string(source) + ": " + checked.error().message());
    }
    return id;
}

/// The job folder: TANDEM_JOB_DIR, an absolute path, else the job id's under /dev/shm.
Result<std::string> job_folder(const std::string& id) {
    const char* given = variable("TANDEM_JOB_DIR");
    if (given == nullptr) {
        return job_folder_path(id);
    }
    if (given[0] != '/') {
        return bad("TANDEM_JOB_DIR", given, "the job folder is an absolute path");
    }
    std::string path = given;
    while (path.size() > 1 && path.back() == '/') {
        path.pop_back();
    }
    return path;
}

}  // namespace

std::string_view to_string(JobLauncher launcher) {
    switch (launcher) {
        case JobLauncher::tandem:
            return "tandem";
        case JobLauncher::open_mpi:
            return "mpirun";
        case JobLauncher::slurm:
            return "srun";
    }
    return "unknown";
}

Result<JobEnvironment> job_environment() {
    const LauncherVariables* found = nullptr;
    for (const LauncherVariables& candidate : launchers) {
        if (variable(candidate.rank) != nullptr) {
            found = &candidate;
            break;
        }
    }
    if (found == nullptr) {
        return Error::invalid_argument(
            "this process is not a rank of a job: TANDEM_RANK, OMPI_COMM_WORLD_RANK and "
            "SLURM_PROCID are unset; start it with 'tandem launch -n N -- PROGRAM', mpirun or "
            "srun");
    }
    JobEnvironment environment;
    environment.launcher = found->launcher;
    Result<std::uint32_t> world_size =
        number(found->world_size, job_ranks_max + 1,
               "the world size is 1 to " + std::to_string(job_ranks_max));
    if (!world_size || *world_size == 0) {
        return world_size ? bad(found->world_size, "0", "the world size is at least 1")
                          : world_size.error();
    }
    environment.world_size = *world_size;
    const std::string below = "a decimal number below the world size (" +
                              std::string(found->world_size) + "=" + std::to_string(*world_size) +
                              ")";
    Result<std::uint32_t> rank = number(found->rank, *world_size, "a rank is " + below);
    if (!rank) {
        return rank.error();
    }
    environment.rank = *rank;
    environment.local_rank = *rank;
    if (variable(found->local_rank) != nullptr) {
        Result<std::uint32_t> local =
            number(found->local_rank, *world_size, "a local rank is " + below);
        if (!local) {
            return local.error();
        }
        environment.local_rank = *local;
    }
    Result<std::string> id = job_id(found->launcher);
    if (!id) {
        return id.error();
    }
    environment.job_id = *id;
    Result<std::string> folder = job_folder(*id);
    if (!folder) {
        return folder.error();
    }
    environment.job_folder = *folder;
    return environment;
}

}  // namespace tandem
