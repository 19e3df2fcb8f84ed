#pragma once

// The claims on one allocation: which bytes failed or skipped work should have written.
//
// Claims are kept as a sorted vector of disjoint, non-empty ranges, each naming one failure
// (rule C1), with touching ranges of one failure fused. A vector beats a tree here: allocations
// carry a handful of claims at most, lookups are a binary search, and a release of an unclaimed
// or exactly claimed range never touches the heap (C12).

#include "tandem/core/detail/small_vector.hpp"
#include "tandem/core/ids.hpp"

#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace tandem {

/// Bytes of one allocation that one failure claims.
struct Claim {
    /// The claimed bytes, never empty.
    ByteRange range;
    /// The failure that should have written them.
    FailureId failure;

    /// Equal when both the range and the failure are.
    friend constexpr bool operator==(const Claim&, const Claim&) = default;
};

/// Failures whose claims a change touched. Inline for up to 8, the common case by far.
using TouchedFailures = detail::SmallVector<FailureId, 8>;
/// Touched failures kept unique as they are found; past them a list may repeat a failure.
inline constexpr std::size_t touched_scanned = 8;

/// The claims on one allocation: sorted, disjoint, non-empty ranges, each naming one failure (C1),
/// with touching ranges of one failure fused.
class AllocationClaims {
public:
    /// Makes `failure` the only claimant of every byte of `range` (C2). Returns the failures
    /// whose claims were overwritten, so the caller can recount who still carries them.
    TouchedFailures claim(ByteRange range, FailureId failure);
    /// Releases every claim on exactly `range` (C3). Returns the failures whose claims shrank.
    TouchedFailures release(ByteRange range);

    /// The first failure claiming a byte of `range`, scanning from its start, or none.
    [[nodiscard]] std::optional<FailureId> first_claimant(ByteRange range) const;
    /// Every distinct failure claiming a byte of `range`, in order of the bytes, appended to
    /// `found` unless already there.
    void claimants(ByteRange range, std::vector<FailureId>& found) const;
    /// Whether some byte is claimed by `failure`: a binary search, however many claims there are.
    [[nodiscard]] bool carries(FailureId failure) const;
    /// How many claims each failure claiming bytes here has, sorted by failure: each once.
    [[nodiscard]] std::span<const std::pair<FailureId, std::uint32_t>> carried() const {
        return carried_;
    }
    /// Whether no byte is claimed.
    [[nodiscard]] bool empty() const { return claims_.empty(); }
    /// The claims, sorted by offset.
    [[nodiscard]] std::span<const Claim> claims() const { return claims_; }

    /// A description of the first broken C1 invariant, or none.
    [[nodiscard]] std::optional<std::string> check_invariants() const;

private:
    /// Index of the first claim whose range ends after `offset`.
    [[nodiscard]] std::size_t first_ending_after(std::uint64_t offset) const;
    /// Removes `range` from every claim, keeping the remainders; returns the touched failures
    /// and the index where `range` would now be inserted.
    std::size_t cut(ByteRange range, TouchedFailures& touched);
    void fuse_around(std::size_t index);
    /// Whether `carried_` counts what `claims_` holds.
    [[nodiscard]] std::optional<std::string> check_counts() const;
    /// Counts one more claim of `failure` in `carried_`.
    void count_claim(FailureId failure);
    /// Counts one claim of `failure` fewer; a failure with none left leaves `carried_`.
    void uncount_claim(FailureId failure);

    std::vector<Claim> claims_;
    /// The claims of each failure in `claims_`, sorted by failure: `carries` without a scan of
    /// every claim (an allocation whose claims a thousand failed launches made would otherwise
    /// cost each further claim a pass over all of them). Removing one frees nothing (C12).
    std::vector<std::pair<FailureId, std::uint32_t>> carried_;
};

}  // namespace tandem
