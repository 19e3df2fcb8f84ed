#pragma once

// A hash table from 64-bit keys (allocation ids, block addresses) to values, open-addressed
// with linear probing in a power-of-two array. The memory manager looks an allocation up on every
// allocation, free and binding resolution; `std::unordered_map` spends a heap round trip per entry
// and an integer division per lookup there, which together cost more than the rest of an
// allocate+free pair. Here a lookup is a multiply, a shift and, nearly always, one cache line.
//
// Keys are spread by Fibonacci hashing, so sequential ids and aligned addresses do not cluster. The
// table grows when half full and never shrinks; erasing shifts the following entries back instead
// of leaving tombstones, so lookups stay short however many entries come and go.

#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace tandem::detail {

template <typename Value>
class IdTable {
public:
    /// The value stored under `key`, or null.
    [[nodiscard]] Value* find(std::uint64_t key) {
        if (slots_.empty()) {
            return nullptr;
        }
        for (std::size_t index = home(key);; index = next(index)) {
            Slot& slot = slots_[index];
            if (!slot.used) {
                return nullptr;
            }
            if (slot.key == key) {
                return &slot.value;
            }
        }
    }
    [[nodiscard]] const Value* find(std::uint64_t key) const {
        return const_cast<IdTable*>(this)->find(key);
    }

    /// Stores `value` under `key`, which must not be present. May throw `std::bad_alloc` when the
    /// table grows, before anything changed.
    void insert(std::uint64_t key, const Value& value) {
        assert(find(key) == nullptr && "a key is inserted once");
        if ((size_ + 1) * 2 > slots_.size()) {
            grow();
        }
        place(key, Value(value));
        ++size_;
    }

    /// The value stored under `key`, a value-initialised one inserted when absent. May throw
    /// `std::bad_alloc` when the table grows, before anything changed. An insert moves values:
    /// references into the table hold until the next insert or erase.
    Value& find_or_insert(std::uint64_t key) {
        if (Value* found = find(key)) {
            return *found;
        }
        if ((size_ + 1) * 2 > slots_.size()) {
            grow();
        }
        ++size_;
        return place(key, Value{});
    }

    /// Removes every entry; the table keeps its size.
    void clear() {
        for (Slot& slot : slots_) {
            slot = Slot{};
        }
        size_ = 0;
    }

    /// Removes `key`; returns whether it was present.
    bool erase(std::uint64_t key) {
        if (slots_.empty()) {
            return false;
        }
        std::size_t hole = home(key);
        for (; slots_[hole].key != key || !slots_[hole].used; hole = next(hole)) {
            if (!slots_[hole].used) {
                return false;
            }
        }
        // Shift back every following entry of the run that may no longer reach its slot past the
        // hole, so that no lookup stops early at an empty slot.
        for (std::size_t index = next(hole); slots_[index].used; index = next(index)) {
            const std::size_t wanted = home(slots_[index].key);
            if (distance(wanted, index) >= distance(hole, index)) {
                slots_[hole] = std::move(slots_[index]);
                hole = index;
            }
        }
        slots_[hole] = Slot{};
        --size_;
        return true;
    }

    [[nodiscard]] std::size_t size() const { return size_; }
    [[nodiscard]] bool empty() const { return size_ == 0; }

    /// Calls `visit(key, value)` for every entry, in no particular order.
    template <typename Visit>
    void for_each(Visit&& visit) const {
        for (const Slot& slot : slots_) {
            if (slot.used) {
                visit(slot.key, slot.value);
            }
        }
    }

private:
    static constexpr std::size_t min_slots = 16;
    static constexpr std::uint64_t fibonacci = 0x9E3779B97F4A7C15ULL;

    struct Slot {
        std::uint64_t key = 0;
        Value value{};
        bool used = false;
    };

    [[nodiscard]] std::size_t home(std::uint64_t key) const {
        return static_cast<std::size_t>((key * fibonacci) >> shift_);
    }
    [[nodiscard]] std::size_t next(std::size_t index) const {
        return (index + 1) & (slots_.size() - 1);
    }
    [[nodiscard]] std::size_t distance(std::size_t from, std::size_t to) const {
        return (to - from) & (slots_.size() - 1);
    }
    Value& place(std::uint64_t key, Value&& value) {
        std::size_t index = home(key);
        while (slots_[index].used) {
            index = next(index);
        }
        slots_[index] = Slot{key, std::move(value), true};
        return slots_[index].value;
    }
    void grow() {
        const std::size_t count = slots_.empty() ? min_slots : slots_.size() * 2;
        std::vector<Slot> old(count);  // Allocates first: a throw leaves the table as it was.
        old.swap(slots_);
        shift_ = 64 - static_cast<unsigned>(std::countr_zero(count));
        for (Slot& slot : old) {
            if (slot.used) {
                place(slot.key, std::move(slot.value));
            }
        }
    }

    std::vector<Slot> slots_;
    std::size_t size_ = 0;
    unsigned shift_ = 64;
};

}  // namespace tandem::detail
