#pragma once

// One piece of work on a simulated stream, from enqueue to resolution.

#include "fiber.hpp"
#include "tandem/sim/kernel_context.hpp"

#include "tandem/backend/outcome.hpp"
#include "tandem/backend/server.hpp"
#include "tandem/backend/work.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <span>
#include <vector>

namespace tandem::sim {

/// A vector clock: one counter per stream of the runtime, by the stream's global index. The
/// first `inline_streams` counters live in the object itself: every operation copies its
/// stream's clock when it starts and the host's when it is enqueued, and with the counters on
/// the heap each copy was an allocation. Four, not more: an operation holds two clocks, and with
/// eight it outgrew the largest block glibc's per-thread cache keeps (1032 bytes), which made
/// its allocation and free slower than the two they saved.
class VectorClock {
public:
    static constexpr std::size_t inline_streams = 4;

    [[nodiscard]] std::size_t size() const { return size_; }
    /// Grows to `size` counters, the new ones `value` (it never shrinks: streams stay).
    void resize(std::size_t size, std::uint64_t value) {
        for (; size_ < size; ++size_) {
            if (size_ < inline_streams) {
                inline_[size_] = value;
            } else {
                spill_.push_back(value);
            }
        }
    }
    std::uint64_t& operator[](std::size_t index) {
        return index < inline_streams ? inline_[index] : spill_[index - inline_streams];
    }
    std::uint64_t operator[](std::size_t index) const {
        return index < inline_streams ? inline_[index] : spill_[index - inline_streams];
    }

private:
    std::array<std::uint64_t, inline_streams> inline_{};
    std::vector<std::uint64_t> spill_;
    std::size_t size_ = 0;
};

inline void merge_into(VectorClock& into, const VectorClock& from) {
    if (into.size() < from.size()) {
        into.resize(from.size(), 0);
    }
    for (std::size_t index = 0; index < from.size(); ++index) {
        into[index] = std::max(into[index], from[index]);
    }
}

using tandem::Target;
using tandem::Work;

/// An operation on a simulated stream. Those that touch bytes (writes, copies, launches, replays)
/// are work of the settle pipeline, which decides their claims; records and waits only order
/// streams.
struct Operation final : Work {
    enum class Kind : std::uint8_t { Write, Copy, Launch, Record, Wait, Replay, ReadBack };
    enum class State : std::uint8_t { Queued, Running, Done };

    Kind kind;
    State state = State::Queued;
    std::uint32_t stream_local = 0;
    std::uint32_t stream_global = 0;
    /// The position on its stream, from 1 (`Work::sequence` is the runtime-wide enqueue order).
    std::uint64_t stream_sequence = 0;

    /// An asynchronous read: the caller's buffer it copies into.
    std::span<std::byte> read_into;
    /// Keeps every bound allocation reserved until the operation is settled.
    std::vector<BufferBinding> held;

    // Payloads, by kind.
    std::vector<std::byte> bytes;               // Write.
    std::optional<LaunchRequest> launch;        // Launch.
    std::uint64_t event = 0;                    // Record, Wait.
    std::shared_ptr<const CaptureGraph> graph;  // Replay.
    std::optional<KernelResource> copy_source;  // Copy.
    /// A wait on an event of another process (a job's peer rank): `event` is not this
    /// runtime's, and the owner's counter says when it is reached.
    std::optional<Event> remote_event;
    /// When a wait on `remote_event` gives up: set the first time it is found not reached.
    std::optional<std::chrono::steady_clock::time_point> remote_deadline;

    // Ordering, for the race detector.
    VectorClock host_clock;
    VectorClock clock;
    std::uint64_t epoch = 0;

