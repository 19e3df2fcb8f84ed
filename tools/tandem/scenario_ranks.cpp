#include "scenario_ranks.hpp"

#include "c_strings.hpp"

#include "tandem/job.hpp"
#include "tandem/job_folder.hpp"
#include "tandem/sim/runtime.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

extern char** environ;

namespace tandem::tool {
namespace {

/// How long a rank waits for the others at a barrier, and for a buffer another rank shares.
constexpr std::chrono::seconds rank_wait{60};

std::string result_path(const std::string& folder, std::uint32_t rank) {
    return folder + "/scenario-result-" + std::to_string(rank);
}

/// Starts this program as rank `rank` of the job in `folder`, its output into the folder.
pid_t start_rank(const Scenario& scenario, std::uint64_t seed, const std::string& id,
                 const std::string& folder, std::uint32_t rank) {
    std::vector<std::string> variables;
    for (char** variable = environ; *variable != nullptr; ++variable) {
        if (std::string(*variable).rfind("TANDEM_", 0) != 0) {
            variables.emplace_back(*variable);
        }
    }
    const std::uint32_t per_rank = scenario.devices / scenario.ranks;
    for (const std::string& set :
         {"TANDEM_RANK=" + std::to_string(rank), "TANDEM_WORLD_SIZE=" + std::to_string(scenario.ranks),
          "TANDEM_JOB_ID=" + id, "TANDEM_JOB_DIR=" + folder, std::string("TANDEM_BACKEND=sim"),
          "TANDEM_DEVICES=" + std::to_string(per_rank)}) {
        variables.push_back(set);
    }
    std::vector<std::string> words{"/proc/self/exe", "--as-scenario-rank", scenario.path,
                                   std::to_string(seed)};
    std::vector<char*> argv = c_strings(words);
    std::vector<char*> envp = c_strings(variables);
    const std::string output = folder + "/scenario-output-" + std::to_string(rank);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    pid_t pid = 0;
    if (::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data()) != 0) {
        pid = 0;
    }
    posix_spawn_file_actions_destroy(&actions);
    return pid;
}

/// What one rank wrote: passed, the step it stopped at, the steps it ran, and why.
struct RankResult {
    bool written = false;
    bool passed = false;
    std::size_t failed_step = 0;
    std::size_t steps_run = 0;
    std::string failure;
};

RankResult read_result(const std::string& folder, std::uint32_t rank) {
    RankResult result;
    std::ifstream file(result_path(folder, rank));
    int passed = 0;
    if (file >> passed >> result.failed_step >> result.steps_run) {
        result.written = true;
        result.passed = passed == 1;
        std::stringstream rest;
        rest << file.rdbuf();
        result.failure = rest.str();
        result.failure.erase(0, result.failure.find_first_not_of('\n'));
    }
    return result;
}

std::string text_of(const std::string& path) {
    std::ifstream file(path);
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
}

}  // namespace

std::string why_not_as_job(const Scenario& scenario, const RunOptions& options) {
    if (options.backend != "sim") {
        return "runs as a job on the simulator only, for now";
    }
    if (scenario.races == RaceExpectation::Reported) {
        return "expects a race, and races are found within one process";
    }
    return {};
}

void run_as_job(const Scenario& scenario, ScenarioResult& result) {
    const std::string id = new_job_id();
    Result<JobFolderLock> folder = JobFolderLock::create(job_folder_path(id));
    if (!folder) {
        result.failure = scenario.path + ": the job could not start: " + folder.error().message();
        return;
    }
    std::vector<pid_t> ranks;
    for (std::uint32_t rank = 0; rank < scenario.ranks; ++rank) {
        ranks.push_back(start_rank(scenario, result.seed, id, folder->path(), rank));
    }
    std::optional<RankResult> first;
    std::string lost;
    for (std::uint32_t rank = 0; rank < scenario.ranks; ++rank) {
        int status = 0;
        if (ranks[rank] == 0 || ::waitpid(ranks[rank], &status, 0) != ranks[rank]) {
            lost += "rank " + std::to_string(rank) + " could not start\n";
            continue;
        }
        RankResult ranked = read_result(folder->path(), rank);
        if (!ranked.written) {
            lost += "rank " + std::to_string(rank) + " wrote no result:\n" +
                    text_of(folder->path() + "/scenario-output-" + std::to_string(rank));
            continue;
        }
        result.steps_run += ranked.steps_run;
        if (!ranked.passed && (!first || ranked.failed_step < first->failed_step)) {
            first = ranked;
        }
    }
    folder->release_and_remove();
    if (!lost.empty()) {
        result.failure = scenario.path + ": " + lost;
    } else if (first) {
        result.failure = first->failure;
    }
}

namespace {

/// How a rank finds a buffer of another rank's device: the names shared (a share step, of a
/// buffer or a slice), and the slices the file makes, which a rank makes again of what it looks
/// up.
class SharedNames {
public:
    explicit SharedNames(const Scenario& scenario) {
        for (const Step& step : scenario.steps) {
            if (const auto* share = std::get_if<ShareStep>(&step.action)) {
                shared_.insert(share->buffer);
            } else if (const auto* slice = std::get_if<SliceStep>(&step.action)) {
                slices_.emplace(slice->name, *slice);
            }
        }
    }

