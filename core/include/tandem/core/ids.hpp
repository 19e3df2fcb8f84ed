#pragma once

// Identifiers shared by every part of tandem.
//
// Each one is a small value type with a distinct C++ type, so a stream id cannot be passed where
// a memory id is expected. Memory and failure ids come from generation counters that only grow:
// an id names one allocation (or one failure) forever, never a later occupant of the same bytes.

#include <compare>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace tandem {

/// One device of one runtime instance. Unique across runtime instances in a process and across
/// processes, because the runtime id is drawn at random when a runtime starts.
struct ServiceId {
    /// The runtime instance, drawn at random when it starts.
    std::uint64_t runtime_id = 0;
    /// The device's number within its runtime, from 0.
    std::uint32_t device_index = 0;
    /// The runtime's number in its process, from 1 in the order runtimes are created: how
    /// messages name a runtime that serves no job (a rank's is named by its rank), the same from
    /// run to run where the id is not. Not part of the identity
    /// (the id decides it); 0 in an id made by hand.
    std::uint32_t runtime_number = 0;
    /// The rank of the job whose runtime this is (`Job::join`), or `no_rank` outside a job:
    /// messages name the device "device 0 of rank 2". Not part of the identity either.
    std::uint32_t rank = no_rank;

    /// `rank` of a runtime that serves no job.
    static constexpr std::uint32_t no_rank = 0xffffffffu;

    /// Ordered by runtime, then device.
    friend constexpr std::strong_ordering operator<=>(const ServiceId& a, const ServiceId& b) {
        if (a.runtime_id != b.runtime_id) {
            return a.runtime_id <=> b.runtime_id;
        }
        return a.device_index <=> b.device_index;
    }
    /// The same device of the same runtime (the id decides; the names do not).
    friend constexpr bool operator==(const ServiceId& a, const ServiceId& b) {
        return a.runtime_id == b.runtime_id && a.device_index == b.device_index;
    }
};

/// The number the next runtime created in this process takes (`ServiceId::runtime_number`): 1
/// for the first.
std::uint32_t next_runtime_number();

/// The most ranks a job has: a job is the ranks of one host, and every pair shares a connection.
inline constexpr std::uint32_t job_ranks_max = 256;

/// How many streams a device creates in its life, the default one included: a bound on what a
/// program that leaks streams holds, not a size to plan for. Ids are never reused.
inline constexpr std::uint64_t device_streams_max = std::uint64_t{1} << 16;

/// An ordered queue of work on one device.
struct StreamId {
    /// The stream's number on its device; streams are numbered from 1, the default stream first.
    std::uint64_t value = 0;

    /// Ordered by number.
    friend constexpr auto operator<=>(const StreamId&, const StreamId&) = default;
};

/// One allocation, for as long as the process lives: memory ids are never reused.
struct MemoryId {
    /// The generation count it was drawn with; 0 names no allocation.
    std::uint64_t value = 0;

    /// A fresh id from the process-wide generation counter, drawn for a runtime of rank `rank`
    /// of a job (`ServiceId::rank`; `ServiceId::no_rank` outside a job). Thread-safe and
    /// lock-free. An id of a rank carries it (`rank_of`), so that ids are unique across the job
    /// whether its ranks share a process or not: another rank's shared memory is named by its
    /// owner's id. The rank is the drawing runtime's, never the process's, since several ranks
    /// of one job may live in one process (`Job::join_in_process`).
    static MemoryId next(std::uint32_t rank = ServiceId::no_rank);
    /// Bits below the rank: the generation count. A process draws fewer than 2^48 ids.
    static constexpr unsigned rank_shift = 48;
    /// The rank of the runtime that drew the id, or none for a runtime outside a job.
    [[nodiscard]] constexpr std::optional<std::uint32_t> rank_of() const {
        const std::uint64_t tag = value >> rank_shift;
        return tag == 0 ? std::nullopt : std::optional<std::uint32_t>(tag - 1);
    }
    /// The generation count alone, as messages print it.
    [[nodiscard]] constexpr std::uint64_t count() const {
        return value & ((std::uint64_t{1} << rank_shift) - 1);
    }
    /// Ordered by generation: an older allocation sorts first.
    friend constexpr auto operator<=>(const MemoryId&, const MemoryId&) = default;
};