    // Running kernels: the body runs on a fiber (deterministic) or a worker (threads).
    std::function<void()> body;
    std::unique_ptr<Fiber> fiber;
    /// The resources of the launch running, as its kernel binds them (`bind_resources`); kept
    /// when the operation is reused.
    std::vector<BoundResource> bound;
    std::atomic<bool> abandoned{false};
    std::unique_ptr<KernelHost> host;
    std::function<bool()> blocked;
    std::string blocked_on;
    std::optional<std::string> fault;
    std::optional<std::uint32_t> failure_code;
    /// The kernel that reported `failure_code`: a replay's failure names the kernel of its graph
    /// that failed, as a launch's does.
    std::string failed_kernel;
    /// The injected fault `failure_code` came from (the kernel did not run), or none when the
    /// kernel reported it.
    std::optional<InjectedFault> failure_injected;
    /// An error that ends the operation without a kernel code: a throw, a deadlock, a lost device.
    std::optional<Error> error;
    /// Injected kernel faults, one entry per launch the operation runs (none when no fault was
    /// armed), drawn when it was enqueued (`Server::launch`, `Server::replay`) so that "the nth
    /// launch from now" means program order, whatever the schedule.
    std::vector<std::optional<InjectedFault>> injected;
    /// Held back when it started: an input was known to end up claimed (C9), so it wrote nothing.
    bool held_back = false;

    /// Whether the settle pipeline decides this operation's claims.
    [[nodiscard]] bool is_work() const { return kind != Kind::Record && kind != Kind::Wait; }
    void on_settled() override { held.clear(); }
    /// Empties the operation for its next use (`Engine::new_operation`), keeping the storage of
    /// its vectors, its clocks and its launch request; a write's payload keeps at most
    /// `kept_payload_bytes`.
    void reset();

    static constexpr std::size_t kept_payload_bytes = std::size_t{64} << 10;
};

/// How a report names `operation`: its label, device, stream and place on the stream.
std::string where(const Operation& operation);
/// `where(operation)` into `out`, whose storage is reused: what a hot path builds it with.
void where_into(const Operation& operation, std::string& out);

/// Blocks for operations, kept per thread for reuse. A sync drains a whole batch of work at once
/// and frees its operations together; malloc keeps only a few blocks of one size at hand per
/// thread, so past them each allocation and free of an operation (a kilobyte) went through its
/// bins and their consolidation.
class OperationBlocks {
public:
    /// Blocks kept per thread; past the bound they go back to malloc. As many as the engine lets
    /// be unsettled at once (`Engine::max_unsettled_work`): past a thousand pending launches,
    /// blocks from malloc's fragmented bins made each launch cost twice as much.
    static constexpr std::size_t max_kept = std::size_t{1} << 15;

    static void* take(std::size_t size_bytes) {
        Kept& kept = kept_here();
        if (kept.size_bytes == 0) {
            kept.size_bytes = size_bytes;  // One size is ever asked for: an operation's.
        }
        if (kept.blocks.empty() || kept.size_bytes != size_bytes) {
            return ::operator new(size_bytes);
        }
        void* block = kept.blocks.back();
        kept.blocks.pop_back();
        return block;
    }
    static void give_back(void* block, std::size_t size_bytes) {
        Kept& kept = kept_here();
        if (!kept_alive() || kept.size_bytes != size_bytes || kept.blocks.size() >= max_kept) {
            ::operator delete(block);
            return;
        }
        kept.blocks.push_back(block);
    }

private:
    struct Kept {
        std::size_t size_bytes = 0;
        std::vector<void*> blocks;
        ~Kept() {
            kept_alive() = false;  // An operation freed later, at exit, goes straight back.
            for (void* block : blocks) {
                ::operator delete(block);
            }
        }
    };
    static Kept& kept_here() {
        thread_local Kept kept;
        return kept;
    }
    static bool& kept_alive() {
        thread_local bool alive = true;
        return alive;
    }
};

/// The allocator `make_operation` gives std::allocate_shared.
template <typename T>
struct OperationAllocator {
    using value_type = T;
    OperationAllocator() = default;
    template <typename U>
    OperationAllocator(const OperationAllocator<U>&) {}  // NOLINT: rebinding converts.
    T* allocate(std::size_t count) {
        return static_cast<T*>(OperationBlocks::take(count * sizeof(T)));
    }
    void deallocate(T* block, std::size_t count) {
        OperationBlocks::give_back(block, count * sizeof(T));
    }
    bool operator==(const OperationAllocator&) const { return true; }
};

/// A new operation, in a block reused from earlier ones where one is kept.
inline std::shared_ptr<Operation> make_operation() {
    return std::allocate_shared<Operation>(OperationAllocator<Operation>());
}

}  // namespace tandem::sim
