#pragma once

// The process's table of labels (labels.hpp says why there is one). Internal: the client fills
// it, the last holder of an allocation and the server of a stream empty it, and naming reads it.
//
// Every entry is paid for before it is made: `reserve` takes one of `labels_live_max` slots and
// the entry keeps it, so the table never holds more than the bound, and a call refused for want
// of a slot has changed nothing. The count of slots taken is what naming reads first: while it is
// zero, no lock is taken.

#include "tandem/core/ids.hpp"
#include "tandem/core/memory_reference.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <utility>

namespace tandem::detail {

class LabelTable {
public:
    /// One of the table's `labels_live_max` places, taken and not yet filled. Given back when
    /// dropped unfilled: the call it was taken for failed.
    class Slot {
    public:
        Slot(Slot&& other) noexcept : held_(std::exchange(other.held_, false)) {}
        Slot(const Slot&) = delete;
        Slot& operator=(const Slot&) = delete;
        Slot& operator=(Slot&&) = delete;
        ~Slot();

    private:
        friend class LabelTable;
        Slot() = default;
        bool held_ = true;
    };

    /// A slot, or none when `labels_live_max` labels are live.
    static std::optional<Slot> reserve();
    /// Labels `memory`'s allocation with `label` in `slot`; the allocation's last holder
    /// forgets it (`MemoryControl::forget_label`).
    static void name(Slot slot, const ManagedMemoryHandle& memory, std::string label);
    /// Labels `memory`, a block of memory another rank shared, with the owner's `label` in
    /// `slot`. Each lookup makes a block of its own: a label already there counts one more
    /// holder (and the slot goes back), and the label goes with the last block that holds it.
    static void name_shared(Slot slot, const ManagedMemoryHandle& memory, std::string label);
    /// Labels `stream` of `device` with `label` in `slot`, until the stream or the device goes.
    static void name(Slot slot, ServiceId device, StreamId stream, std::string label);

    /// The label of `memory`, if it has one.
    static std::optional<std::string> of(MemoryId memory);
    /// The label of `stream` of `device`, if it has one.
    static std::optional<std::string> of(ServiceId device, StreamId stream);

    /// Forgets one holder of the label of `memory`, if any; with the last, its slot is free
    /// again.
    static void forget(MemoryId memory) noexcept;
    /// Forgets the label of `stream` of `device`, if any.
    static void forget(ServiceId device, StreamId stream) noexcept;
    /// Forgets the labels of every stream of `device`, as the device goes.
    static void forget_streams(ServiceId device) noexcept;

    /// The slots taken: labels live and slots reserved for calls in flight. For tests, which
    /// check that what is released leaves nothing behind.
    static std::size_t live();
};

}  // namespace tandem::detail
