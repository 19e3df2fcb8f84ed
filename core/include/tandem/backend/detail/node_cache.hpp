#pragma once

// Keeps the nodes of a node-based standard map for reuse, so that a map whose entries come and go
// at a steady rate (the live allocations, a pool's free blocks and cached regions) stops calling
// the heap once it has reached its working size. Before, an allocate+free pair made five heap round
// trips through these maps, each dearer than the tree or hash step that stores the entry.
//
// The cache is bounded: past `capacity` spare nodes, an erased node goes back to the heap.

#include <cstddef>
#include <iterator>
#include <utility>
#include <vector>

namespace tandem::detail {

template <typename Map, std::size_t Capacity = 64>
class NodeCache {
public:
    static constexpr std::size_t capacity = Capacity;

    NodeCache() { spare_.reserve(Capacity); }

    /// Inserts `key` and `value` into `map`, in a spare node when one is cached.
    template <typename Key, typename Value>
    void emplace(Map& map, Key&& key, Value&& value) {
        if (spare_.empty()) {
            map.emplace(std::forward<Key>(key), std::forward<Value>(value));
            return;
        }
        typename Map::node_type node = std::move(spare_.back());
        spare_.pop_back();
        node.key() = std::forward<Key>(key);
        node.mapped() = std::forward<Value>(value);
        map.insert(std::move(node));
    }

    /// Erases the entry at `position` and keeps its node; returns the entry after it.
    typename Map::iterator erase(Map& map, typename Map::iterator position) {
        auto after = std::next(position);
        typename Map::node_type node = map.extract(position);
        if (spare_.size() < Capacity) {
            spare_.push_back(std::move(node));  // Never reallocates: capacity was reserved.
        }
        return after;
    }

    [[nodiscard]] std::size_t spare_count() const { return spare_.size(); }

private:
    std::vector<typename Map::node_type> spare_;
};

}  // namespace tandem::detail
