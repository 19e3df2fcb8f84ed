#pragma once

// The one path from work to claims, which every backend calls. A backend enqueues each unit of
// work (`Work`) when the host enqueues it, asks `examine` before it runs the work, fills in the
// report when the work ends, and calls `settle_ready`. The pipeline settles work in enqueue
// order, so outcomes follow program order whatever order failures happen to be learned in: a
// consumer of failed work is skipped (C9, C13) even when it ran before the failure was known, and
// a rewrite enqueued before that failure was known still repairs the bytes (C3, P5).
//
// Settling in enqueue order costs nothing extra on the GPU backend, which learns outcomes in
// batches at a sync; on the simulator a finished work waits for the older ones. What it buys is
// one decision per rule, in one place: the refusal (C10), the input check at settlement (C9, C13,
// P3, D1), the failure (C8, P4), the release (C3), and the capture window (C14).
//
// Work that conflicts with no older unsettled work (neither writes an allocation the other reads
// or writes: detail/footprint.hpp) settles to the same claims in either order. `settle_known`
// settles such work past older work whose outcome is not known yet, and `for_each_needed` names
// the unsettled work a read or a sync must learn the outcome of: so a read waits for the writers
// of its bytes and what they depend on, not for every device's work.
//
// `examine` answers before work runs whether its inputs are already known to end up claimed, by
// walking, for each input byte, the newest unsettled writer enqueued before it: skipped work must
// not write (its bytes would otherwise show through a later write that covers them only in part).

