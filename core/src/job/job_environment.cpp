// job_environment: this process's place in a job, from the variables of the launcher that started
// it. One launcher's variables are read as a set (TANDEM_*, else Open MPI's, else Slurm's), so a
// job never mixes a rank from one launcher with a world size from another: mpirun inside a Slurm
// allocation still sees SLURM_PROCID=0 from the batch step, and Open MPI's win there.

#include "tandem/job.hpp"
#include "tandem/job_folder.hpp"

#include <charconv>
#include <cstdlib>
#include <optional>
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

/// The tasks of node `node` in Slurm's compressed list of tasks per node ("2(x3),1": three
/// nodes of 2, then one of 1); nullopt when any entry does not parse or the list is too short.
std::optional<std::uint32_t> slurm_tasks_of_node(std::string_view list, std::uint32_t node) {
    std::optional<std::uint32_t> found;
    std::uint64_t first_node = 0;  // The first node the entry read next describes.
    while (true) {
        const std::size_t comma = list.find(',');
        const std::string_view entry = list.substr(0, comma);
        const char* const entry_end = entry.data() + entry.size();
        std::uint32_t tasks = 0;
        std::uint32_t repeat = 1;
        const auto [end, error] = std::from_chars(entry.data(), entry_end, tasks);
        if (error != std::errc{}) {
            return std::nullopt;
        }
        const std::string_view rest(end, static_cast<std::size_t>(entry_end - end));
        if (!rest.empty()) {
            // "(xM)": M nodes of this many tasks.
            if (rest.size() < 4 || rest.substr(0, 2) != "(x" || rest.back() != ')') {
                return std::nullopt;
            }
            const auto [count_end, count_error] =
                std::from_chars(rest.data() + 2, entry_end - 1, repeat);
            if (count_error != std::errc{} || count_end != entry_end - 1) {
                return std::nullopt;
            }
        }
        if (!found && node >= first_node && node - first_node < repeat) {
            found = tasks;
        }
        first_node += repeat;
        if (comma == std::string_view::npos) {
            return found;
        }
        list.remove_prefix(comma + 1);
    }
}

/// The ranks on this host as the launcher says, 0 where it does not; checked to be 1 to the
/// world size.
Result<std::uint32_t> host_ranks(JobLauncher launcher, std::uint32_t world_size) {
    const std::string rule = "the ranks on this host are 1 to the world size (" +
                             std::to_string(world_size) + ")";
    std::uint32_t ranks = 0;
    const char* name = nullptr;
    if (launcher == JobLauncher::open_mpi && variable("OMPI_COMM_WORLD_LOCAL_SIZE") != nullptr) {
        name = "OMPI_COMM_WORLD_LOCAL_SIZE";
        Result<std::uint32_t> local = number(name, world_size + 1, rule);
        if (!local) {
            return local.error();
        }
        ranks = *local;
    } else if (launcher == JobLauncher::slurm &&
               variable("SLURM_STEP_TASKS_PER_NODE") != nullptr &&
               variable("SLURM_NODEID") != nullptr) {
        name = "SLURM_STEP_TASKS_PER_NODE";
        Result<std::uint32_t> node = number("SLURM_NODEID", job_ranks_max, "a node number");
        if (!node) {
            return node.error();
        }
        ranks = slurm_tasks_of_node(variable(name), *node).value_or(0);
        if (ranks == 0) {
            return bad(name, variable(name),
                       "no count of tasks for node " + std::to_string(*node) + " (SLURM_NODEID)");
        }
    }
    if (name != nullptr && (ranks == 0 || ranks > world_size)) {
        return bad(name, variable(name), rule + "; this host's count is " + std::to_string(ranks));
    }
    return ranks;
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
    Result<std::uint32_t> here = host_ranks(found->launcher, *world_size);
    if (!here) {
        return here.error();
    }
    environment.host_ranks = *here;
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