/// One failure in a device's failure graph. Ids are never reused within a graph.
struct FailureId {
    /// The count it was drawn with in its graph.
    std::uint64_t value = 0;

    /// Ordered by creation within a graph.
    friend constexpr auto operator<=>(const FailureId&, const FailureId&) = default;
};

/// A half-open byte range `[begin, end)` of one allocation. Empty when `begin >= end`.
struct ByteRange {
    /// The first byte.
    std::uint64_t begin = 0;
    /// One past the last byte.
    std::uint64_t end = 0;

    /// Whether the range holds no byte.
    [[nodiscard]] constexpr bool empty() const { return begin >= end; }
    /// The bytes in the range; 0 when empty.
    [[nodiscard]] constexpr std::uint64_t size_bytes() const { return empty() ? 0 : end - begin; }
    /// Whether the two ranges share at least one byte. Empty ranges share none.
    [[nodiscard]] constexpr bool intersects(const ByteRange& other) const {
        return !empty() && !other.empty() && begin < other.end && other.begin < end;
    }

    /// Ordered by `begin`, then `end`.
    friend constexpr auto operator<=>(const ByteRange&, const ByteRange&) = default;
};

/// The identity a claim is stored under: an allocation and a byte range of it. Anything that
/// deduplicates or compares claims keys by this and nothing coarser.
struct ClaimKey {
    /// The allocation.
    MemoryId memory;
    /// The bytes of it.
    ByteRange range;

    /// Ordered by allocation, then range.
    friend constexpr auto operator<=>(const ClaimKey&, const ClaimKey&) = default;
};

///@{
/// An id, range or key in words, for messages: "device 0" (of the process's first runtime;
/// "device 0 of runtime 2" for the second),
/// "stream 1", "memory #3", "failure #1", "[0, 64)", "memory #3 bytes [0, 64)". Memory the
/// program labelled (`Client::allocate(size, {.label = ...})`) is named with its label while it is
/// held: "memory #3 'weights'". A stream's label needs its device: `stream_name` (labels.hpp).
std::string to_string(ServiceId service);
std::string to_string(StreamId stream);
std::string to_string(MemoryId memory);
std::string to_string(FailureId failure);
std::string to_string(ByteRange range);
std::string to_string(const ClaimKey& key);
///@}

}  // namespace tandem

/// Hashes a memory id by its value, for unordered containers.
template <>
struct std::hash<tandem::MemoryId> {
    /// The hash of `id`.
    std::size_t operator()(tandem::MemoryId id) const noexcept {
        return std::hash<std::uint64_t>{}(id.value);
    }
};

/// Hashes a failure id by its value, for unordered containers.
template <>
struct std::hash<tandem::FailureId> {
    /// The hash of `id`.
    std::size_t operator()(tandem::FailureId id) const noexcept {
        return std::hash<std::uint64_t>{}(id.value);
    }
};

/// Hashes a claim key by its allocation and both ends of its range, for unordered containers.
template <>
struct std::hash<tandem::ClaimKey> {
    /// The hash of `key`.
    std::size_t operator()(const tandem::ClaimKey& key) const noexcept {
        std::size_t seed = std::hash<std::uint64_t>{}(key.memory.value);
        seed ^= std::hash<std::uint64_t>{}(key.range.begin) + 0x9e3779b97f4a7c15ULL + (seed << 6);
        seed ^= std::hash<std::uint64_t>{}(key.range.end) + 0x9e3779b97f4a7c15ULL + (seed << 6);
        return seed;
    }
};
