#include "tandem/backend/failure_graph.hpp"
#include "tandem/core/handle.hpp"

#include <cassert>

namespace tandem {

FailureId FailureGraph::create(Error error) {
    FailureId id{next_id_++};
    nodes_.emplace(id, Node{std::move(error), 0, {}, 0});
    return id;
}

const FailureGraph::Node& FailureGraph::node(FailureId failure) const {
    auto found = nodes_.find(failure);
    assert(found != nodes_.end() && "a failure id that the graph does not hold");
    return found->second;
}

void FailureGraph::carry(FailureId failure) {
    auto found = nodes_.find(failure);
    assert(found != nodes_.end());
    ++found->second.allocations;
}

void FailureGraph::drop(FailureId failure) {
    auto found = nodes_.find(failure);
    assert(found != nodes_.end() && found->second.allocations > 0);
    if (--found->second.allocations == 0) {
        nodes_.erase(found);
    }
}

void FailureGraph::discard_if_uncarried(FailureId failure) {
    auto found = nodes_.find(failure);
    if (found != nodes_.end() && found->second.allocations == 0) {
        nodes_.erase(found);
    }
}

void FailureGraph::add_skip(FailureId failure, SkipRecord record) {
    auto found = nodes_.find(failure);
    assert(found != nodes_.end());
    Node& entry = found->second;
    entry.records.push_back(std::move(record));
    if (entry.records.size() > max_skip_records) {
        entry.records.pop_front();
        ++entry.dropped_records;
    }
    assert(entry.records.size() <= max_skip_records);
}

bool FailureGraph::contains(FailureId failure) const { return nodes_.contains(failure); }

std::uint64_t FailureGraph::allocations(FailureId failure) const {
    auto found = nodes_.find(failure);
    return found == nodes_.end() ? 0 : found->second.allocations;
}

const Error& FailureGraph::root(FailureId failure) const { return node(failure).root; }

Error FailureGraph::report(FailureId failure, const ClaimKey& read) const {
    const Node& entry = node(failure);
    UnwrittenDetails details;
    details.failure = failure;
    details.allocations = entry.allocations;
    details.dropped_records = entry.dropped_records;
    details.root = std::make_shared<const Error>(entry.root);
    // Causes precede their effects in the record list, so one pass from the newest record back
    // follows the chain: each hop that produced the bytes we are looking at moves the search to
    // the bytes that hop needed.
    ClaimKey looking_at = read;
    for (auto record = entry.records.rbegin(); record != entry.records.rend(); ++record) {
        for (const ClaimKey& produced : record->produced) {
            if (overlap(produced, looking_at) != Overlap::Disjoint) {
                details.chain.push_back(*record);
                looking_at = record->needed;
                break;
            }
        }
    }
    return Error::unwritten(std::move(details));
}

}  // namespace tandem
