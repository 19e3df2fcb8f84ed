#pragma once

// What every backend's device keeps and answers the same way, whatever runs its work: its service
// id, its claim store, whether it is lost (D1), which peers it granted access to its shared
// memory, and the faults injected into it. A backend derives from it and implements the calls
// that touch its streams and memory; the calls here take the lock of the device's group
// (device_groups.hpp), which serialises the state of the devices in it.

#include "tandem/backend/claim_store.hpp"
#include "tandem/backend/detail/device_seed.hpp"
#include "tandem/backend/device_directory.hpp"
#include "tandem/backend/device_groups.hpp"
#include "tandem/backend/device_stream.hpp"
#include "tandem/backend/fault_plan.hpp"
#include "tandem/backend/memory_manager.hpp"
#include "tandem/backend/server.hpp"
#include "tandem/backend/work.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tandem {

/// The part of every backend's device that behaves the same whatever runs its work: its service id,
/// its claim store, whether it is lost (D1), the peers it granted access to its shared memory and
/// the faults injected into it. A backend derives from it and implements the `do_` hooks.
class DeviceServer : public Server, public std::enable_shared_from_this<DeviceServer> {
public:
    [[nodiscard]] ServiceId service() const final { return service_; }
    /// DeviceLost once lost (D1), otherwise the first claim on `keys` (C9).
    [[nodiscard]] Status check(std::span<const ClaimKey> keys) const final;
    /// The memory of `binding` as peers bind it, pinned while a peer binding holds it. Refused
    /// when the device is lost or the binding is another device's (P1).
    Result<PeerMemory> share(const BufferBinding& binding) final;
    [[nodiscard]] std::optional<Error> lost() const final;
    /// Arms `fault` (`FaultPlan::arm`: `InvalidArgument` for a probability outside [0, 1] or an
    /// allocation counted from 0); a loss with no delay loses the device now (D1); a stream delay
    /// is checked against its bound and applied by the backend (`do_delay`). The same on every
    /// backend.
    Status do_inject(const Fault& fault) final;
    /// Lets kernels on `accessor` bind this device's shared memory (P7): `PeerUnreachable` for a
    /// device the runtime does not reach, or one the backend does not admit (`do_admit_peer`:
    /// GPUs that cannot reach each other). Joins the two devices' groups first.
    Status do_grant_peer_access(ServiceId accessor) final;
    /// Whether kernels on `accessor` may bind this device's shared memory: always for the device
    /// itself, otherwise once granted (or when the backend grants every peer).
    [[nodiscard]] bool peer_access_granted(ServiceId accessor) const final;
    /// `peer_access_granted` for a caller that holds the group's lock.
    [[nodiscard]] bool granted_locked(ServiceId accessor) const {
        return accessor == service_ || granted_.contains(accessor) || do_grants_all_peers();
    }

