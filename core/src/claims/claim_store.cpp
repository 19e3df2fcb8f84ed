#include "tandem/backend/claim_store.hpp"

#include <algorithm>
#include <cassert>
#include <utility>

namespace tandem {

// ---------------------------------------------------------------- ClaimStore

ClaimStore::ClaimStore(ServiceId device) : device_(device) {}

void ClaimStore::recount(MemoryId memory, const TouchedFailures& touched, FailureId except) {
    auto found = allocations_.find(memory);
    // Past `touched_scanned` the list may repeat a failure, which must be dropped once.
    std::vector<FailureId> many;
    if (touched.size() > touched_scanned) {
        for (std::size_t index = 0; index < touched.size(); ++index) {
            many.push_back(touched[index]);
        }
        std::sort(many.begin(), many.end());
        many.erase(std::unique(many.begin(), many.end()), many.end());
    }
    const std::size_t count = many.empty() ? touched.size() : many.size();
    for (std::size_t index = 0; index < count; ++index) {
        const FailureId failure = many.empty() ? touched[index] : many[index];
        if (failure != except && (found == allocations_.end() || !found->second.carries(failure))) {
            graph_.drop(failure);
        }
    }
    if (found != allocations_.end() && found->second.empty()) {
        allocations_.erase(found);
        claimed_allocations_.store(allocations_.size(), std::memory_order_release);
        mark_published(memory);
    }
}

void ClaimStore::mark_published(MemoryId memory) {
    if (published_.empty()) [[likely]] {
        return;
    }
    if (auto word = published_.find(memory); word != published_.end()) {
        word->second->store(allocations_.contains(memory) ? 1 : 0, std::memory_order_release);
    }
}

bool ClaimStore::publish(MemoryId memory, std::atomic<std::uint64_t>& word) {
    std::lock_guard lock(mutex_);
    if (published_.size() >= max_published && !published_.contains(memory)) {
        return false;
    }
    published_[memory] = &word;
    mark_published(memory);
    return true;
}

void ClaimStore::unpublish(MemoryId memory) {
    std::lock_guard lock(mutex_);
    published_.erase(memory);
}

void ClaimStore::claim_locked(const ClaimKey& key, FailureId failure) {
    assert(graph_.contains(failure) && "claims name live failures");
    if (key.range.empty()) {
        return;
    }
    const auto [entry, inserted] = allocations_.try_emplace(key.memory);
    AllocationClaims& claims = entry->second;
    claimed_allocations_.store(allocations_.size(), std::memory_order_release);
    if (inserted) {
        mark_published(key.memory);
    }
    const bool carried_before = claims.carries(failure);
    TouchedFailures touched = claims.claim(key.range, failure);
    if (!carried_before) {
        graph_.carry(failure);
    }
    recount(key.memory, touched, failure);
}

void ClaimStore::release_locked(const ClaimKey& key) {
    auto found = allocations_.find(key.memory);
    if (found == allocations_.end()) {
        return;
    }
    TouchedFailures touched = found->second.release(key.range);
    recount(key.memory, touched, FailureId{});
}

FailureId ClaimStore::fail_locked(std::span<const ClaimKey> writes, Error error) {
    // An Unwritten error is not a root: it carries one (work that could not write because bytes
    // it needed were claimed, on another device or in another process). The new failure carries
    // that root and its hops, oldest first, so a read reports one chain back to the root (not a
    // report inside a report).
    std::vector<SkipRecord> hops;
    if (const auto* carried = error.details_as<UnwrittenDetails>();
        carried != nullptr && carried->root != nullptr) {
        hops = carried->chain;
        Error root = *carried->root;
        error = std::move(root);
    }
    FailureId failure = graph_.create(std::move(error));
    for (const ClaimKey& key : writes) {
        claim_locked(key, failure);
    }
    for (auto hop = hops.rbegin(); hop != hops.rend(); ++hop) {
        graph_.add_skip(failure, std::move(*hop));
    }
    graph_.discard_if_uncarried(failure);
    return failure;
}

void ClaimStore::claim(const ClaimKey& key, FailureId failure) {
    std::lock_guard lock(mutex_);
    claim_locked(key, failure);
}

void ClaimStore::release(const ClaimKey& key) {
    if (nothing_claimed()) {
        return;
    }
    std::lock_guard lock(mutex_);
    release_locked(key);
}

FailureId ClaimStore::fail(std::span<const ClaimKey> writes, Error error) {
    std::lock_guard lock(mutex_);
    return fail_locked(writes, std::move(error));
}

FailureId ClaimStore::create_failure(Error error) {
    std::lock_guard lock(mutex_);
    return graph_.create(std::move(error));
}

void ClaimStore::forget(MemoryId memory) {
    // The common case on a free: nothing is claimed anywhere, so skip the lock and the hash. No
    // claim on `memory` can appear meanwhile: no work holds a released allocation, and the release
    // was ordered after every claim made while work held it.
    if (nothing_claimed()) {
        return;
    }
    std::lock_guard lock(mutex_);
    auto found = allocations_.find(memory);
    if (found == allocations_.end()) {
        return;
    }
    TouchedFailures touched;
    for (const auto& [failure, claims] : found->second.carried()) {
        touched.push_back(failure);  // Each once: a pass over the failures, not over every pair.
    }
    allocations_.erase(found);
    claimed_allocations_.store(allocations_.size(), std::memory_order_release);
    mark_published(memory);
    recount(memory, touched, FailureId{});
}

std::optional<std::pair<ClaimKey, FailureId>> ClaimStore::first_claimed_locked(
    std::span<const ClaimKey> inputs) const {
    for (const ClaimKey& key : inputs) {
        auto found = allocations_.find(key.memory);
        if (found == allocations_.end()) {
            continue;
        }
        if (std::optional<FailureId> failure = found->second.first_claimant(key.range)) {
            return std::pair{key, *failure};
        }
    }
    return std::nullopt;
}

std::optional<std::pair<ClaimKey, FailureId>> ClaimStore::first_claimed(
    std::span<const ClaimKey> inputs) const {
    if (nothing_claimed()) {
        return std::nullopt;
    }
    std::lock_guard lock(mutex_);
    return first_claimed_locked(inputs);
}

Status ClaimStore::check(std::span<const ClaimKey> reads) const {
    if (nothing_claimed()) {
        return {};
    }
    std::lock_guard lock(mutex_);
    std::vector<FailureId> found;
    std::vector<ClaimKey> found_in;
    for (const ClaimKey& key : reads) {
        auto claims = allocations_.find(key.memory);
        if (claims == allocations_.end()) {
            continue;
        }
        claims->second.claimants(key.range, found);
        found_in.resize(found.size(), key);
    }
    if (found.empty()) {
        return {};
    }
    std::vector<Error> errors;
    errors.reserve(found.size());
    for (std::size_t index = 0; index < found.size(); ++index) {
        errors.push_back(graph_.report(found[index], found_in[index]));
    }
    return Error::several(std::move(errors));
}

void ClaimStore::add_skip(FailureId failure, SkipRecord record) {
    std::lock_guard lock(mutex_);
    graph_.add_skip(failure, std::move(record));
}

void ClaimStore::claim_skipped(std::span<const ClaimKey> keys, std::optional<FailureId> join,
                               const Error& error, SkipRecord skip) {
    std::lock_guard lock(mutex_);
    FailureId failure;
    if (join && graph_.contains(*join)) {
        failure = *join;
        for (const ClaimKey& key : keys) {
            claim_locked(key, failure);
        }
    } else {
        // A hop from another device: `error` is the report of what the skipped work needed, and
        // the new failure carries its root and hops (`fail_locked`).
        failure = fail_locked(keys, error);
    }
    if (graph_.contains(failure)) {
        graph_.add_skip(failure, std::move(skip));
    }
}

std::optional<Error> ClaimStore::report_if_alive(FailureId failure, const ClaimKey& read) const {
    std::lock_guard lock(mutex_);
    if (!graph_.contains(failure)) {
        return std::nullopt;
    }
    return graph_.report(failure, read);
}

Error ClaimStore::report(FailureId failure, const ClaimKey& read) const {
    std::lock_guard lock(mutex_);
    return graph_.report(failure, read);
}

std::size_t ClaimStore::failure_count() const {
    std::lock_guard lock(mutex_);
    return graph_.size();
}

bool ClaimStore::failure_alive(FailureId failure) const {
    std::lock_guard lock(mutex_);
    return graph_.contains(failure);
}

std::uint64_t ClaimStore::allocations_carrying(FailureId failure) const {
    std::lock_guard lock(mutex_);
    return graph_.allocations(failure);
}

std::vector<Claim> ClaimStore::claims_of(MemoryId memory) const {
    std::lock_guard lock(mutex_);
    auto found = allocations_.find(memory);
    if (found == allocations_.end()) {
        return {};
    }
    auto claims = found->second.claims();
    return {claims.begin(), claims.end()};
}

std::size_t ClaimStore::claimed_allocation_count() const {
    std::lock_guard lock(mutex_);
    return allocations_.size();
}

bool ClaimStore::drained() const {
    std::lock_guard lock(mutex_);
    return allocations_.empty() && graph_.size() == 0;
}

std::optional<std::string> ClaimStore::check_invariants() const {
    std::lock_guard lock(mutex_);
    // Each allocation's own check proves its `carried()` list names each failure of its claims
    // once, so the failures carried, one entry per carrying allocation, sorted, count the
    // allocations each failure claims bytes of: no node per claim, one sort.
    std::vector<FailureId> carriers;
    for (const auto& [memory, claims] : allocations_) {
        if (claims.empty()) {
            return to_string(memory) + " is kept with no claims";
        }
        if (std::optional<std::string> broken = claims.check_invariants()) {
            return to_string(memory) + ": " + *broken;
        }
        for (const auto& [failure, count] : claims.carried()) {
            carriers.push_back(failure);
        }
    }
    std::sort(carriers.begin(), carriers.end());
    std::size_t distinct = 0;
    for (auto run = carriers.begin(); run != carriers.end(); ++distinct) {
        const FailureId failure = *run;
        const auto next = std::find_if(run, carriers.end(),
                                       [&](FailureId other) { return other != failure; });
        const auto count = static_cast<std::uint64_t>(next - run);
        if (!graph_.contains(failure)) {
            return "a claim names " + to_string(failure) + ", which the graph does not hold";
        }
        if (graph_.allocations(failure) != count) {
            return to_string(failure) + " counts " + std::to_string(graph_.allocations(failure)) +
                   " carrying allocations, but " + std::to_string(count) + " carry it";
        }
        run = next;
    }
    if (distinct != graph_.size()) {
        return "the graph holds " + std::to_string(graph_.size()) + " failures but only " +
               std::to_string(distinct) + " are carried";
    }
    return std::nullopt;
}

}  // namespace tandem
