#pragma once

// Two devices that share memory, an owner and a peer, as the peer rules (P1 to P7, D1, C6) need
// them, in three kinds: two devices of one runtime; the devices of two ranks of a job simulated
// in this process (`Job::join_in_process`); and the devices of two ranks that are processes of
// their own, each joining with `Job::join()` from the environment a launcher gives it
// (rank_processes.hpp). A rule's test body is written once and runs on every kind
// (peer_pair_test.cpp), so a rule that holds across the devices of a runtime but not across
// ranks, or across ranks of one process but not of two, fails by name.
//
// A rule is a script of two roles. Its steps are parts of one role (`as_owner`, `as_peer` in the
// fixture: code that uses that role's device) and meetings of the two, the only way anything
// crosses from one role to the other: memory shared (`share`), an event passed (`pass_event`),
// every work so far settled (`settle`), a point both reach before either goes on (`meet`), and
// the owner's end (`end_owner`). Where one process holds both
// devices, one thread plays both roles in the script's order. Where each rank is a process, each
// plays its own role and passes over the other's parts: a value one role made exists only in its
// process (a `std::optional` in the script, empty in the other), and script order is only each
// process's own, so a rule that needs one role's step before the other's says so by a meeting,
// as a program of ranks must. This is why the script has explicit meetings rather than one
// thread reaching into both devices: it is the only form that runs unchanged as two processes.
//
// What differs between the kinds is only how a meeting is held: memory crosses by
// `share_with_peers` or by `Job::publish` and `Job::lookup`; an event as it is, or published and
// looked up; work is settled by syncing the devices or by a barrier of both ranks; a meeting is
// program order on one thread, or an exchange of the ranks (`Job::exchange`, which settles
// nothing); and the owner ends with its device lost, its rank abandoned (as its process's death
// would end it), or its process killed by SIGKILL. In a job of one process a rank's work runs when
// that rank syncs or waits, and another rank's questions are answered by its watcher thread, so one
// test thread drives both ranks; only a barrier runs on a thread per rank.

#include "rank_processes.hpp"
#include "support.hpp"

#include "tandem/job.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace tandem::conformance {

/// The two roles of a peer rule: the device whose memory is shared, and the device that
/// reaches it.
enum class Role : std::uint8_t { owner, peer };

/// An owner device and a peer device, and the meetings of the peer rules' scripts.
class PeerPair {
public:
    virtual ~PeerPair() = default;

    /// Whether this process plays `role`: both roles where one process holds both devices.
    [[nodiscard]] virtual bool plays(Role role) const = 0;
    /// The device whose memory is shared; only where this process plays the owner.
    Client& owner() { return *owner_; }
    /// The device that reaches the owner's memory; only where this process plays the peer.
    Client& peer() { return *peer_; }
    /// The owner's service, known to both roles: what the peer's reports name.
    [[nodiscard]] ServiceId owner_service() const { return owner_service_; }
    /// The peer's service, known to both roles: what the owner grants and its reports name.
    [[nodiscard]] ServiceId peer_service() const { return peer_service_; }

    /// Shares `memory`, an allocation (or a slice) of the owner, present where this process
    /// plays the owner; returns the peer's handle of it where this process plays the peer.
    /// Grants nothing, and orders nothing across the devices of a runtime (P6: a script that
    /// needs the owner's writes first syncs the owner); a rank's publication waits for them, as
    /// `Job::publish` says.
    virtual std::optional<Handle> share(const std::optional<Handle>& memory) = 0;
    /// Passes `event`, recorded by the owner (present where this process plays it); returns the
    /// peer's event to wait on (`Client::wait_event`) where this process plays the peer.
    virtual std::optional<Event> pass_event(const std::optional<Event>& event) = 0;
    /// Runs every work both roles enqueued so far, with what it did to the owner's memory on the
    /// owner's claims, before either role goes on. The error of a device that cannot settle (a
    /// lost owner) is returned, and both roles still go on.
    virtual Status settle() = 0;
    /// Holds each role here until the other has come too: what either did before comes before
    /// what the other does after. Runs nothing, unlike `settle`: a failure that work enqueued
    /// before holds is still unknown after it.
    virtual void meet() = 0;
    /// Ends the owner for good: its device can run nothing more (D1). Returns where this process
    /// plays the peer once the peer knows; the owner's part of the script ends here.
    virtual void end_owner() = 0;
    /// What a report of the owner's end says, besides naming the owner's device.
    [[nodiscard]] virtual std::string end_words() const = 0;
    /// The last meeting, as the script ends: the owner's memory stays until the peer is done
    /// with it. `failed`: this process's part failed, and it leaves at once rather than meet,
    /// so the other role learns it as a loss instead of waiting for it.
    virtual void finish(bool failed) { (void)failed; }

protected:
    std::optional<Client> owner_;
    std::optional<Client> peer_;
    ServiceId owner_service_{};
    ServiceId peer_service_{};
};

