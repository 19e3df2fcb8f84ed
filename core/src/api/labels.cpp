#include "tandem/core/labels.hpp"

#include "label_table.hpp"

#include <atomic>
#include <cassert>
#include <cstdio>
#include <map>
#include <mutex>
#include <unordered_map>

namespace tandem {

namespace detail {

namespace {

/// The entries, under one lock: labels are made and forgotten as allocations and streams are,
/// far from the launch path, so one lock is no contention worth splitting.
struct Entries {
    std::mutex mutex;
    /// An allocation's label, and how many memory blocks hold it: one for memory of this
    /// process; for memory another rank shared, one a lookup whose handles live.
    struct MemoryLabel {
        std::string label;
        std::uint32_t holders = 1;
    };
    std::unordered_map<MemoryId, MemoryLabel> memory;
    /// Ordered by device first, so that a device's streams are one range to forget.
    std::map<std::pair<ServiceId, std::uint64_t>, std::string> streams;
};

/// Never destroyed: an allocation released while the process exits still forgets its label.
Entries& entries() {
    static auto* table = new Entries;
    return *table;
}

/// Slots taken, filled or not; at most `labels_live_max`.
std::atomic<std::size_t> slots_taken{0};

void give_back_slots(std::size_t count) {
    [[maybe_unused]] const std::size_t before =
        slots_taken.fetch_sub(count, std::memory_order_acq_rel);
    assert(before >= count && "a label slot given back twice");
}

}  // namespace

LabelTable::Slot::~Slot() {
    if (held_) {
        give_back_slots(1);
    }
}

std::optional<LabelTable::Slot> LabelTable::reserve() {
    std::size_t taken = slots_taken.load(std::memory_order_relaxed);
    do {
        if (taken >= labels_live_max) {
            return std::nullopt;
        }
    } while (!slots_taken.compare_exchange_weak(taken, taken + 1, std::memory_order_acq_rel,
                                                std::memory_order_relaxed));
    return Slot();
}

void LabelTable::name(Slot slot, const ManagedMemoryHandle& memory, std::string label) {
    {
        std::lock_guard lock(entries().mutex);
        const bool added =
            entries().memory.try_emplace(memory.id(), Entries::MemoryLabel{std::move(label)}).second;
        assert(added && "an allocation is labelled once, as it is made");
        if (!added) {
            return;  // The slot goes back as it drops.
        }
    }
    slot.held_ = false;  // The entry holds it now.
    memory.control_->labelled.store(true, std::memory_order_relaxed);
}

void LabelTable::name_shared(Slot slot, const ManagedMemoryHandle& memory, std::string label) {
    {
        std::lock_guard lock(entries().mutex);
        auto [entry, added] =
            entries().memory.try_emplace(memory.id(), Entries::MemoryLabel{std::move(label)});
        if (!added) {
            ++entry->second.holders;  // Another lookup's block: the slot goes back as it drops.
        } else {
            slot.held_ = false;  // The entry holds it now.
        }
    }
    memory.control_->labelled.store(true, std::memory_order_relaxed);
}

void LabelTable::name(Slot slot, ServiceId device, StreamId stream, std::string label) {
    std::lock_guard lock(entries().mutex);
    const bool added =
        entries().streams.try_emplace({device, stream.value}, std::move(label)).second;
    assert(added && "a stream is labelled once, as it is created");
    slot.held_ = !added;
}

std::optional<std::string> LabelTable::of(MemoryId memory) {
    if (slots_taken.load(std::memory_order_acquire) == 0) [[likely]] {
        return std::nullopt;
    }
    std::lock_guard lock(entries().mutex);
    const auto found = entries().memory.find(memory);
    if (found == entries().memory.end()) {
        return std::nullopt;
    }
    return found->second.label;
}

std::optional<std::string> LabelTable::of(ServiceId device, StreamId stream) {
    if (slots_taken.load(std::memory_order_acquire) == 0) [[likely]] {
        return std::nullopt;
    }
    std::lock_guard lock(entries().mutex);
    const auto found = entries().streams.find({device, stream.value});
    if (found == entries().streams.end()) {
        return std::nullopt;
    }
    return found->second;
}

void LabelTable::forget(MemoryId memory) noexcept {
    std::lock_guard lock(entries().mutex);
    const auto found = entries().memory.find(memory);
    if (found != entries().memory.end() && --found->second.holders == 0) {
        entries().memory.erase(found);
        give_back_slots(1);
    }
}

void LabelTable::forget(ServiceId device, StreamId stream) noexcept {
    if (slots_taken.load(std::memory_order_acquire) == 0) [[likely]] {
        return;
    }
    std::lock_guard lock(entries().mutex);
    if (entries().streams.erase({device, stream.value}) == 1) {
        give_back_slots(1);
    }
}

void LabelTable::forget_streams(ServiceId device) noexcept {
    if (slots_taken.load(std::memory_order_acquire) == 0) [[likely]] {
        return;
    }
    std::lock_guard lock(entries().mutex);
    auto& streams = entries().streams;
    const auto first = streams.lower_bound({device, 0});
    auto last = first;
    std::size_t count = 0;
    while (last != streams.end() && last->first.first == device) {
        ++last;
        ++count;
    }
    streams.erase(first, last);
    if (count > 0) {
        give_back_slots(count);
    }
}

std::size_t LabelTable::live() { return slots_taken.load(std::memory_order_acquire); }

void MemoryControl::forget_label() noexcept {
    LabelTable::forget(allocation.id);
    labelled.store(false, std::memory_order_relaxed);
}

}  // namespace detail

Status check_label(std::string_view label) {
    if (label.size() > label_bytes_max) {
        return Error::invalid_argument("a label of " + std::to_string(label.size()) +
                                       " bytes is longer than the " +
                                       std::to_string(label_bytes_max) + " a label may have");
    }
    for (std::size_t index = 0; index < label.size(); ++index) {
        const auto byte = static_cast<unsigned char>(label[index]);
        if (byte < 0x20 || byte > 0x7e || byte == '\'') {
            // The byte by its value: a report should not print what it refuses for being
            // unprintable.
            char value[8];
            std::snprintf(value, sizeof value, "0x%02x", byte);
            std::string message =
                "a label holds printable ASCII other than ' (which encloses "
                "it in reports); byte ";
            message += std::to_string(index) + " is " + value;
            return Error::invalid_argument(std::move(message));
        }
    }
    return {};
}

std::string stream_name(ServiceId device, StreamId stream) {
    std::string text = to_string(stream);
    if (std::optional<std::string> label = detail::LabelTable::of(device, stream)) {
        text += " '" + *label + "'";
    }
    return text;
}

}  // namespace tandem