    /// The device's claims and failure graph.
    [[nodiscard]] ClaimStore& claims() { return claims_; }
    /// The device's claims and failure graph, read only.
    [[nodiscard]] const ClaimStore& claims() const { return claims_; }
    /// Adopted allocations (`Client::adopt`) whose memory is still held: live allocations as much
    /// as the memory manager's, for a runtime's `drained` and a snapshot.
    [[nodiscard]] std::size_t adopted_live() const {
        return adopted_live_.load(std::memory_order_acquire);
    }
    /// One adopted allocation's memory was released (its release sink calls it).
    void adopted_released() { adopted_live_.fetch_sub(1, std::memory_order_acq_rel); }
    /// Whether the device is lost; under the group's lock.
    [[nodiscard]] bool is_lost() const { return lost_.has_value(); }
    /// The device's loss (D1), if lost; under the group's lock.
    [[nodiscard]] const std::optional<Error>& lost_locked() const { return lost_; }
    /// Takes the lock of the device's group, and holds it for the life of the result.
    [[nodiscard]] GroupLock lock_group(GroupLock::Mode mode = GroupLock::Mode::Wait) const {
        return GroupLock(place_, mode);
    }

protected:
    [[nodiscard]] bool maybe_lost() const final {
        return lost_flag_.load(std::memory_order_acquire);
    }
    /// Stream ids run from 1 and are never reused: an id is valid iff it is at most the count,
    /// which a backend sets (`set_stream_count`) as it creates them, and was not destroyed. The
    /// common case, no stream ever destroyed, takes no lock.
    [[nodiscard]] bool has_stream(StreamId stream) const final {
        if (stream.value == 0 || stream.value > stream_count_.load(std::memory_order_acquire)) {
            return false;
        }
        return destroyed_count_.load(std::memory_order_acquire) == 0 || !destroyed(stream);
    }
    /// `InvalidArgument` when the device has created `max_streams` streams; none otherwise.
    [[nodiscard]] std::optional<Error> no_room_for_stream() const;
    /// Waits for `stream`'s work, then destroys it (the Server checked it exists and is not the
    /// default stream): `InvalidArgument` while it has an open capture window.
    Status do_destroy_stream(StreamId stream) final;
    /// Sets how many streams exist; a backend calls it as it creates them.
    void set_stream_count(std::uint64_t count) {
        stream_count_.store(count, std::memory_order_release);
    }

protected:
    /// `directory` reaches the runtime's devices (this one too); `groups` places them in the
    /// groups whose locks serialise the backend's state, and holds this device already.
    /// `runtime_seed` seeds the device's injected faults (`FaultPlan`).
    DeviceServer(ServiceId service, DeviceGroups& groups, const DeviceDirectory& directory,
                 std::uint64_t runtime_seed)
        : service_(service),
          claims_(service),
          directory_(directory),
          faults_(detail::device_seed(runtime_seed, service.device_index)),
          groups_(groups),
          place_(groups.place_of(service.device_index)) {}
    /// The group the device is in now; it stays so while its lock is held.
    [[nodiscard]] DeviceGroup& current_group() const {
        return *place_.load(std::memory_order_acquire);
    }
    /// Joins this device's group with `other`'s, a device of the runtime (`DeviceGroups::join`).
    void do_reach(ServiceId other) final;

    /// A handle of `memory` on the default stream, whose release sink forgets its claims and calls
    /// `memory.release` when the last reference goes; the backend checks the memory first
    /// (`do_check_adopted`).
    Result<Handle> do_adopt(AdoptedMemory memory) final;
    /// Opens the recording window of `stream` (C14): InvalidArgument if one is open.
    Status do_begin_capture(StreamId stream) final;
    /// Ends the window of `stream` once its work is settled (`do_settle_window`): a doomed window
    /// is refused and what it recorded claimed (C14); otherwise the backend builds its graph
    /// (`do_make_graph`).
    Result<CaptureGraph> do_end_capture(StreamId stream) final;

    // Hooks: what differs between backends, called under the group's lock.
    /// An injected loss with no delay: learn what can be learned of pending work, then lose the
    /// device.
    virtual void do_lose_now() = 0;
    /// Whether this device can take `memory` (a device pointer of this GPU, say, or no device
    /// address of a device of the runtime); the Server checked pointer and size. Memory held
    /// anywhere in the process (`HeldRanges`) is refused after this check.
    virtual Status do_check_adopted(const AdoptedMemory& /*memory*/) { return {}; }
    /// The stream `id` of this device, or null when there is none.
    virtual DeviceStream* do_find_stream(StreamId id) = 0;
    /// `stream` was just held back `steps` more (within the bound): a backend that holds streams
    /// back itself enqueues the delay.
    virtual void do_delay(DeviceStream& /*stream*/, std::uint64_t /*steps*/) {}
    /// `stream`, whose work has run, is being destroyed: a backend frees what it holds for it.
    virtual void do_release_stream(DeviceStream& /*stream*/) {}
    /// A fault was armed (a backend that skips its lock while none is armed looks again).
    virtual void do_fault_armed() {}
    /// Whether the kernels of `accessor`, a device of the runtime, can reach this device's memory
    /// at all; enables the pair. Every device of a host backend can.
    virtual Status do_admit_peer(ServiceId /*accessor*/) { return {}; }
    /// Returns once every work of `window` (enqueued on `stream`) is settled.
    virtual Status do_settle_window(StreamId stream, const CaptureWindow& window) = 0;
    /// The graph a replay of the clean, closed `window` runs; a backend adds what it needs.
    virtual Result<CaptureGraph> do_make_graph(CaptureWindow& window);
    /// The graph of the clean, closed `window`, with what the backend built to replay it
    /// (`native`, or null): what `do_make_graph` returns.
    [[nodiscard]] CaptureGraph graph_of(CaptureWindow& window, std::shared_ptr<void> native) const;
    /// Whether every device may bind this device's shared memory without a grant.
    [[nodiscard]] virtual bool do_grants_all_peers() const { return false; }

