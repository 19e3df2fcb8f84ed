#pragma once

// One device's failure graph: every live failure, the error at its root, how many allocations
// carry it and the work that was skipped because of it.
//
// A failure lives exactly as long as some allocation carries it (rule C4): the claim store counts
// carriers and erases a failure the moment its count reaches zero, so the graph is empty whenever
// no claim is left. Skip records are bounded (C7): a long chain keeps its newest records and counts
// the dropped ones, and the root error is kept apart from them so it is never dropped.

#include "tandem/core/error.hpp"
#include "tandem/core/ids.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <unordered_map>

namespace tandem {

/// One device's live failures: the root error of each, how many allocations carry it and the work
/// skipped because of it. A failure is erased when the last allocation carrying it drops it (C4),
/// so the graph is empty whenever no claim is left.
class FailureGraph {
public:
    /// The newest skip records kept per failure.
    static constexpr std::size_t max_skip_records = 16;

    /// A new failure carrying `error`, carried by no allocation yet. Ids are never reused.
    FailureId create(Error error);
    /// One more allocation carries `failure`.
    void carry(FailureId failure);
    /// One allocation fewer carries `failure`; erases it when none is left.
    void drop(FailureId failure);
    /// Erases `failure` if no allocation carries it (a failure whose write set was empty).
    void discard_if_uncarried(FailureId failure);
    /// Work was skipped because of `failure`.
    void add_skip(FailureId failure, SkipRecord record);

    /// Whether `failure` is live.
    [[nodiscard]] bool contains(FailureId failure) const;
    /// The number of live failures.
    [[nodiscard]] std::size_t size() const { return nodes_.size(); }
    /// How many allocations carry `failure` (0 for a failure that is not live).
    [[nodiscard]] std::uint64_t allocations(FailureId failure) const;
    /// The error `failure` was created with.
    [[nodiscard]] const Error& root(FailureId failure) const;
    /// The id the next failure will get; ids only grow.
    [[nodiscard]] std::uint64_t next_id() const { return next_id_; }

    /// The `Unwritten` error a read of `read` reports for `failure`: the skip records walked back
    /// from the bytes read to the root, newest hop first, and the root error.
    [[nodiscard]] Error report(FailureId failure, const ClaimKey& read) const;

private:
    struct Node {
        Error root;
        std::uint64_t allocations = 0;
        std::deque<SkipRecord> records;
        std::uint64_t dropped_records = 0;
    };
    const Node& node(FailureId failure) const;

    std::unordered_map<FailureId, Node> nodes_;
    std::uint64_t next_id_ = 1;
};

}  // namespace tandem