/// What another rank published under `name` (memory, or an event), looked up by `job`: none,
/// and a failure of the test, when it cannot be.
template <typename Value>
std::optional<Value> looked_up(Job& job, const std::string& name) {
    Result<Value> found = [&] {
        if constexpr (std::is_same_v<Value, Event>) {
            return job.lookup_event(name, tandem::testing::guard_timeout);
        } else {
            return job.lookup(name, tandem::testing::guard_timeout);
        }
    }();
    EXPECT_TRUE(found) << found.error().report();
    return found ? std::optional<Value>(*found) : std::nullopt;
}

/// Two devices of one runtime of `Backend`.
template <typename Backend>
class DevicesOfOneRuntime final : public PeerPair {
public:
    /// The pair, or null with `why_not` set.
    static std::unique_ptr<PeerPair> make(std::string& why_not) {
        Made made = Backend::make(2);
        if (!made.runtime) {
            why_not = made.why_not;
            return nullptr;
        }
        auto pair = std::make_unique<DevicesOfOneRuntime>();
        pair->runtime_ = made.runtime;
        pair->owner_.emplace(made.runtime->client(0));
        pair->peer_.emplace(made.runtime->client(1));
        pair->owner_service_ = pair->owner_->service();
        pair->peer_service_ = pair->peer_->service();
        return pair;
    }

    [[nodiscard]] bool plays(Role) const override { return true; }
    std::optional<Handle> share(const std::optional<Handle>& memory) override {
        Result<Handle> shared = owner_->share_with_peers(*memory);
        EXPECT_TRUE(shared) << shared.error().report();
        return shared ? std::optional(*shared) : std::nullopt;
    }
    std::optional<Event> pass_event(const std::optional<Event>& event) override { return event; }
    Status settle() override {
        const Status peer_settled = peer_->sync();
        const Status owner_settled = owner_->sync();
        return peer_settled ? owner_settled : peer_settled;
    }
    void meet() override {}  // One thread: the script's order is the order.
    void end_owner() override { EXPECT_TRUE(owner_->inject(DeviceLossFault{0})); }
    [[nodiscard]] std::string end_words() const override { return "injected"; }

private:
    std::shared_ptr<Runtime> runtime_;
};

/// Rank 0 (the owner) and rank 1 (the peer) of a job of two simulated in this process, each
/// with one simulated device scheduled as `scheduler` says ("deterministic" or "threads").
class RanksOfOneJob final : public PeerPair {
public:
    /// The pair, or null with `why_not` set.
    static std::unique_ptr<PeerPair> make(std::string& why_not, const std::string& scheduler) {
        Result<std::vector<Job>> joined =
            Job::join_in_process(2, tandem::testing::sim_ranks_in_one_process(scheduler));
        if (!joined) {
            why_not = joined.error().report();
            return nullptr;
        }
        auto pair = std::make_unique<RanksOfOneJob>();
        pair->ranks_ = std::move(*joined);
        pair->owner_.emplace(pair->ranks_[0].runtime()->client(0));
        pair->peer_.emplace(pair->ranks_[1].runtime()->client(0));
        pair->owner_service_ = pair->owner_->service();
        pair->peer_service_ = pair->peer_->service();
        return pair;
    }
    ~RanksOfOneJob() override {
        owner_.reset();
        peer_.reset();
        ranks_.clear();
    }

    [[nodiscard]] bool plays(Role) const override { return true; }
    std::optional<Handle> share(const std::optional<Handle>& memory) override {
        return cross("shared", *memory);
    }
    std::optional<Event> pass_event(const std::optional<Event>& event) override {
        return cross("event", *event);
    }
    Status settle() override {
        auto owner_side = std::async(std::launch::async, [this] { return ranks_[0].barrier(); });
        const Status peer_side = ranks_[1].barrier();
        const Status owner_passed = owner_side.get();
        return peer_side ? owner_passed : peer_side;
    }
    void meet() override {}  // One thread: the script's order is the order.
    void end_owner() override {
        ranks_[0].abandon();
        EXPECT_TRUE(ranks_[1].wait_for_loss_of(0, tandem::testing::guard_timeout).has_value());
    }
    [[nodiscard]] std::string end_words() const override { return "was abandoned"; }

private:
    /// Rank 0 publishes `value` under a fresh name of `kind`, and rank 1 looks it up.
    template <typename Value>
    std::optional<Value> cross(const std::string& kind, const Value& value) {
        const std::string name = kind + "-" + std::to_string(++names_);
        const Status published = ranks_[0].publish(name, value);
        EXPECT_TRUE(published) << published.error().report();
        return looked_up<Value>(ranks_[1], name);
    }

