#include "tandem/backend/claims.hpp"

#include <algorithm>
#include <cassert>

namespace tandem {

std::size_t AllocationClaims::first_ending_after(std::uint64_t offset) const {
    auto found = std::partition_point(claims_.begin(), claims_.end(),
                                      [offset](const Claim& claim) { return claim.range.end <= offset; });
    return static_cast<std::size_t>(found - claims_.begin());
}

std::size_t AllocationClaims::cut(ByteRange range, TouchedFailures& touched) {
    const std::size_t first = first_ending_after(range.begin);
    std::size_t last = first;
    std::optional<Claim> left;
    std::optional<Claim> right;
    while (last < claims_.size() && claims_[last].range.begin < range.end) {
        const Claim& claim = claims_[last];
        // Past a few, duplicates are left for the caller to drop (`ClaimStore::recount`): a
        // range over thousands of failures' claims would otherwise scan the list per claim.
        if (touched.size() < touched_scanned) {
            touched.push_back_unique(claim.failure);
        } else {
            touched.push_back(claim.failure);
        }
        uncount_claim(claim.failure);
        if (claim.range.begin < range.begin) {
            left = Claim{ByteRange{claim.range.begin, range.begin}, claim.failure};
        }
        if (claim.range.end > range.end) {
            right = Claim{ByteRange{range.end, claim.range.end}, claim.failure};
        }
        ++last;
    }
    const std::size_t removed = last - first;
    const std::size_t kept = (left ? 1 : 0) + (right ? 1 : 0);
    for (const std::optional<Claim>* remainder : {&left, &right}) {
        if (*remainder) {
            count_claim((*remainder)->failure);
        }
    }
    const auto at = [this](std::size_t index) {
        return claims_.begin() + static_cast<std::ptrdiff_t>(index);
    };
    if (kept <= removed) {
        std::size_t write = first;
        if (left) {
            claims_[write++] = *left;
        }
        if (right) {
            claims_[write++] = *right;
        }
        claims_.erase(at(write), at(last));
    } else {
        // One claim strictly contains `range`: it splits in two.
        claims_[first] = *left;
        claims_.insert(at(first + 1), *right);
    }
    return first + (left ? 1 : 0);
}

void AllocationClaims::fuse_around(std::size_t index) {
    const auto at = [this](std::size_t position) {
        return claims_.begin() + static_cast<std::ptrdiff_t>(position);
    };
    if (index + 1 < claims_.size() && claims_[index].range.end == claims_[index + 1].range.begin &&
        claims_[index].failure == claims_[index + 1].failure) {
        claims_[index].range.end = claims_[index + 1].range.end;
        uncount_claim(claims_[index + 1].failure);
        claims_.erase(at(index + 1));
    }
    if (index > 0 && claims_[index - 1].range.end == claims_[index].range.begin &&
        claims_[index - 1].failure == claims_[index].failure) {
        claims_[index - 1].range.end = claims_[index].range.end;
        uncount_claim(claims_[index].failure);
        claims_.erase(at(index));
    }
}

namespace {

/// Where `failure` is or would go in `carried`, sorted by failure.
template <typename Counts>
auto count_of(Counts& carried, FailureId failure) {
    return std::lower_bound(carried.begin(), carried.end(), failure,
                            [](const auto& entry, FailureId id) { return entry.first < id; });
}

/// Counts one more claim of `failure` in `carried`, sorted by failure.
void add_one(std::vector<std::pair<FailureId, std::uint32_t>>& carried, FailureId failure) {
    // Failures are numbered as they happen, so a new one nearly always goes at the end.
    auto found = count_of(carried, failure);
    if (found != carried.end() && found->first == failure) {
        ++found->second;
    } else {
        carried.insert(found, {failure, 1});
    }
}

}  // namespace

void AllocationClaims::count_claim(FailureId failure) { add_one(carried_, failure); }

void AllocationClaims::uncount_claim(FailureId failure) {
    auto found = count_of(carried_, failure);
    assert(found != carried_.end() && found->first == failure && "a counted claim");
    if (--found->second == 0) {
        carried_.erase(found);
    }
}

TouchedFailures AllocationClaims::claim(ByteRange range, FailureId failure) {
    TouchedFailures touched;
    if (range.empty()) {
        return touched;
    }
    const std::size_t index = cut(range, touched);
    claims_.insert(claims_.begin() + static_cast<std::ptrdiff_t>(index), Claim{range, failure});
    count_claim(failure);
    fuse_around(index);
    return touched;
}

TouchedFailures AllocationClaims::release(ByteRange range) {
    TouchedFailures touched;
    if (!range.empty()) {
        cut(range, touched);
    }
    return touched;
}

std::optional<FailureId> AllocationClaims::first_claimant(ByteRange range) const {
    if (range.empty()) {
        return std::nullopt;
    }
    const std::size_t first = first_ending_after(range.begin);
    if (first < claims_.size() && claims_[first].range.begin < range.end) {
        return claims_[first].failure;
    }
    return std::nullopt;
}

void AllocationClaims::claimants(ByteRange range, std::vector<FailureId>& found) const {
    if (range.empty()) {
        return;
    }
    for (std::size_t index = first_ending_after(range.begin);
         index < claims_.size() && claims_[index].range.begin < range.end; ++index) {
        if (std::find(found.begin(), found.end(), claims_[index].failure) == found.end()) {
            found.push_back(claims_[index].failure);
        }
    }
}

bool AllocationClaims::carries(FailureId failure) const {
    const auto found = count_of(carried_, failure);
    return found != carried_.end() && found->first == failure;
}

std::optional<std::string> AllocationClaims::check_invariants() const {
    for (std::size_t index = 0; index < claims_.size(); ++index) {
        const Claim& claim = claims_[index];
        if (claim.range.empty()) {
            return "claim " + std::to_string(index) + " is empty: " + to_string(claim.range);
        }
        if (index == 0) {
            continue;
        }
        const Claim& previous = claims_[index - 1];
        if (previous.range.end > claim.range.begin) {
            return "claims " + to_string(previous.range) + " and " + to_string(claim.range) +
                   " are unsorted or overlap";
        }
        if (previous.range.end == claim.range.begin && previous.failure == claim.failure) {
            return "claims " + to_string(previous.range) + " and " + to_string(claim.range) +
                   " of " + to_string(claim.failure) + " touch but are not fused";
        }
    }
    return check_counts();
}

std::optional<std::string> AllocationClaims::check_counts() const {
    std::vector<std::pair<FailureId, std::uint32_t>> counted;
    for (const Claim& claim : claims_) {
        add_one(counted, claim.failure);
    }
    if (counted != carried_) {
        return "the claims of each failure are counted as " + std::to_string(carried_.size()) +
               " failures, where the claims name " + std::to_string(counted.size());
    }
    return std::nullopt;
}

}  // namespace tandem