    /// The handle of `name` as this rank reaches it: looked up when shared (once: the handle is
    /// kept, so that one looked up before its owner's loss reads as the lost owner's memory
    /// after it, D1, rather than failing to be looked up), else a slice of a buffer it reaches;
    /// `InvalidArgument` for a buffer that was never shared.
    Result<Handle> resolve(Job& job, const std::string& name) {
        if (shared_.contains(name)) {
            if (const auto kept = looked_up_.find(name); kept != looked_up_.end()) {
                return kept->second;
            }
            Result<Handle> found = job.lookup(name, rank_wait);
            if (found) {
                looked_up_.insert_or_assign(name, *found);
            }
            return found;
        }
        if (auto slice = slices_.find(name); slice != slices_.end()) {
            Result<Handle> parent = resolve(job, slice->second.of);
            return parent ? parent->slice(slice->second.offset_bytes, slice->second.length_bytes)
                          : parent;
        }
        return Error::invalid_argument("buffer '" + name +
                                       "' is another rank's and was never shared");
    }

private:
    std::set<std::string> shared_;
    std::map<std::string, SliceStep> slices_;
    /// The shared buffers this rank looked up.
    std::map<std::string, Handle> looked_up_;
};

/// This rank's clients by the file's device numbers, and the grants every peer gets when the
/// file grants all.
std::vector<std::optional<Client>> rank_clients(const Scenario& scenario, Job& job) {
    const std::uint32_t per_rank = scenario.devices / scenario.ranks;
    std::vector<std::optional<Client>> clients(scenario.devices);
    for (std::uint32_t local = 0; local < per_rank; ++local) {
        clients[job.rank() * per_rank + local].emplace(job.runtime()->client(local));
    }
    for (std::uint32_t local = 0; scenario.grant_all_peers && local < per_rank; ++local) {
        for (std::uint32_t device = 0; device < scenario.devices; ++device) {
            if (device / per_rank != job.rank()) {
                (void)clients[job.rank() * per_rank + local]->grant_peer_access(
                    *job.service(device / per_rank, device % per_rank));
            }
        }
    }
    return clients;
}

}  // namespace

RankRun job_rank_run(const Scenario& scenario, Job& job) {
    const std::uint32_t per_rank = scenario.devices / scenario.ranks;
    const auto names = std::make_shared<SharedNames>(scenario);
    RankRun run;
    run.rank = job.rank();
    run.clients = rank_clients(scenario, job);
    run.hooks.resolve = [&job, names](const std::string& name) {
        return names->resolve(job, name);
    };
    run.hooks.publish = [&job](const std::string& name, const Handle& handle) {
        return job.publish(name, handle);
    };
    run.hooks.service_of = [&job, per_rank](std::uint32_t device) {
        return *job.service(device / per_rank, device % per_rank);
    };
    run.hooks.publish_event = [&job](const std::string& name, const Event& event) {
        return job.publish(name, event);
    };
    run.hooks.resolve_event = [&job](const std::string& name) {
        return job.lookup_event(name, rank_wait);
    };
    run.rank_of = [per_rank](std::uint32_t device) { return device / per_rank; };
    run.barrier = [&job] { return job.barrier(rank_wait); };
    run.sync_all = [&job] { return job.runtime()->sync_all(); };
    return run;
}

int run_as_scenario_rank(const std::string& path, std::uint64_t seed) {
    auto parsed = parse_scenario_file(path);
    if (const auto* error = std::get_if<ParseError>(&parsed)) {
        std::fprintf(stderr, "tandem: %s\n", error->message.c_str());
        return 2;
    }
    const Scenario& scenario = std::get<Scenario>(parsed);
    JoinOptions options;
    options.runtime.seed = seed;
    options.timeout = rank_wait;
    Result<Job> job = Job::join(options);
    if (!job) {
        std::fprintf(stderr, "tandem: %s", job.error().report().c_str());
        return 2;
    }
    std::size_t failed_step = 0;
    ScenarioResult result = run_scenario_rank(scenario, job_rank_run(scenario, *job), failed_step);
    if (result.passed) {  // No rank leaves while another may still look its buffers up.
        if (Status passed = job->barrier(rank_wait); !passed) {
            result.passed = false;
            result.failure = scenario.path + ": the job, after the last step: " +
                             passed.error().message();
        }
    }
    const auto simulated = std::dynamic_pointer_cast<sim::SimRuntime>(job->runtime());
    if (result.passed && scenario.races == RaceExpectation::None && simulated &&
        !simulated->races().empty()) {
        result.passed = false;
        result.failure = scenario.path + ": rank " + std::to_string(job->rank()) +
                         ": expected no race, but one was reported";
        failed_step = scenario.steps.size();
    }
    std::ofstream out(result_path(job->folder(), job->rank()));
    out << (result.passed ? 1 : 0) << " " << failed_step << " " << result.steps_run << "\n"
        << result.failure;
    return out ? 0 : 2;
}

}  // namespace tandem::tool
