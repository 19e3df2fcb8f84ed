#pragma once

// A unit of work as every backend records it: what it reads and writes, on which device and
// stream, what the host knew when it was enqueued, and what the backend reported when it ended.
// The settle pipeline (`settle_pipeline.hpp`) turns that into claims, in enqueue order, by the
// same rules on every backend; a backend only runs the work and fills in `report`.
//
// A backend derives its own record from `Work` (what it needs to run it: a payload, a status
// word) and hands the pipeline a shared pointer; the pipeline keeps it until it is settled.

#include "tandem/backend/outcome.hpp"
#include "tandem/backend/launch_request.hpp"
#include "tandem/core/capture_graph.hpp"
#include "tandem/core/error.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tandem {

/// A recording window of one stream (C14): the launches a replay runs, and what it releases.
struct CaptureWindow {
    /// Launches a window records at most: a window past it is doomed (a replay of it could not
    /// be built whole), and its launch runs without being recorded.
    static constexpr std::size_t max_launches = capture_launches_max;

    /// The launches recorded, in enqueue order: what a replay runs.
    std::vector<LaunchRequest> launches;
    /// The outputs of the window's settled, clean launches: exactly what a replay writes. Sorted
    /// and deduplicated by claim key (`close`) when the window ends.
    std::vector<ClaimKey> write_set;
    /// Why the window is refused when it ends: the first of its work that failed or was skipped.
    std::optional<Error> doomed;
    /// Work of the window not settled yet; the window can end once this is zero.
    std::size_t unsettled = 0;

    /// Records `count` more launches, or dooms the window when they would take it past
    /// `max_launches`; whether to record them.
    bool room_for(std::size_t count);
    /// Sorts and deduplicates the write set, by claim key and nothing coarser: once, when the
    /// window ends, rather than a search for every output as work settles.
    void close();
};

/// What an asynchronous read (`Client::read_async`) learns when it settles: whether the bytes
/// it copied were written at its place in program order (C6). The settle pipeline decides it,
/// when the read settles, after every older writer of its bytes and before every later one.
struct ReadBack {
    /// The device that owns the bytes.
    ServiceId owner;
    /// The bytes read.
    ClaimKey key;
    /// Set when the read settles: success, or why its bytes cannot be used.
    std::optional<Status> outcome;
};

/// One unit of work as a backend records it for the settle pipeline: what it reads and writes,
/// where it runs, what was known when it was enqueued and how it ended. A backend derives its own
/// record from it, fills in what the work is, and reports how it ended through `ran`,
/// `did_not_run` and `refuse`, once; what that decides (claims, releases, skips, windows) is
/// the settle pipeline's alone, which is why the outcome is private to it.
class Work {
public:
    /// What the backend learned when the work ended.
    enum class Report : std::uint8_t {
        /// Not ended, or ended without the host knowing how yet.
        Pending,
        /// Ran and wrote its outputs.
        Landed,
        /// Ran and failed with `failure`; its outputs are unwritten.
        Failed,
        /// Did not run (a producer of its inputs failed or was skipped): it wrote nothing.
        NotRun,
    };

    virtual ~Work() = default;

    /// The kernel's name, or what the work is ("host write", "copy").
    std::string label;
    /// The device that runs it, as the runtime's `DeviceDirectory` numbers them.
    std::uint32_t device = 0;
    /// The stream of `device` it is enqueued on.
    StreamId stream;
    /// The bytes it reads: checked before it runs (C9, P3) and when it settles (C13).
    std::vector<Target> inputs;
    /// The bytes it writes: released when it lands (C3), claimed when it fails (C8) or is
    /// skipped (C9).
    std::vector<Target> outputs;
    /// False for a replay, which does not check inputs (C14).
    bool checks_inputs = true;
    /// The recording window it was enqueued in, if any.
    std::shared_ptr<CaptureWindow> window;
    /// Whether a replay of `window` runs it, so that settling clean adds its outputs to the
    /// window's write set. False for a copy: it runs when enqueued and is no part of a replay,
    /// but failing or being skipped still dooms the window, as any scope does (C8, C14).
    bool replayed = true;
    /// An asynchronous read: what it learns when it settles.
    std::shared_ptr<ReadBack> read_back;