    /// The device's loss, for a call that must not run on a lost device; success otherwise.
    /// Under the group's lock.
    [[nodiscard]] Status refuse_if_lost() const;
    /// Marks the device lost with `reason` (D1); true if this call lost it, false if it already
    /// was. Under the group's lock.
    bool mark_lost(const std::string& reason);
    /// The stream `id` among `streams`, or InvalidArgument naming it and this device.
    template <typename Stream>
    Result<Stream*> find_stream(std::deque<Stream>& streams, StreamId id) const {
        if (Stream* found = stream_in(streams, id)) {
            return found;
        }
        return no_such_stream(id);
    }
    /// The stream `id` among `streams` (stream `n` at index `n - 1`: ids are given in order and
    /// never reused), or null when there is none or it was destroyed.
    template <typename Stream>
    static Stream* stream_in(std::deque<Stream>& streams, StreamId id) {
        if (id.value == 0 || id.value > streams.size()) {
            return nullptr;
        }
        Stream& found = streams[id.value - 1];
        return found.destroyed ? nullptr : &found;
    }
    /// The stream `id` of this device as every backend keeps it, or InvalidArgument naming it.
    Result<DeviceStream*> device_stream(StreamId id);
    /// The error for a stream `id` this device does not have.
    [[nodiscard]] Error no_such_stream(StreamId id) const {
        return Error::invalid_argument(to_string(id) + " does not exist on " + to_string(service_));
    }
    /// The injected allocation failure due for an allocation of `size_bytes`, if one is (drawn
    /// here, after the Server's checks, so only an allocation that passed them counts). Under the
    /// group's lock.
    [[nodiscard]] std::optional<Error> allocation_fault(std::uint64_t size_bytes,
                                                        const MemoryManager& memory) {
        return faults_.allocation_fault_due(size_bytes, memory);
    }
    /// Whether a wait on `event` may be enqueued: InvalidArgument for an event no device of the
    /// runtime recorded (`next_event` is the sequence the next recording gets), DeviceLost for
    /// an event of a lost device. The recorder is asked through the directory.
    [[nodiscard]] Status check_event(const Event& event, std::uint64_t next_event) const;

    /// The device's id.
    const ServiceId service_;
    /// The device's claims and failure graph.
    ClaimStore claims_;
    /// The runtime's devices, each reached by its service id.
    const DeviceDirectory& directory_;
    /// The devices whose kernels may read this device's shared memory.
    std::set<ServiceId> granted_;
    /// Why the device is lost, once it is (D1): set once, under the group's lock, and never
    /// changed after; readable without the lock once `lost_flag_` is seen set.
    std::optional<Error> lost_;
    /// The faults injected into this device, and when each is due.
    FaultPlan faults_;

private:
    DeviceGroups& groups_;
    /// Where `groups_` keeps this device's group.
    const std::atomic<DeviceGroup*>& place_;
    /// `lost_` is set, readable without the lock.
    std::atomic<bool> lost_flag_{false};
    std::atomic<std::uint64_t> stream_count_{0};
    std::atomic<std::size_t> adopted_live_{0};
    /// Whether `stream` was destroyed; takes `destroyed_mutex_`.
    [[nodiscard]] bool destroyed(StreamId stream) const;
    /// The destroyed streams' ids. A leaf lock: `has_stream` takes it under no other.
    mutable std::mutex destroyed_mutex_;
    std::set<std::uint64_t> destroyed_;
    std::atomic<std::uint64_t> destroyed_count_{0};
};

}  // namespace tandem