    std::vector<Job> ranks_;
    std::uint64_t names_ = 0;
};

/// This process's rank of a job of two whose ranks are processes (rank_processes.hpp): rank 0
/// plays the owner and rank 1 the peer, each with the runtime its environment names. Both run
/// the same script, so both number the names of their meetings alike.
class RankOfProcesses final : public PeerPair {
public:
    /// This process's rank, joined from the environment as a program under `tandem launch`
    /// joins; or null with `why_not` set.
    static std::unique_ptr<PeerPair> make(std::string& why_not) {
        Result<Job> joined = Job::join();
        if (!joined) {
            why_not = joined.error().report();
            return nullptr;
        }
        if (joined->world_size() != 2) {
            why_not = "a pair is a job of two ranks, not " + std::to_string(joined->world_size());
            return nullptr;
        }
        auto pair = std::make_unique<RankOfProcesses>();
        pair->job_.emplace(std::move(*joined));
        pair->role_ = pair->job_->rank() == 0 ? Role::owner : Role::peer;
        std::optional<Client>& mine = pair->role_ == Role::owner ? pair->owner_ : pair->peer_;
        mine.emplace(pair->job_->runtime()->client(0));
        pair->owner_service_ = *pair->job_->service(0);
        pair->peer_service_ = *pair->job_->service(1);
        return pair;
    }
    ~RankOfProcesses() override {
        owner_.reset();
        peer_.reset();
        job_.reset();
    }

    [[nodiscard]] bool plays(Role role) const override { return role == role_; }
    std::optional<Handle> share(const std::optional<Handle>& memory) override {
        return cross("shared", memory);
    }
    std::optional<Event> pass_event(const std::optional<Event>& event) override {
        return cross("event", event);
    }
    Status settle() override { return job_->barrier(); }
    // An exchange of nothing: a meeting of the ranks that settles no work.
    void meet() override {
        const Result<std::vector<std::string>> met = job_->exchange("");
        EXPECT_TRUE(met) << met.error().report();
    }
    // Both meet first, so the peer holds every handle it looked up before the owner dies.
    void end_owner() override {
        meet();
        if (role_ == Role::owner) {
            if (!::testing::Test::HasFailure()) {
                end_this_rank_by_sigkill();
            }
            return;  // A rank that failed leaves instead: the peer sees a loss of another kind.
        }
        owner_ended_ = true;
        const std::optional<RankLoss> loss =
            job_->wait_for_loss_of(0, tandem::testing::guard_timeout);
        ASSERT_TRUE(loss.has_value()) << "rank 0 never ended";
        EXPECT_EQ(loss->how, RankEnd::killed) << loss->describe();
        EXPECT_EQ(loss->code, SIGKILL) << loss->describe();
    }
    [[nodiscard]] std::string end_words() const override { return "was killed by signal 9"; }
    void finish(bool failed) override {
        if (!failed && !owner_ended_) {
            // Its outcome is not the rule's: a rank that failed has said so on its own.
            (void)job_->exchange("");
        }
    }

private:
    /// The owner publishes `value` (its own) under a fresh name of `kind`, which the peer looks
    /// up: the peer's value where this process plays it.
    template <typename Value>
    std::optional<Value> cross(const std::string& kind, const std::optional<Value>& value) {
        const std::string name = kind + "-" + std::to_string(++names_);
        if (role_ == Role::peer) {
            return looked_up<Value>(*job_, name);
        }
        const Status published = job_->publish(name, *value);
        EXPECT_TRUE(published) << published.error().report();
        return std::nullopt;
    }

    std::optional<Job> job_;
    Role role_ = Role::owner;
    bool owner_ended_ = false;
    std::uint64_t names_ = 0;
};

/// The kinds of pair the peer rules run on, each a type with a name, a `make`, whether one
/// process holds both devices (`one_process`), and whether a kernel that traps on one device
/// leaves the other working (`traps_apart`: not two GPUs of one process). A kind of processes
/// also says whether its ranks can run here (`why_not_here`): the test's own process asks before
/// it starts them.
template <typename Backend>
struct OneRuntimeOf {
    static constexpr bool one_process = true;
    static constexpr bool traps_apart = !Backend::traps_lose_the_process;
    static std::string name() { return std::string("one_runtime_") + Backend::name; }
    static std::unique_ptr<PeerPair> make(std::string& why_not) {
        return DevicesOfOneRuntime<Backend>::make(why_not);
    }
};