    // The backend's reports. The first report stands; a later one changes nothing.

    /// The work ran, and `outcome` is how it ended: success lands its outputs (C3); an error
    /// (the kernel's code, a sticky fault, a throw) fails them (C8, D1).
    void ran(const Status& outcome) {
        if (report_ != Report::Pending) {
            return;
        }
        if (outcome) {
            report_ = Report::Landed;
        } else {
            report_ = Report::Failed;
            failure_ = outcome.error();
        }
    }
    /// The work did not run: where it runs, a producer of its inputs was found failed or
    /// skipped (C9). It wrote nothing.
    void did_not_run() {
        if (report_ == Report::Pending) {
            report_ = Report::NotRun;
        }
    }
    /// Its device was lost before the host learned how it ended: whatever it reported, it failed
    /// with `loss` (D1: the host cannot tell what a lost device did).
    void lost_with(Error loss) {
        report_ = Report::Failed;
        failure_ = std::move(loss);
    }
    /// Known before it ran: refused (C10), or the device would not take it. Its outputs take
    /// `error` and its inputs are not checked.
    void refuse(Error error) {
        if (!refused_) {
            refused_ = std::move(error);
        }
    }
    /// Whether it runs (or ran) before every producer of its inputs is known to have landed: a
    /// consumer cannot take its bytes as clean until it settles.
    void set_provisional(bool provisional) { provisional_ = provisional; }
    /// It is ordered after a wait that failed with `error`: the event waited on will never come
    /// (its owner, a device of another process, was lost, or did not reach it in time). The work
    /// does not run, and is skipped with `error` as a lost producer's consumer is (C9, D1):
    /// whatever else its inputs say, since what it was ordered after never happened.
    void follow_failed_wait(Error error) {
        if (!after_failed_wait_) {
            after_failed_wait_ = std::move(error);
        }
    }

    /// How the work ended, as the backend reported it; `Pending` until then.
    [[nodiscard]] Report reported() const { return report_; }
    /// With `Report::Failed`: why.
    [[nodiscard]] const std::optional<Error>& failure() const { return failure_; }
    /// Why it was refused before it ran, if it was.
    [[nodiscard]] const std::optional<Error>& refusal() const { return refused_; }
    /// Whether it ran before every producer of its inputs was known to have landed.
    [[nodiscard]] bool provisional() const { return provisional_; }
    /// Why a wait it is ordered after failed (`follow_failed_wait`), if one did.
    [[nodiscard]] const std::optional<Error>& after_failed_wait() const {
        return after_failed_wait_;
    }
    /// The enqueue order across every device of its pipeline, once enqueued.
    [[nodiscard]] std::uint64_t sequence() const { return sequence_; }
    /// Whether the pipeline settled it.
    [[nodiscard]] bool settled() const { return settled_; }
    /// After settlement: whether its outputs were claimed (failed, skipped or refused).
    [[nodiscard]] bool failed() const { return failed_; }

    /// Called once the work is settled: release what kept its memory reserved.
    virtual void on_settled() {}
    /// Empties the record for reuse, keeping the storage of its vectors.
    void reset_work();

private:
    friend class SettlePipeline;

    std::optional<Error> refused_;
    Report report_ = Report::Pending;
    std::optional<Error> failure_;
    std::optional<Error> after_failed_wait_;
    bool provisional_ = false;
    std::uint64_t sequence_ = 0;
    bool settled_ = false;
    bool failed_ = false;
    /// Whether an output is another device's memory (a peer kernel writing shared memory): only
    /// then are the outputs' owners asked whether they are lost (D1), so the common launch pays
    /// one test for it.
    bool writes_other_devices_ = false;
};

}  // namespace tandem