#include "tandem/backend/detail/footprint.hpp"
#include "tandem/backend/detail/id_table.hpp"
#include "tandem/backend/work.hpp"

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace tandem {

/// Where the work one pipeline handed to another (`SettlePipeline::absorb`) stands in its new
/// pipeline.
struct MovedSequences {
    /// Each moved work's sequence in the old pipeline and in the new one, oldest first.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> sequences;
    /// The new pipeline's next sequence once the work moved.
    std::uint64_t next = 0;

    /// The sequence in the new pipeline that stands for `before` of the old one: every moved work
    /// below `before` there is below it here, and none at or above it.
    [[nodiscard]] std::uint64_t translate(std::uint64_t before) const {
        for (const auto& [old_sequence, new_sequence] : sequences) {
            if (old_sequence >= before) {
                return new_sequence;
            }
        }
        return next;
    }
};

/// The one path from work to claims that every backend calls: it records each unit of work in
/// enqueue order, says before work runs whether its inputs will be claimed, and settles work in
/// enqueue order into claims and releases, by the same rules on every backend.
class SettlePipeline {
public:
    /// What is known of a work's inputs before it runs.
    enum class Inputs : std::uint8_t {
        /// No byte is claimed and no unsettled work writes any: final.
        Clean,
        /// Some byte will be claimed when the work settles, whatever else happens: it must not run.
        Claimed,
        /// Depends on producers whose outcome is not known yet; each was visited.
        Pending,
        /// The walk stopped (too many writers, or the visitor could not follow a producer): settle
        /// what is pending and ask again.
        Undecided,
    };

    /// A pipeline for the devices of `devices`, which must outlive it.
    explicit SettlePipeline(DeviceDirectory& devices) : devices_(devices) {}
    SettlePipeline(const SettlePipeline&) = delete;
    SettlePipeline& operator=(const SettlePipeline&) = delete;

    /// Why a launch of `request`, recorded as `work`, is refused before it runs (C10), if it is:
    /// its kernel is not `registered` on the backend (no kernel of its name, or one with no build
    /// for the backend: `request.entry` tells which), its configuration is past a GPU's limits,
    /// or it binds shared memory whose owner did not grant the launching device access (P7). The
    /// same on every backend; the common launch passes with two tests.
    [[nodiscard]] std::optional<Error> refusal(const Work& work, const LaunchRequest& request,
                                               bool registered) const {
        if (registered && launchable(request.config) && !binds_peer_memory(work)) {
            return std::nullopt;
        }
        return refusal_slow(work, request, registered);
    }

    /// Appends to `work` (run by `work.device`) what `request` reads and writes, each on the
    /// device that owns it: `WrongService` for a buffer of another device that was not shared
    /// (P1), `PeerUnreachable` for shared memory of no device of this runtime.
    Status add_targets(const LaunchRequest& request, Work& work) const;

    /// Admits a launch that runs something, recorded as `work`, on a stream whose open window is
    /// `window` (null when none): a refused launch (C10, `refusal`) claims only its declared
    /// outputs, and dooms the window it was enqueued in without being recorded; any other is
    /// recorded in the window (C14).
    void admit_launch(Work& work, const LaunchRequest& request, bool registered,
                      const std::shared_ptr<CaptureWindow>& window) const {
        work.refused_ = refusal(work, request, registered);
        work.window = window;
        if (work.refused_) [[unlikely]] {
            work.inputs.clear();
        } else if (window) {
            if (window->room_for(1)) {
                window->launches.push_back(request);
                window->launches.back().injected.reset();  // A replay draws its own.
            } else {
                work.replayed = false;  // Not recorded: it writes nothing a replay writes.
            }
        }
    }

    /// Records a copy run by `work.device` from `source` (a buffer of that device, or shared memory
    /// of a peer) into `target`, on a stream whose open window is `window` (null when none): its
    /// label, what it reads and what it writes, and its window (`place_copy`).
    /// `PeerUnreachable` for shared memory of no device of this runtime.
    Status add_copy_targets(const KernelResource& source, const BufferBinding& target, Work& work,
                            const std::shared_ptr<CaptureWindow>& window) const;
    /// Places a copy, recorded as `work`, in the window of its stream (null when none). A copy
    /// runs when it is enqueued and a replay does not run it again, so the window records nothing
    /// of it; but a copy is a scope (C8), so one that fails or is skipped dooms the window (C14).
    static void place_copy(Work& work, const std::shared_ptr<CaptureWindow>& window) {
        work.window = window;
        work.replayed = false;
    }

    /// Records a replay of `graph` run by `work.device` on a stream whose open window is `window`
    /// (null when none): its label, and that it writes exactly the graph's write set without
    /// checking inputs (C14: the caller wrote fresh inputs first). A window records the graph's
    /// launches as its own, so that replaying the window replays them too, and takes the replay's
    /// write set when it settles clean; a failed replay dooms it.
    void add_replay_targets(const CaptureGraph& graph, Work& work,
                            const std::shared_ptr<CaptureWindow>& window) const;

    /// Appends `work` in enqueue order. It is settled once its report is in (or it was refused)
    /// and every older work is settled. Every unit of work a backend enqueues comes through here,
    /// so this is where it is counted against an injected loss (`DeviceDirectory::count_work`):
    /// a loss due at it loses the device first, and it fails with the loss (D1).
    void enqueue(std::shared_ptr<Work> work);

    /// The scope of work a backend runs at once, on the calling thread, once it is enqueued. On a
    /// lost device (`lost`) it fails with the loss (D1); work refused before it ran (C10) does
    /// not run; work an input of which will be claimed is skipped (C9: skipped work writes
    /// nothing); otherwise `run()` runs it and returns how it ended (C3, C8). Whatever `run`
    /// throws fails the work with `TornDown` naming what was thrown (C8), so no way out of the
    /// backend's part leaves the work to settle otherwise than by the rules.
    template <typename Run>
    void run_now(Work& work, const std::optional<Error>& lost, Run&& run) const;

    /// What is known of `consumer`'s inputs (enqueued or about to be); `Claimed` too when an
    /// input or an output is of a lost device (D1). `visit(producer)` is called
    /// for each unsettled producer whose outcome decides a byte and is not known yet, newest
    /// first; it returns false when the caller cannot follow that producer. At most
    /// `writers_max` writers are walked per input.
    template <typename Visit>
    Inputs examine(const Work& consumer, Visit&& visit,
                   std::size_t writers_max = std::numeric_limits<std::size_t>::max()) const;

    /// Settles work from the oldest while its outcome is known; `recycle` receives each settled
    /// record.
    template <typename Recycle>
    void settle_ready(Recycle&& recycle);
    /// Settles what is ready, dropping each settled record.
    void settle_ready() {
        settle_ready([](std::shared_ptr<Work>&&) {});
    }
    /// Settles, oldest first, every work whose outcome is known and that conflicts with no older
    /// unsettled work, including work past older work whose outcome is not known yet; `recycle`
    /// receives each settled record. The claims are those of settling in enqueue order.
    template <typename Recycle>
    void settle_known(Recycle&& recycle);
    /// `settle_known`, dropping each settled record.
    void settle_known() {
        settle_known([](std::shared_ptr<Work>&&) {});
    }
    /// Calls `visit(work)`, newest first, for every unsettled work that must settle before the
    /// allocations of `reads` are final, or before the works `seed` picks can settle: those works
    /// themselves, and every older one that conflicts with one visited, transitively. Once every
    /// visited work's outcome is known, `settle_known` settles them all.
    template <typename Seed, typename Visit>
    void for_each_needed(std::span<const ClaimKey> reads, Seed&& seed, Visit&& visit);

    /// Whether unsettled work writes any byte of `keys` of `owner`.
    [[nodiscard]] bool writes_unsettled(ServiceId owner, std::span<const ClaimKey> keys) const;
    /// Whether work that `device` runs is unsettled.
    [[nodiscard]] bool unsettled_on(std::uint32_t device) const;
    /// Whether no unsettled work writes any byte of `keys` of `owner`, once what can be is
    /// settled (`settle_known`): what a read waits for.
    bool final_for(ServiceId owner, std::span<const ClaimKey> keys) {
        if (!writes_unsettled(owner, keys)) {
            return true;
        }
        settle_known();
        return !writes_unsettled(owner, keys);
    }
    /// Whether no unsettled work satisfies `picked`, once what can be is settled: what a sync of
    /// one stream waits for.
    template <typename Picked>
    bool settled_where(Picked&& picked) {
        const auto any = [&] {
            bool found = false;
            for_each_pending([&](const Work& work) { found = found || picked(work); });
            return found;
        };
        if (!any()) {
            return true;
        }
        settle_known();
        return !any();
    }
    /// Whether no work that `device` runs is unsettled, once what can be is settled: what a
    /// sync of the device waits for.
    bool settled_on(std::uint32_t device) {
        if (!unsettled_on(device)) {
            return true;
        }
        settle_known();
        return !unsettled_on(device);
    }
    /// A description of the first broken invariant of the pipeline's own books (the ring and the
    /// counts agree, writer lists are in enqueue order and hold only unsettled work), or none.
    [[nodiscard]] std::optional<std::string> check_invariants() const;
    /// Whether the pipeline checks its books after every settle: its own invariants and the
    /// claims of every device the settled work touched, aborting with the first broken one and
    /// `context` (a seed, say) on standard error. On by default in builds without `NDEBUG` (the
    /// sanitizer builds); the simulator's deterministic mode turns it on in every build. A book
    /// is walked every pass while it is small, and once it is not, after as many passes as it
    /// holds entries, so that checking costs a pass about one entry's check.
    void check_after_settles(bool on, std::string context = {}) {
        checks_ = on;
        check_context_ = std::move(context);
    }
    /// Whether the pipeline checks its books after settles (`check_after_settles`).
    [[nodiscard]] bool checks() const { return checks_; }
    /// Whether no work is unsettled.
    [[nodiscard]] bool empty() const { return unsettled_ == 0; }
    /// How many works are unsettled.
    [[nodiscard]] std::size_t size() const { return unsettled_; }
    /// The `sequence` the next enqueued work gets: every work enqueued so far has a lower one.
    [[nodiscard]] std::uint64_t next_sequence() const { return next_sequence_; }
    /// Takes `other`'s unsettled work, in its order, after this pipeline's, leaving `other` empty:
    /// a join of device groups, whose work touches none of the same memory, so that any
    /// interleaving settles to the same claims. Each moved work gets a sequence here; the result
    /// says which, for what a backend kept of `other`'s sequences.
    MovedSequences absorb(SettlePipeline& other);
    /// Calls `visit(work)` for the unsettled work, oldest first, for a backend to fill in reports.
    template <typename Visit>
    void for_each_pending(Visit&& visit) const {
        for (std::size_t index = 0; index < count_; ++index) {
            if (const std::shared_ptr<Work>& slot = ring_[(head_ + index) & (ring_.size() - 1)]) {
                visit(*slot);
            }
        }
    }
    /// The oldest unsettled work, or null.
    [[nodiscard]] const Work* oldest() const {
        return unsettled_ == 0 ? nullptr : ring_[head_].get();  // The front is never settled.
    }

private:
    [[nodiscard]] bool binds_peer_memory(const Work& work) const {
        const ServiceId runner = devices_.service_of(work.device);
        for (const std::vector<Target>* targets : {&work.inputs, &work.outputs}) {
            for (const Target& target : *targets) {
                if (target.owner != runner) {
                    return true;
                }
            }
        }
        return false;
    }
    [[nodiscard]] std::optional<Error> refusal_slow(const Work& work, const LaunchRequest& request,
                                                    bool registered) const;
    /// Whether an output of `work` is memory of another device that is lost (D1); out of line,
    /// since only a peer kernel writing shared memory asks.
    [[nodiscard]] bool writes_lost_memory(const Work& work) const;

    /// The unsettled writers of one allocation, in enqueue order; the first `settled` are
    /// settled.
    struct Writers {
        std::vector<Work*> works;
        std::size_t settled = 0;
    };
    /// Emptied writer lists kept for their storage: a list comes and goes with the work on its
    /// allocation, and must not cost a heap round trip each time (C12).
    static constexpr std::size_t spare_lists_max = 256;

    void settle(Work& work);
    void unindex(const Work& work);
    /// Appends `work` in enqueue order, counting nothing: `enqueue` once counted, or work
    /// another pipeline hands over (`absorb`).
    void place(std::shared_ptr<Work> work);
    /// Empties the pipeline without settling anything: its unsettled work, oldest first.
    std::vector<std::shared_ptr<Work>> release_unsettled();
    /// Doubles the ring, keeping the order.
    void grow();
    /// Removes `range` from `uncovered_`; whether any byte of it was there.
    bool cover(ByteRange range) const;
    /// Whether the unsettled `writer` will leave the bytes it writes claimed.
    static bool leaves_claimed(const Work& writer) {
        return writer.refused_.has_value() || writer.report_ == Work::Report::Failed ||
               writer.report_ == Work::Report::NotRun;
    }
    /// Whether the outcome of unsettled `work` is known, so that it can settle.
    static bool known(const Work& work) {
        return work.report_ != Work::Report::Pending || work.refused_.has_value();
    }
    /// Settles `work`, found at `slot` of the ring, and empties the slot.
    template <typename Recycle>
    void settle_slot(std::shared_ptr<Work>& slot, Recycle& recycle) {
        settle(*slot);
        unindex(*slot);
        if (checks_) [[unlikely]] {
            note_settled(*slot);
        }
        --unsettled_;
        std::shared_ptr<Work> settled = std::move(slot);  // Empties the slot whatever `recycle` does.
        recycle(std::move(settled));
    }
    /// Whether the outcome of the unsettled `writer` is not known yet.
    static bool undecided(const Work& writer) {
        return writer.report_ == Work::Report::Pending ||
               (writer.report_ == Work::Report::Landed && writer.provisional_);
    }
    /// Whether the claims now on the bytes of `input` that no unsettled writer covers
    /// (`uncovered_`) make it claimed.
    [[nodiscard]] bool uncovered_claimed(const Target& input) const;
    /// Keeps what the check of the books after a settle needs of `settled`: the owners whose
    /// claims it changed, and its label.
    void note_settled(const Work& settled);
    /// Checks the books once the pipeline is consistent again after settles
    /// (`check_after_settles`); aborts if one is broken.
    void check_books();

    DeviceDirectory& devices_;
#ifdef NDEBUG
    bool checks_ = false;
#else
    bool checks_ = true;
#endif
    std::string check_context_;
    /// Passes of checks so far (one after each run of settles), and the pass at which each book
    /// was last walked: the pipeline's own, and each owner's claims (by service).
    std::uint64_t check_passes_ = 0;
    std::uint64_t pipeline_checked_at_ = 0;
    std::vector<std::pair<ServiceId, std::uint64_t>> claims_checked_at_;
    /// Owners whose claims settles changed since the books were last checked, and the label of
    /// the newest work settled.
    std::vector<ServiceId> changed_owners_;
    std::string last_settled_;
    /// The unsettled work in enqueue order: a ring of a power-of-two size that grows when full
    /// and is never shrunk, so that settling and enqueueing touch no heap once it is warm. Work
    /// settled past older work (`settle_known`) leaves an empty slot until the front passes it.
    std::vector<std::shared_ptr<Work>> ring_;
    std::size_t head_ = 0;
    /// Slots in use, from `head_`, empty ones included.
    std::size_t count_ = 0;
    /// Works unsettled.
    std::size_t unsettled_ = 0;
    /// Scratch of `settle_known` and `for_each_needed`, kept for its storage.
    detail::Footprint footprint_;
    /// Scratch of `for_each_needed`: the works picked so far, newest first.
    std::vector<const Work*> picked_;
    /// The unsettled work writing each allocation, by `MemoryId`.
    detail::IdTable<Writers> writers_;
    std::vector<std::size_t> unsettled_per_device_;
    std::uint64_t next_sequence_ = 1;
    /// Scratch of `examine`, kept for its storage.
    mutable std::vector<ByteRange> uncovered_;
    mutable std::vector<ClaimKey> uncovered_keys_;
    std::vector<std::vector<Work*>> spare_lists_;
};

template <typename Visit>
SettlePipeline::Inputs SettlePipeline::examine(const Work& consumer, Visit&& visit,
                                               std::size_t writers_max) const {
    const std::uint64_t before =
        consumer.sequence_ != 0 ? consumer.sequence_ : std::numeric_limits<std::uint64_t>::max();
    if (consumer.after_failed_wait_) [[unlikely]] {
        return Inputs::Claimed;  // Ordered after what never happened: it must not run.
    }
    if (consumer.writes_other_devices_ && writes_lost_memory(consumer)) [[unlikely]] {
        return Inputs::Claimed;  // D1: no one binds a lost device's memory, to write it either.
    }
    bool pending = false;
    for (const Target& input : consumer.inputs) {
        if (devices_.lost(input.owner)) {
            return Inputs::Claimed;  // D1: the owner's memory reads as failed.
        }
        if (input.key.range.empty()) {
            continue;  // An empty range never fails (C6).
        }
        uncovered_.assign(1, input.key.range);
        if (const Writers* list = writers_.find(input.key.memory.value)) {
            std::size_t walked = 0;
            for (std::size_t index = list->works.size();
                 index-- > list->settled && !uncovered_.empty();) {
                const Work& writer = *list->works[index];
                if (writer.sequence_ >= before) {
                    continue;  // Later in program order: it cannot feed the consumer.
                }
                if (++walked > writers_max) {
                    return Inputs::Undecided;
                }
                bool decides = false;
                for (const Target& output : writer.outputs) {
                    if (output.owner == input.owner && output.key.memory == input.key.memory) {
                        decides = cover(output.key.range) || decides;
                    }
                }
                if (!decides) {
                    continue;
                }
                if (leaves_claimed(writer)) {
                    return Inputs::Claimed;
                }
                if (undecided(writer)) {
                    pending = true;
                    if (!visit(writer)) {
                        return Inputs::Undecided;
                    }
                }
            }
        }
        if (!uncovered_.empty() && uncovered_claimed(input)) {
            return Inputs::Claimed;
        }
    }
    return pending ? Inputs::Pending : Inputs::Clean;
}

template <typename Recycle>
void SettlePipeline::settle_ready(Recycle&& recycle) {
    while (count_ != 0) {
        std::shared_ptr<Work>& front = ring_[head_];
        if (front) {
            if (!known(*front)) {
                break;
            }
            settle_slot(front, recycle);
        }
        head_ = (head_ + 1) & (ring_.size() - 1);
        --count_;
    }
    if (checks_ && !last_settled_.empty()) [[unlikely]] {
        check_books();
    }
}

template <typename Recycle>
void SettlePipeline::settle_known(Recycle&& recycle) {
    settle_ready(recycle);
    if (unsettled_ == 0) {
        return;
    }
    // The footprint of the older work left unsettled: a later work that conflicts with none of
    // it settles now, to the claims it would have met in enqueue order.
    footprint_.clear();
    for (std::size_t index = 0; index < count_; ++index) {
        std::shared_ptr<Work>& slot = ring_[(head_ + index) & (ring_.size() - 1)];
        if (!slot) {
            continue;
        }
        if (known(*slot) && !footprint_.conflicts(*slot)) {
            settle_slot(slot, recycle);
        } else {
            footprint_.add(*slot);
        }
    }
    settle_ready(recycle);  // Passes the emptied slots at the front.
}

template <typename Seed, typename Visit>
void SettlePipeline::for_each_needed(std::span<const ClaimKey> reads, Seed&& seed, Visit&& visit) {
    footprint_.clear();
    footprint_.add_reads(reads);
    // The footprint is asked only about work the seed does not pick, so the works picked are
    // added to it only once such work comes: a sync of one device's work, all seeded, builds
    // none. `picked_[0, added)` are in it.
    picked_.clear();
    std::size_t added = 0;
    for (std::size_t index = count_; index-- > 0;) {
        const std::shared_ptr<Work>& slot = ring_[(head_ + index) & (ring_.size() - 1)];
        if (!slot) {
            continue;
        }
        if (seed(*slot)) {
            picked_.push_back(slot.get());
            visit(*slot);
            continue;
        }
        for (; added < picked_.size(); ++added) {
            footprint_.add(*picked_[added]);
        }
        if (footprint_.conflicts(*slot)) {
            footprint_.add(*slot);
            picked_.push_back(slot.get());
            ++added;
            visit(*slot);
        }
    }
}

template <typename Run>
void SettlePipeline::run_now(Work& work, const std::optional<Error>& lost, Run&& run) const {
    if (lost) {
        work.ran(*lost);  // D1.
        return;
    }
    if (work.refused_) {
        return;  // C10: settled as refused.
    }
    if (examine(work, [](const Work&) { return true; }) == Inputs::Claimed) {
        work.did_not_run();  // C9: skipped work writes nothing.
        return;
    }
    try {
        work.ran(run());
    } catch (...) {
        work.ran(Error::thrown_by("'" + work.label + "'"));  // C8: a throw is a TornDown.
    }
}

}  // namespace tandem