#ifdef TANDEM_HAVE_SIM
/// Two ranks of a job in this process, on the simulator's deterministic scheduler.
struct JobOfSim {
    static constexpr bool one_process = true;
    static constexpr bool traps_apart = true;
    static std::string name() { return "job_sim"; }
    static std::unique_ptr<PeerPair> make(std::string& why_not) {
        return RanksOfOneJob::make(why_not, "deterministic");
    }
};
/// Two ranks of a job in this process, on the simulator's worker threads.
struct JobOfSimThreads {
    static constexpr bool one_process = true;
    static constexpr bool traps_apart = true;
    static std::string name() { return "job_sim_threads"; }
    static std::unique_ptr<PeerPair> make(std::string& why_not) {
        return RanksOfOneJob::make(why_not, "threads");
    }
};
/// Two ranks of a job, each a process of its own with one simulated device scheduled as
/// `Scheduler::name` says. The test's own process starts them (`variables` is their runtime's
/// environment); `make` runs in each of them.
template <typename Scheduler>
struct ProcessesOfSim {
    static constexpr bool one_process = false;
    static constexpr bool traps_apart = true;
    static std::string name() { return std::string("processes_sim") + Scheduler::suffix; }
    static std::vector<std::string> variables() {
        return {"TANDEM_BACKEND=sim", "TANDEM_DEVICES=1",
                std::string("TANDEM_SCHEDULER=") + Scheduler::name};
    }
    static std::optional<std::string> why_not_here() { return std::nullopt; }
    static std::unique_ptr<PeerPair> make(std::string& why_not) {
        return RankOfProcesses::make(why_not);
    }
};
/// The simulator's deterministic scheduler, in a kind's name as nothing.
struct DeterministicRanks {
    static constexpr const char* name = "deterministic";
    static constexpr const char* suffix = "";
};
/// The simulator's worker threads, in a kind's name as "_threads".
struct ThreadedRanks {
    static constexpr const char* name = "threads";
    static constexpr const char* suffix = "_threads";
};
#endif

#ifdef TANDEM_HAVE_CUDA
/// Two ranks of a job, each a process of its own with one device on GPU 0, as a machine of one GPU
/// has them (each rank's memory crosses to the other exported, a region once). Where no GPU is
/// usable, the test's own process skips, naming why, and starts no rank.
struct ProcessesOfCuda {
    static constexpr bool one_process = false;
    static constexpr bool traps_apart = true;
    static std::string name() { return "processes_cuda"; }
    static std::vector<std::string> variables() {
        return {"TANDEM_BACKEND=cuda", "TANDEM_DEVICES=1", "TANDEM_GPUS=0"};
    }
    static std::optional<std::string> why_not_here() {
        const cuda::GpuReport gpus = cuda::probe_gpus();
        if (!gpus.problem.empty()) {
            return "no usable GPU here: " + gpus.problem;
        }
        return std::nullopt;
    }
    static std::unique_ptr<PeerPair> make(std::string& why_not) {
        return RankOfProcesses::make(why_not);
    }
};
#endif

using PeerPairKinds =
    ::testing::Types<OneRuntimeOf<ReferenceBackend>
#ifdef TANDEM_HAVE_SIM
                     ,
                     OneRuntimeOf<SimBackend>, OneRuntimeOf<SimThreadsBackend>, JobOfSim,
                     JobOfSimThreads, ProcessesOfSim<DeterministicRanks>,
                     ProcessesOfSim<ThreadedRanks>
#endif
#ifdef TANDEM_HAVE_CUDA
                     ,
                     OneRuntimeOf<CudaBackend>, ProcessesOfCuda
#endif
                     >;
/// The kinds where one process holds both devices, for what only such a process can do.
using OneProcessPeerPairKinds =
    ::testing::Types<OneRuntimeOf<ReferenceBackend>
#ifdef TANDEM_HAVE_SIM
                     ,
                     OneRuntimeOf<SimBackend>, OneRuntimeOf<SimThreadsBackend>, JobOfSim,
                     JobOfSimThreads
#endif
#ifdef TANDEM_HAVE_CUDA
                     ,
                     OneRuntimeOf<CudaBackend>
#endif
                     >;

/// Names the typed instantiations after their kind: `PeerRules/job_sim.<test>`.
struct PeerPairNames {
    template <typename Kind>
    static std::string GetName(int) {
        return Kind::name();
    }
};

}  // namespace tandem::conformance
