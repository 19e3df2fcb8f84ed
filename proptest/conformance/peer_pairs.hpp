#pragma once

// Two devices that share memory, an owner and a peer, as the peer rules (P1 to P7, D1, C6) need
// them: two devices of one runtime, or the devices of two ranks of a job simulated in this
// process (`Job::join_in_process`). A rule's test body is written once against `PeerPair` and
// runs on every kind of pair (peer_pair_test.cpp), so a rule that holds across the devices of a
// runtime but not across ranks (or the other way) fails by name.
//
// What differs between the kinds is only how the two devices meet: how memory crosses
// (`share_with_peers`, or `Job::publish` and `Job::lookup`), how an event crosses (as it is, or
// published and looked up), how the owner's later work is ordered after the peer's (the peer
// settles its work, or both ranks pass a barrier), and how the owner ends (its device lost, or
// its rank abandoned, as its process's death would end it). A rank's work runs when that rank
// syncs or waits, and another rank's questions are answered by its watcher thread, so one test
// thread drives both ranks; only a barrier runs on a thread per rank.

#include "support.hpp"

#include "tandem/job.hpp"

#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tandem::conformance {

/// An owner device and a peer device, and the ways the peer rules make them meet.
class PeerPair {
public:
    virtual ~PeerPair() = default;

    /// The device whose memory is shared.
    Client& owner() { return *owner_; }
    /// The device that reaches the owner's memory.
    Client& peer() { return *peer_; }

    /// The peer's handle of `memory`, an allocation (or a slice) of the owner. Grants nothing,
    /// and orders nothing across the devices of a runtime (P6: a test that needs the owner's
    /// writes first syncs the owner); a rank's publication waits for them, as `Job::publish`
    /// says.
    virtual Result<Handle> share(const Handle& memory) = 0;
    /// The peer's handle of `event`, an event the owner recorded, to wait on
    /// (`Client::wait_event`).
    virtual Result<Event> pass_event(const Event& event) = 0;
    /// Orders what the owner does next after every work the peer enqueued so far: that work has
    /// run, and what it did to the owner's memory is on the owner's claims.
    virtual Status order_owner_after_peer() = 0;
    /// Ends the owner for good: its device can run nothing more (D1). Returns once the peer
    /// knows.
    virtual void end_owner() = 0;
    /// What a report of the owner's end says, besides naming the owner's device.
    [[nodiscard]] virtual std::string end_words() const = 0;

protected:
    std::optional<Client> owner_;
    std::optional<Client> peer_;
};

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
        return pair;
    }

    Result<Handle> share(const Handle& memory) override { return owner_->share_with_peers(memory); }
    Result<Event> pass_event(const Event& event) override { return event; }
    Status order_owner_after_peer() override { return peer_->sync(); }
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
        JoinOptions options;
        options.runtime.from_environment = false;
        options.runtime.backend = "sim";
        options.runtime.devices = 1;
        options.runtime.scheduler = scheduler;
        options.timeout = std::chrono::seconds(60);
        Result<std::vector<Job>> joined = Job::join_in_process(2, options);
        if (!joined) {
            why_not = joined.error().report();
            return nullptr;
        }
        auto pair = std::make_unique<RanksOfOneJob>();
        pair->ranks_ = std::move(*joined);
        pair->owner_.emplace(pair->ranks_[0].runtime()->client(0));
        pair->peer_.emplace(pair->ranks_[1].runtime()->client(0));
        return pair;
    }
    ~RanksOfOneJob() override {
        owner_.reset();
        peer_.reset();
        ranks_.clear();
    }

    Result<Handle> share(const Handle& memory) override {
        const std::string name = "shared-" + std::to_string(++names_);
        if (Status published = ranks_[0].publish(name, memory); !published) {
            return published.error();
        }
        return ranks_[1].lookup(name);
    }
    Result<Event> pass_event(const Event& event) override {
        const std::string name = "event-" + std::to_string(++names_);
        if (Status published = ranks_[0].publish(name, event); !published) {
            return published.error();
        }
        return ranks_[1].lookup_event(name);
    }
    Status order_owner_after_peer() override {
        auto owner_side = std::async(std::launch::async, [this] { return ranks_[0].barrier(); });
        const Status peer_side = ranks_[1].barrier();
        const Status owner_passed = owner_side.get();
        return peer_side ? owner_passed : peer_side;
    }
    void end_owner() override {
        ranks_[0].abandon();
        EXPECT_TRUE(ranks_[1].wait_for_loss_of(0, std::chrono::seconds(60)).has_value());
    }
    [[nodiscard]] std::string end_words() const override { return "was abandoned"; }

private:
    std::vector<Job> ranks_;
    std::uint64_t names_ = 0;
};

/// The kinds of pair the peer rules run on, each a type with a name and a `make`.
template <typename Backend>
struct OneRuntimeOf {
    static std::string name() { return std::string("one_runtime_") + Backend::name; }
    static std::unique_ptr<PeerPair> make(std::string& why_not) {
        return DevicesOfOneRuntime<Backend>::make(why_not);
    }
};

#ifdef TANDEM_HAVE_SIM
/// Two ranks of a job in this process, on the simulator's deterministic scheduler.
struct JobOfSim {
    static std::string name() { return "job_sim"; }
    static std::unique_ptr<PeerPair> make(std::string& why_not) {
        return RanksOfOneJob::make(why_not, "deterministic");
    }
};
/// Two ranks of a job in this process, on the simulator's worker threads.
struct JobOfSimThreads {
    static std::string name() { return "job_sim_threads"; }
    static std::unique_ptr<PeerPair> make(std::string& why_not) {
        return RanksOfOneJob::make(why_not, "threads");
    }
};
#endif

using PeerPairKinds = ::testing::Types<OneRuntimeOf<ReferenceBackend>
#ifdef TANDEM_HAVE_SIM
                                       ,
                                       OneRuntimeOf<SimBackend>, OneRuntimeOf<SimThreadsBackend>,
                                       JobOfSim, JobOfSimThreads
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
