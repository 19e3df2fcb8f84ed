// A job simulated in one process: every rank joins on a thread of its own, since a join returns
// only once every rank has come. The ranks are then as independent as ranks of their own
// processes (a folder, a seat, sockets and a runtime each); nothing here shortens their path.

#include "tandem/job.hpp"
#include "tandem/job_folder.hpp"

#include <future>
#include <string>
#include <utility>
#include <vector>

namespace tandem {

namespace {

/// The environment of rank `rank` of `world_size` in the job `options` names, or a fresh one.
JobEnvironment in_process_environment(const JoinOptions& options, const std::string& fresh_id,
                                      std::uint32_t rank, std::uint32_t world_size) {
    JobEnvironment environment;
    if (options.environment) {
        environment.job_id = options.environment->job_id;
        environment.job_folder = options.environment->job_folder;
    } else {
        environment.job_id = fresh_id;
        environment.job_folder = job_folder_path(fresh_id);
    }
    environment.rank = rank;
    environment.local_rank = rank;
    environment.world_size = world_size;
    environment.launcher = JobLauncher::tandem;
    return environment;
}

}  // namespace

Result<std::vector<Job>> Job::join_in_process(std::uint32_t world_size,
                                              const JoinOptions& options) {
    if (world_size == 0 || world_size > job_ranks_max) {
        return Error::invalid_argument("a job of " + std::to_string(world_size) +
                                       " ranks in one process: a job has 1 to " +
                                       std::to_string(job_ranks_max) + " ranks");
    }
    const std::string fresh_id = new_job_id();
    std::vector<std::future<Result<Job>>> joining;
    joining.reserve(world_size);
    for (std::uint32_t rank = 0; rank < world_size; ++rank) {
        JoinOptions own = options;
        own.environment = in_process_environment(options, fresh_id, rank, world_size);
        joining.push_back(
            std::async(std::launch::async, [own = std::move(own)] { return Job::join(own); }));
    }
    // Every join is waited for, failed or not: a rank still joining must not outlive the call.
    std::vector<Result<Job>> joined;
    joined.reserve(world_size);
    for (auto& future : joining) {
        joined.push_back(future.get());
    }
    std::vector<Job> jobs;
    jobs.reserve(world_size);
    for (Result<Job>& rank : joined) {
        if (!rank) {
            return rank.error();  // The ranks that joined leave as `joined` goes.
        }
        jobs.push_back(std::move(*rank));
    }
    return jobs;
}

}  // namespace tandem
