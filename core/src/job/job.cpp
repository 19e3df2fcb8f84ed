// Job::join: the folder, the seat, the rendezvous, the watcher and this rank's runtime, in that
// order, each undone in reverse when a later one fails.

#include "job_peers.hpp"
#include "life_words.hpp"
#include "rank_watcher.hpp"
#include "rendezvous.hpp"

#include "tandem/backend/backend_registry.hpp"

#include "tandem/job.hpp"
#include "tandem/job_folder.hpp"

#include <csignal>
#include <cstring>
#include <map>
#include <utility>

namespace tandem {

struct Job::State {
    JobEnvironment environment;
    std::optional<JobFolderLock> folder;
    std::optional<job_detail::RankSeat> seat;
    /// The other ranks' devices and the names shared; before the watcher, which hands it frames
    /// until it is destroyed.
    std::shared_ptr<job_detail::JobPeers> peers;
    /// This rank's life word and its watch of the others' (life_words.hpp). It tells the watcher
    /// of a rank whose process is ending, so its keeper stops first (`leave`, `abandon`); the
    /// watcher reads the others' words, so their mappings go after it.
    std::unique_ptr<job_detail::LifeWords> life;
    std::unique_ptr<job_detail::RankWatcher> watcher;
    std::shared_ptr<Runtime> runtime;
    /// Collective calls made so far: every rank makes them in the same order.
    std::uint64_t collectives = 0;
    /// Transfers made so far, by (the other rank, whether this rank sent them).
    std::map<std::pair<std::uint32_t, bool>, std::uint64_t> transfers;
    bool left = false;
};

namespace {

/// The runtime options of this rank: the seed made per rank, and on CUDA the rank's devices
/// placed on GPUs by its local rank when the program and the environment place none.
Result<RuntimeOptions> rank_runtime_options(RuntimeOptions options,
                                            const JobEnvironment& environment) {
    Result<RuntimeSettings> settings = runtime_settings(options);
    if (!settings) {
        return settings.error();
    }
    options.backend = settings->backend;
    options.devices = settings->devices;
    options.seed = settings->seed + environment.rank;
    options.rank = environment.rank;
    if (settings->backend == "cuda" && settings->gpus.empty()) {
        for (std::uint32_t device = 0; device < settings->devices; ++device) {
            options.gpus.push_back(
                static_cast<int>(environment.local_rank * settings->devices + device));
        }
    }
    return options;
}

/// This process's place: the program's, else the environment's; checked either way.
Result<JobEnvironment> resolve_environment(const JoinOptions& options) {
    Result<JobEnvironment> environment =
        options.environment ? Result<JobEnvironment>(*options.environment) : job_environment();
    if (!environment) {
        return environment.error();
    }
    if (environment->world_size == 0 || environment->world_size > job_ranks_max ||
        environment->rank >= environment->world_size) {
        return Error::invalid_argument("rank " + std::to_string(environment->rank) +
                                       " of a job of " + std::to_string(environment->world_size) +
                                       " ranks: a job has 1 to " + std::to_string(job_ranks_max) +
                                       " ranks, numbered from 0");
    }
    if (environment->host_ranks != 0 && environment->host_ranks < environment->world_size) {
        return Error::invalid_argument(
            "rank " + std::to_string(environment->rank) + " is one of " +
            std::to_string(environment->host_ranks) + " of the job's " +
            std::to_string(environment->world_size) + " ranks on this host (so " +
            std::string(to_string(environment->launcher)) +
            " says): a job's ranks meet in a folder of one host, so ranks on several hosts "
            "cannot join one; between hosts, ranks exchange data through "
            "`tandem::mpi::Communicator` (or NCCL), each opening its own runtime "
            "(`tandem::open_runtime`)");
    }
    if (Status id = check_job_id(environment->job_id); !id) {
        return id.error();
    }
    if (environment->job_folder.empty() || environment->job_folder[0] != '/') {
        return Error::invalid_argument("job folder '" + environment->job_folder +
                                       "': the job folder is an absolute path");
    }
    return environment;
}

/// The watcher of this rank's connections: frames and losses go to `peers`, and a departure is
/// read from the rank's board and seat, and from its life word in `life`.
std::unique_ptr<job_detail::RankWatcher> start_watcher(
    std::uint32_t rank, std::vector<job_detail::RankConnection> connections,
    job_detail::JobPeers* peers, const job_detail::LifeWords* life) {
    return std::make_unique<job_detail::RankWatcher>(
        rank, std::move(connections),
        [peers](std::uint32_t from, const job_detail::Frame& frame, std::vector<int>& passed) {
            peers->on_frame(from, frame, passed);
        },
        [peers](const RankLoss& loss) { peers->on_rank_lost(loss); },
        job_detail::Departures{
            [peers, life](std::uint32_t of) {
                // A process running another program lets its word go before its descriptors
                // close, and its seat's with them: the word tells while the seat may not yet.
                job_detail::Departure departure = peers->departure_of(of);
                if (departure.kind == job_detail::Departure::Kind::none && life->ended(of)) {
                    departure = {job_detail::Departure::Kind::abandoned, 0};
                }
                return departure;
            },
            [peers](std::uint32_t from) {
                peers->depart({job_detail::Departure::Kind::cut_off, from});
            }});
}

}  // namespace

std::string RankLoss::describe() const {
    std::string text = "rank " + std::to_string(rank) + " (pid " + std::to_string(pid) + ") ";
    switch (how) {
        case RankEnd::left:
            return text + "left the job";
        case RankEnd::exited:
            return text + "exited with code " + std::to_string(code) + " without leaving the job";
        case RankEnd::killed: {
            const char* name = ::strsignal(code);
            return text + "was killed by signal " + std::to_string(code) +
                   (name != nullptr ? std::string(" (") + name + ")" : std::string());
        }
        case RankEnd::vanished:
            return text +
                   "closed its connections without leaving the job (it exited, crashed or was "
                   "killed; its process was gone before this rank could ask how)";
        case RankEnd::abandoned:
            return text +
                   "was abandoned: its connections closed without leaving the job while its "
                   "process runs on (Job::abandon, or the process closed them itself)";
        case RankEnd::cut_off:
            return text + "was cut off from the job: its connection to rank " +
                   std::to_string(code) +
                   " was lost while both ranks lived, and the job parts such a pair by cutting "
                   "off the higher rank";
        case RankEnd::this_rank_cut_off:
            return text + "is out of this rank's reach: " +
                   job_detail::cut_off_words(static_cast<std::uint32_t>(code));
    }
    return text;
}

Result<Job> Job::join(const JoinOptions& options) {
    Result<JobEnvironment> environment = resolve_environment(options);
    if (!environment) {
        return environment.error();
    }
    if (options.message_delay_max < std::chrono::microseconds(0) ||
        options.message_delay_max > std::chrono::seconds(1)) {
        return Error::invalid_argument("a message delay of " +
                                       std::to_string(options.message_delay_max.count()) +
                                       " us: JoinOptions::message_delay_max is 0 to 1 s");
    }
    // The runtime's options are checked before any rank is met: a typo in TANDEM_BACKEND fails
    // every rank at once, not after they have all waited for one another.
    Result<RuntimeOptions> runtime_options = RuntimeOptions{};
    if (options.open_runtime) {
        runtime_options = rank_runtime_options(options.runtime, *environment);
        if (!runtime_options) {
            return runtime_options.error();
        }
    }
    auto state = std::make_unique<State>();
    state->environment = *environment;
    Result<JobFolderLock> folder = JobFolderLock::hold(environment->job_folder);
    if (!folder) {
        return folder.error();
    }
    state->folder.emplace(std::move(*folder));
    Result<job_detail::RankSeat> seat =
        job_detail::RankSeat::take(environment->job_folder, environment->rank, environment->job_id);
    if (!seat) {
        state->folder->release_and_remove_if_last();
        return seat.error();
    }
    state->seat.emplace(std::move(*seat));
    // The word is made before the rendezvous, so every rank that met this one finds it.
    Result<std::unique_ptr<job_detail::LifeWords>> life =
        job_detail::LifeWords::create(environment->job_folder, environment->rank);
    if (!life) {
        state->seat->release();
        state->folder->release_and_remove_if_last();
        return life.error();
    }
    state->life = std::move(*life);
    Result<std::vector<job_detail::RankConnection>> peers =
        job_detail::rendezvous(*environment, options.timeout);
    if (!peers) {
        state->seat->release();
        state->folder->release_and_remove_if_last();
        return peers.error();
    }
    state->peers =
        std::make_shared<job_detail::JobPeers>(environment->rank, environment->world_size,
                                               environment->job_folder, options.event_wait_timeout);
    state->peers->delay_messages(options.message_delay_max,
                                 runtime_options->seed.value_or(environment->rank));
    state->watcher = start_watcher(environment->rank, std::move(*peers), state->peers.get(),
                                   state->life.get());
    Job job(std::move(state));
    if (Status watched = job.state_->life->watch(
            environment->world_size,
            [watcher = job.state_->watcher.get()](std::uint32_t rank) {
                watcher->process_ending(rank);
            });
        !watched) {
        return watched.error();  // The job leaves as it goes out of scope.
    }
    if (Status opened = job.open_rank_runtime(options, *runtime_options); !opened) {
        return opened.error();  // The job leaves as it goes out of scope.
    }
    return job;
}

Status Job::open_rank_runtime(const JoinOptions& options, const RuntimeOptions& runtime_options) {
    const auto deadline = std::chrono::steady_clock::now() + options.timeout;
    std::shared_ptr<JobMember> member;
    std::uint32_t devices = 0;
    std::string backend = "none";
    if (options.open_runtime) {
        Result<std::shared_ptr<Runtime>> runtime = open_runtime(runtime_options);
        if (!runtime) {
            return runtime.error();
        }
        state_->runtime = std::move(*runtime);
        backend = state_->runtime->backend();
        devices = static_cast<std::uint32_t>(state_->runtime->device_count());
        if (const BackendEntry* entry = find_backend(backend); entry && entry->job_member) {
            member = entry->job_member(state_->runtime);
        }
    }
    const std::uint64_t runtime_id = state_->runtime ? state_->runtime->runtime_id() : 0;
    if (Status started =
            state_->peers->start(*state_->watcher, std::move(member), runtime_id, devices, backend);
        !started) {
        return started;
    }
    return state_->peers->meet(deadline);
}

Job::Job(std::unique_ptr<State> state) : state_(std::move(state)) {}
Job::Job(Job&& other) noexcept = default;

Job& Job::operator=(Job&& other) noexcept {
    if (this != &other) {
        leave();
        state_ = std::move(other.state_);
    }
    return *this;
}

Job::~Job() { leave(); }

void Job::leave() {
    if (!state_ || state_->left) {
        return;
    }
    state_->left = true;
    // The runtime's work drains while the other ranks still answer, so what it did to their
    // memory is on their claims; a wait on another rank's event that is not reached would hold
    // it up to its limit, and ends now instead (TornDown).
    state_->peers->end_event_waits();
    if (state_->runtime) {
        (void)state_->runtime->sync_all();  // Failures are on the claims; leaving goes on.
    }
    state_->runtime.reset();
    state_->life->stop();  // A rank that leaves is no death: its word is cleared first.
    state_->watcher->say_goodbye();
    state_->peers->stop();
    state_->seat->release();
    state_->folder->release_and_remove_if_last();
}

void Job::abandon() {
    if (!state_ || state_->left) {
        return;
    }
    state_->left = true;
    // This rank's own threads stop asking first; then the connections end without a word, and
    // only then does the runtime go, as a dying process's memory outlives its sockets for no
    // one: what a peer asks from here on finds the rank lost. The board says "abandoned" before
    // the connections end, so that no peer takes its end for a lost connection.
    state_->peers->stop();
    state_->peers->depart({job_detail::Departure::Kind::abandoned, 0});
    state_->life->stop();
    state_->watcher->hang_up();
    state_->runtime.reset();
    state_->seat->release();
    state_->folder->release_and_remove_if_last();
}

std::uint32_t Job::rank() const { return state_->environment.rank; }
std::uint32_t Job::world_size() const { return state_->environment.world_size; }
std::uint32_t Job::local_rank() const { return state_->environment.local_rank; }
const std::string& Job::job_id() const { return state_->environment.job_id; }
const std::string& Job::folder() const { return state_->environment.job_folder; }
JobLauncher Job::launcher() const { return state_->environment.launcher; }
const std::shared_ptr<Runtime>& Job::runtime() const { return state_->runtime; }

Status Job::cut_connection(std::uint32_t rank) {
    if (!state_ || state_->left) {
        return Error::invalid_argument(
            "cut_connection: this rank left the job (or was abandoned): it has no connection "
            "to cut");
    }
    if (Status cut = state_->watcher->cut(rank); !cut) {
        return Error(cut.error().kind(), "cut_connection: " + cut.error().message());
    }
    return {};
}

Status Job::refuse_if_cut_off(std::string_view call) const {
    std::optional<Error> refused = state_->peers->refusal(call);
    return refused ? Status(std::move(*refused)) : Status{};
}

bool Job::rank_alive(std::uint32_t rank) const {
    if (rank == state_->environment.rank) {
        return !state_->left && !state_->watcher->cut_off_from();
    }
    return rank < state_->environment.world_size && state_->watcher->alive(rank);
}

std::vector<RankLoss> Job::lost_ranks() const { return state_->watcher->losses(); }

std::optional<RankLoss> Job::wait_for_loss(std::chrono::milliseconds timeout) const {
    return state_->watcher->wait(std::nullopt, timeout);
}

std::optional<RankLoss> Job::wait_for_loss_of(std::uint32_t rank,
                                              std::chrono::milliseconds timeout) const {
    if (rank >= state_->environment.world_size || rank == state_->environment.rank) {
        return std::nullopt;
    }
    return state_->watcher->wait(rank, timeout);
}

Status Job::on_rank_lost(std::function<void(const RankLoss&)> callback) {
    if (!callback) {
        return Error::invalid_argument("on_rank_lost was given an empty callback");
    }
    if (!state_->watcher->subscribe(std::move(callback))) {
        return Error::invalid_argument("on_rank_lost keeps at most " +
                                       std::to_string(loss_callbacks_max) +
                                       " callbacks; this would be one more");
    }
    return {};
}

Result<ServiceId> Job::service(std::uint32_t rank, std::uint32_t device) const {
    return state_->peers->service(rank, device);
}

Status Job::publish(std::string_view name, const Handle& handle) {
    return state_->peers->publish(name, handle);
}

Status Job::withdraw(std::string_view name) { return state_->peers->withdraw(name); }

Status Job::publish(std::string_view name, const Event& event) {
    return state_->peers->publish(name, event);
}

Result<Event> Job::lookup_event(std::string_view name, std::chrono::milliseconds timeout) {
    return state_->peers->lookup_event(name, timeout);
}

Result<Handle> Job::lookup(std::string_view name, std::chrono::milliseconds timeout) {
    return state_->peers->lookup(name, timeout);
}

Status Job::barrier(std::chrono::milliseconds timeout) {
    if (Status refused = refuse_if_cut_off("barrier"); !refused) {
        return refused;  // Settles nothing: a refused call changes nothing.
    }
    // Met whatever the settling found: a rank that skipped a barrier would leave the others
    // waiting at it.
    const Status settled = state_->runtime ? state_->runtime->sync_all() : Status{};
    const Status met = state_->peers->barrier(timeout);
    return settled ? met : settled;
}

Result<std::vector<std::string>> Job::exchange(std::string_view value,
                                               std::chrono::milliseconds timeout) {
    return state_->peers->exchange(value, timeout);
}

std::uint64_t Job::next_collective() { return ++state_->collectives; }

std::uint64_t Job::next_transfer(std::uint32_t rank, bool sending) {
    return ++state_->transfers[{rank, sending}];
}

namespace {

/// What a rank votes after `step`, once its work is settled: the step's failure, the settling's,
/// or the loss of `device` (settling passes over a lost device, but the step's work on it did
/// not happen); none for success.
std::optional<Error> vote_after(const Status& step, Runtime& runtime, const Client& device) {
    const Status settled = runtime.sync_all();  // What the step enqueued, before any reads.
    const std::optional<Error> lost = device.lost();
    return !step ? std::optional(step.error()) : !settled ? std::optional(settled.error()) : lost;
}

}  // namespace

Status Job::agree(const Status& step, const Client& device, std::chrono::milliseconds timeout) {
    return state_->peers->barrier(timeout, vote_after(step, *state_->runtime, device));
}

Status Job::agree_with(std::uint32_t rank, bool sending, const Status& step, const Client& device,
                       std::chrono::milliseconds timeout) {
    return state_->peers->meet_pair(rank, sending, timeout,
                                    vote_after(step, *state_->runtime, device));
}

}  // namespace tandem
