#pragma once

// One device's claims and failure graph: which bytes failed or skipped work should have written,
// and why. The settle pipeline (`settle_pipeline.hpp`) is what changes them, by rules C2 to C9;
// the store keeps C1 and C4 and answers reads (C6, C7).
//
// Every operation takes the store's lock, so streams and workers of a device may share one store.
// The success path, one release of one range per written buffer, allocates nothing on the heap
// (C12): releases of unclaimed or exactly claimed ranges erase in place, and failures are only
// named (and their errors built) when something really failed.

#include "tandem/backend/claims.hpp"
#include "tandem/backend/failure_graph.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/ids.hpp"
#include "tandem/core/result.hpp"

#include <atomic>
#include <cstddef>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tandem {

/// One device's claims and failure graph, behind one lock: which bytes failed or skipped work
/// should have written, and why. The settle pipeline changes them; the store keeps C1 and C4 and
/// answers reads (C6, C7).
class ClaimStore {
public:
    /// An empty store for the device `device`.
    explicit ClaimStore(ServiceId device);

    /// The device whose bytes the store claims.
    [[nodiscard]] ServiceId device() const { return device_; }

    /// Makes `failure` the only claimant of `key`'s bytes (C2). `failure` must be live.
    void claim(const ClaimKey& key, FailureId failure);
    /// Releases every claim on exactly `key`'s bytes (C3).
    void release(const ClaimKey& key);
    /// Whether no allocation carries a claim: the common case, in which a read, a release or a
    /// free has nothing to find, and skips the lock. The answer holds at the moment of the load,
    /// as if the lock had been taken then: the count changes only under the lock, after the map.
    [[nodiscard]] bool nothing_claimed() const {
        return claimed_allocations_.load(std::memory_order_acquire) == 0;
    }
    /// One new failure carrying `error` claims every key; an `Unwritten` error gives it its root
    /// and hops instead (work that could not write because bytes it needed were claimed
    /// elsewhere is a hop of that failure, not a root of its own). A failure that claims no byte
    /// is dropped at once (C4); its id is returned either way.
    FailureId fail(std::span<const ClaimKey> writes, Error error);
    /// The allocation was freed, rebound or reused: it sheds its claims (C5).
    void forget(MemoryId memory);

    /// Fails iff some byte of some key is claimed, naming every distinct failure once, in order
    /// of discovery (C6). Changes nothing. Empty keys never fail.
    [[nodiscard]] Status check(std::span<const ClaimKey> reads) const;
    /// The first claimed input, in declared order, and the failure claiming it.
    [[nodiscard]] std::optional<std::pair<ClaimKey, FailureId>> first_claimed(
        std::span<const ClaimKey> inputs) const;

    /// Records that work was skipped because of `failure` (a cross-device hop, say).
    void add_skip(FailureId failure, SkipRecord record);
    /// C9 in one step, under one lock: `keys` take `join` while it is alive, otherwise one new
    /// failure carrying `error`; the failure records `skip` while it claims anything.
    void claim_skipped(std::span<const ClaimKey> keys, std::optional<FailureId> join,
                       const Error& error, SkipRecord skip);
    /// A new failure, carried by nothing yet; claim with it or it is dropped at the next claim.
    FailureId create_failure(Error error);

    /// The `Unwritten` report of `failure` for a read of `read` (C7).
    [[nodiscard]] Error report(FailureId failure, const ClaimKey& read) const;
    /// `report`, while `failure` is alive.
    [[nodiscard]] std::optional<Error> report_if_alive(FailureId failure,
                                                       const ClaimKey& read) const;
    /// How many failures are live.
    [[nodiscard]] std::size_t failure_count() const;
    /// Whether `failure` is live: some allocation still carries it.
    [[nodiscard]] bool failure_alive(FailureId failure) const;
    /// How many allocations carry `failure` (0 once it is gone).
    [[nodiscard]] std::uint64_t allocations_carrying(FailureId failure) const;
    /// The claims on `memory`, sorted by offset (none for an allocation without claims).
    [[nodiscard]] std::vector<Claim> claims_of(MemoryId memory) const;
    /// How many allocations carry at least one claim.
    [[nodiscard]] std::size_t claimed_allocation_count() const;
    /// No claim and no failure left.
    [[nodiscard]] bool drained() const;
    /// A description of the first broken invariant (C1 per allocation, C4 counts), or none.
    [[nodiscard]] std::optional<std::string> check_invariants() const;

    /// Keeps `word` saying whether some byte of `memory` is claimed (1) or none is (0), from now
    /// until `unpublish`: set at once, then whenever the allocation gains its first claim or
    /// sheds its last. The word may live in memory other processes map (a job's peer ranks read
    /// it before they bind the allocation, with no message on the success path). At most
    /// `max_published` allocations; false past it.
    bool publish(MemoryId memory, std::atomic<std::uint64_t>& word);
    /// Stops keeping the word of `memory`.
    void unpublish(MemoryId memory);
    /// The most allocations whose words a store keeps.
    static constexpr std::size_t max_published = 4096;

private:
    void claim_locked(const ClaimKey& key, FailureId failure);
    void release_locked(const ClaimKey& key);
    void recount(MemoryId memory, const TouchedFailures& touched, FailureId except);
    FailureId fail_locked(std::span<const ClaimKey> writes, Error error);
    std::optional<std::pair<ClaimKey, FailureId>> first_claimed_locked(
        std::span<const ClaimKey> inputs) const;

    /// Sets the published word of `memory`, if it has one, to whether it carries claims.
    void mark_published(MemoryId memory);

    mutable std::mutex mutex_;
    ServiceId device_;
    /// The words `publish` keeps, by allocation: empty but in a job.
    std::unordered_map<MemoryId, std::atomic<std::uint64_t>*> published_;
    std::unordered_map<MemoryId, AllocationClaims> allocations_;
    /// `allocations_.size()`, readable without the lock.
    std::atomic<std::size_t> claimed_allocations_{0};
    FailureGraph graph_;
};

}  // namespace tandem
