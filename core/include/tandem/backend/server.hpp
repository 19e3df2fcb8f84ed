#pragma once

// The Server contract: what every backend does for one device. Clients validate; servers act.
// One class holds it all: the checked entry points a client calls, the state every backend's
// device keeps the same way (its service id, claim store, loss, grants and faults), and the
// private `do_` hooks a backend implements, declared in the backend's own header.
//
// Everything that enqueues work returns once the work is queued: its outcome shows in the claims
// of its write set, and a later read fails if the work failed (rules C8, C13). Calls that wait
// (`read`, `sync`) return the failures they found. A server is also the owner its shared memory
// reports peer failures to (P4).

#include "tandem/backend/claim_store.hpp"
#include "tandem/backend/detail/device_seed.hpp"
#include "tandem/backend/device_directory.hpp"
#include "tandem/backend/device_groups.hpp"
#include "tandem/backend/device_stream.hpp"
#include "tandem/backend/fault_plan.hpp"
#include "tandem/backend/launch_request.hpp"
#include "tandem/backend/memory_manager.hpp"
#include "tandem/core/capture_graph.hpp"
#include "tandem/core/copy_descriptor.hpp"
#include "tandem/core/event.hpp"
#include "tandem/core/external_work.hpp"
#include "tandem/core/fault.hpp"
#include "tandem/core/foreign_memory.hpp"
#include "tandem/core/handle.hpp"
#include "tandem/core/kernel.hpp"
#include "tandem/core/kernel_entry.hpp"
#include "tandem/core/kernel_resource.hpp"
#include "tandem/core/memory_usage.hpp"
#include "tandem/core/peer_memory.hpp"
#include "tandem/core/result.hpp"

#include <atomic>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tandem {

/// Memory another process shares, as `Server::import_shared` takes it.
struct ImportedShare {
    /// The owning device, of another process.
    ServiceId owner;
    /// The allocation as its owner knows it: id, device address, size and stream.
    AllocationInfo allocation;
    /// Answers what the owner's claims say of it (`PeerMemory::failure()`).
    std::weak_ptr<PeerOwner> owner_view;
    /// Called once, when the last reference to the memory in this process is gone.
    std::function<void()> released;
};

/// One device, as its client reaches it. The public calls are not virtual: each checks what every
/// backend must check, once, here (the device is not lost, the stream exists, the memory is this
/// device's, the launch is within the limits), then calls the backend's `do_` hook, which does
/// only what differs between backends. A call the caller got wrong changes nothing. What every
/// device keeps the same way (its service id, claims, loss, grants and faults) is kept here too;
/// a backend derives from it and implements the `do_` hooks (the reference backend, in
/// `core/src/reference/`, is the shortest example).
///
/// Error kinds, and when (every call on a lost device returns its `DeviceLost` first):
/// - `InvalidArgument`: a stream that does not exist, a launch over `max_launch_resources`
///   resources or `max_launch_tensor_maps` tensor maps, a capture window already open or not
///   open, an event of no device of this runtime, an allocation of 0 or too many bytes.
/// - `WrongService`: memory of another device that was not shared with peers (P1).
/// - `PeerUnreachable`: shared memory or an event whose owner is no device of this runtime, or
///   GPUs that cannot reach each other.
/// - `OutOfMemory`: an allocation (or an event on a GPU) the device has no room for, with figures.
/// - `Unwritten`, `Several`: a read or a sync naming bytes that failed or skipped work claims.
/// - `LaunchRefused`: ending a capture window whose work failed (C14).
/// - `TornDown`: a wait the simulator found can never be satisfied (a deadlock).
/// Work that fails after it was enqueued does not fail its call: its outputs are claimed, and a
/// later read says why (C8).
class Server : public PeerOwner, public std::enable_shared_from_this<Server> {
public:
    /// Streams a device creates in its life, the default one included: a bound on what a
    /// program that leaks streams holds, not a size to plan for. Ids are never reused.
    static constexpr std::uint64_t max_streams = device_streams_max;

    /// Forgets the labels of the device's streams (labels.hpp): they name nothing once it goes.
    ~Server() override;

    /// The stream every device has from the start, numbered 1.
    [[nodiscard]] StreamId default_stream() const { return StreamId{1}; }
    /// The stream a call that names none uses for memory allocated on `stream`: that stream, or
    /// the default stream once it is destroyed (destroying it ran and settled its work first, so
    /// nothing enqueued afterwards can overtake that work).
    [[nodiscard]] StreamId stream_or_default(StreamId stream) const {
        return has_stream(stream) ? stream : default_stream();
    }
    /// A new stream of this device; `InvalidArgument` past `max_streams`.
    Result<StreamId> create_stream();
    /// Waits for the work enqueued on `stream` (as `sync_stream`), then destroys it: later calls
    /// naming it are `InvalidArgument`. `InvalidArgument` for the default stream, a stream with
    /// an open capture window, or no such stream; nothing changes then.
    Status destroy_stream(StreamId stream);
    /// An allocation of `size_bytes` on `stream`. `InvalidArgument` for 0 bytes, more than the
    /// largest allocation, or no such stream; `OutOfMemory` (with figures) when it does not fit or
    /// an injected allocation fault is due.
    Result<Handle> allocate(std::uint64_t size_bytes, StreamId stream);
    /// `memory` as a handle of this device, with claims like any allocation's (its bytes read as
    /// written: the adopter wrote them). `InvalidArgument` for a null pointer, 0 bytes, a range
    /// that wraps or is larger than the largest allocation, or (on CUDA) memory that is not this
    /// GPU's; nothing is taken then.
    Result<Handle> adopt(AdoptedMemory memory);
    /// The raw pointer of `binding`'s bytes (none for a null binding: where the device's memory
    /// is, and the stream) and the native handle of `stream`, for interop. `WrongService` for
    /// another device's memory (P1), `InvalidArgument` for no such stream.
    Result<NativeView> native(const BufferBinding* binding, StreamId stream);
    /// Enqueues a host-to-device write of `bytes` (copied now) into the binding's bytes.
    Status write(const BufferBinding& target, std::span<const std::byte> bytes, StreamId stream);
    /// Waits for the work before it and for every writer of its bytes on any device, then returns
    /// the bytes, or why they cannot be read (C6: `Unwritten`, `Several`).
    Result<std::vector<std::byte>> read(const BufferBinding& source);
    /// Enqueues on `stream` a copy of the binding's bytes into `into` (as many bytes as the
    /// binding has), and returns at once; waiting for the returned read (`wait`) says whether
    /// the bytes may be used. The read is ordered on `stream` as a copy is: after the stream's
    /// earlier work, and after work of other streams only through events. `InvalidArgument` for
    /// a buffer of another size or no such stream, `WrongService` for another device's memory.
    Result<PendingRead> read_async(const BufferBinding& source, std::span<std::byte> into,
                                   StreamId stream);
    /// Blocks until `read`'s bytes are in its buffer, and returns success iff they were all
    /// written at the read's place in program order (C6); otherwise its `Unwritten` or `Several`
    /// error, and the buffer is zeroed: bytes failed work should have written are never handed
    /// out.
    Status wait(const PendingRead& read);
    /// `read` of the elements a strided view covers, in view order.
    Result<std::vector<std::byte>> read_strided(const CopyDescriptor& source);
    /// Enqueues a copy into `target` (this device) from `source`: a buffer of this device or
    /// shared memory of a peer (no grant needed: a copy is not a kernel).
    Status copy(const KernelResource& source, const BufferBinding& target, StreamId stream);
    /// Enqueues `request`. The server moves out what it keeps; the caller then clears the rest,
    /// and may reuse the request's storage for its next launch. A launch the device refuses
    /// before it runs (an unknown kernel, a configuration past a GPU's limits, shared memory never
    /// granted) is enqueued and claims its outputs (C10). Every launch the device takes draws its
    /// injected kernel fault here, in program order (a launch of nothing and one skipped later
    /// too); a launch of nothing the backend can run then returns at once (C10: it changes no
    /// claim, and a capture window does not record it). `PeerUnreachable` for shared memory of
    /// no device of this runtime; that launch is not taken and draws nothing.
    Status launch(LaunchRequest&& request);

    /// A point in `stream`'s work that another stream, of any device, can wait for.
    Result<Event> record_event(StreamId stream);
    /// Later work on `stream` waits for `event`, which may belong to another device.
    /// `InvalidArgument` for an event of no device of this runtime, `DeviceLost` for an event of
    /// a lost device.
    Status wait_event(StreamId stream, const Event& event);
    /// Blocks the host until the work enqueued before `event` on its stream has run; `event` may
    /// be another device's. What that work decides is then settled as far as it can be.
    /// `InvalidArgument` for an event of no device of this runtime, `DeviceLost` for one of a lost
    /// device.
    Status wait(const Event& event);
    /// Whether the work enqueued before `event` has run, without waiting; the errors of `wait`.
    Result<bool> event_complete(const Event& event);
    /// Blocks the host until the work enqueued on `stream` so far has run and is settled, with
    /// what it needs of other streams and devices and nothing more; `InvalidArgument` for no such
    /// stream.
    Status sync_stream(StreamId stream);
    /// Waits for all work of this device, and for what it needs of other devices (work they
    /// run on memory it also touches), and for nothing else; `DeviceLost` if it is (or became)
    /// lost.
    Status sync();
    /// Waits for all work of this device and for every writer of `keys` on any device, then
    /// fails iff some byte of some key is claimed (C6), as a read of them would.
    Status sync(std::span<const ClaimKey> keys);
    /// DeviceLost once lost (D1), otherwise the first claim on `keys` (C9).
    [[nodiscard]] Status check(std::span<const ClaimKey> keys) const;

    /// The memory of `binding` as peers bind it, pinned while a peer binding holds it (P2).
    /// Refused when the device is lost or the binding is another device's (P1).
    Result<PeerMemory> share(const BufferBinding& binding);
    /// Memory a device of another process shares (a peer rank of a job, `Job::lookup`): a handle
    /// that names it as its owner does (its service, memory id, address and size) and binds in
    /// launches and copies on this device as shared memory does (P1 to P7), its claims asked of
    /// the owner through the directory. `share.owner` answers `PeerMemory::failure()`;
    /// `share.released` is called once the last reference in this process is gone (P2: the owner
    /// counts this process's pin until then). `PeerUnreachable` when the directory does not reach
    /// the owner, `DeviceLost` on a lost device.
    Result<Handle> import_shared(ImportedShare share);
    /// An event a device of another process recorded (a peer rank of a job,
    /// `Job::lookup_event`): the point `sequence` of `owner`'s stream `stream`, which this
    /// device's streams and the host wait for as for an event of this runtime, through the
    /// directory (`DeviceDirectory::event_reached`). `PeerUnreachable` when the directory does
    /// not reach the owner, `InvalidArgument` for an event that names no work.
    Result<Event> import_event(ServiceId owner, StreamId stream, std::uint64_t sequence);
    /// Lets kernels on `accessor` bind this device's shared memory (P7): `PeerUnreachable` for a
    /// device the runtime does not reach, or one the backend does not admit (`do_admit_peer`:
    /// GPUs that cannot reach each other). Joins the two devices' groups first.
    Status grant_peer_access(ServiceId accessor);
    /// Whether kernels on `accessor` may bind this device's shared memory: always for the device
    /// itself, otherwise once granted (or when the backend grants every peer).
    [[nodiscard]] bool peer_access_granted(ServiceId accessor) const;

    /// Opens a recording window on `stream` (C14); `InvalidArgument` if one is open.
    Status begin_capture(StreamId stream);
    /// Ends the window once its work is settled: its graph, or `LaunchRefused` when its work
    /// failed or was skipped (what it recorded is then claimed); `InvalidArgument` if none is
    /// open.
    Result<CaptureGraph> end_capture(StreamId stream);
    /// Enqueues a replay of `graph`, which this device recorded (`WrongService` otherwise). Each
    /// launch it replays draws its injected kernel fault, in order, as a launch does.
    Status replay(const CaptureGraph& graph, StreamId stream);

    /// The device's memory figures now.
    [[nodiscard]] Result<MemoryUsage> memory_usage() const;
    /// Arms `fault` on this device (`FaultPlan::arm`): `InvalidArgument` for a probability
    /// outside [0, 1] (NaN included), an allocation counted from 0 or a delay past its bound; a
    /// loss with no delay loses the device at once (D1). The same on every backend.
    Status inject(const Fault& fault);
    /// The sticky fault that lost this device, if it is lost (D1). Set once and never changed:
    /// readable without the lock, so a device of another group can ask.
    [[nodiscard]] std::optional<Error> lost() const;

    // What a backend and its pipeline reach of a device (not a client: a program reaches a
    // device through its `Client` only).
    [[nodiscard]] ServiceId service() const final { return service_; }
    /// The report a read of `key` would fail with now (the failure claiming some byte of it),
    /// or the device's loss; none when every byte is unclaimed. Takes the group's lock.
    [[nodiscard]] std::optional<Error> claim_on(const ClaimKey& key) const final;
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
    /// `directory` reaches the runtime's devices (this one too); `groups` places them in the
    /// groups whose locks serialise the backend's state, and holds this device already.
    /// `runtime_seed` seeds the device's injected faults (`FaultPlan`). `memory` is the device's
    /// memory manager, a member of the backend's device constructed after this base: it is only
    /// stored here.
    Server(ServiceId service, DeviceGroups& groups, DeviceDirectory& directory,
           std::uint64_t runtime_seed, const MemoryManager& memory)
        : service_(service),
          claims_(service),
          directory_(directory),
          faults_(detail::device_seed(runtime_seed, service.device_index)),
          groups_(groups),
          place_(groups.place_of(service.device_index)),
          memory_manager_(memory) {}

    /// What a backend shows to build handles, events, pending reads, peer memory and capture
    /// graphs (`RuntimeKey`).
    static RuntimeKey key() { return RuntimeKey{}; }
    /// Whether the device may be lost: a cheap test before `lost()`.
    [[nodiscard]] bool maybe_lost() const { return lost_flag_.load(std::memory_order_acquire); }
    /// Stream ids run from 1 and are never reused: an id is valid iff it is at most the count,
    /// which a backend sets (`set_stream_count`) as it creates them, and was not destroyed. The
    /// common case, no stream ever destroyed, takes no lock.
    [[nodiscard]] bool has_stream(StreamId stream) const {
        if (stream.value == 0 || stream.value > stream_count_.load(std::memory_order_acquire)) {
            return false;
        }
        return destroyed_count_.load(std::memory_order_acquire) == 0 || !destroyed(stream);
    }
    /// `InvalidArgument` when the device has created `max_streams` streams; none otherwise.
    [[nodiscard]] std::optional<Error> no_room_for_stream() const;
    /// Sets how many streams exist; a backend calls it as it creates them.
    void set_stream_count(std::uint64_t count) {
        stream_count_.store(count, std::memory_order_release);
    }
    /// The group the device is in now; it stays so while its lock is held.
    [[nodiscard]] DeviceGroup& current_group() const {
        return *place_.load(std::memory_order_acquire);
    }
    /// The graph of the clean, closed `window`, with what the backend built to replay it
    /// (`native`, or null): what `do_make_graph` returns.
    [[nodiscard]] CaptureGraph graph_of(CaptureWindow& window, std::shared_ptr<void> native) const;
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
    /// here, after the checks, so only an allocation that passed them counts). Under the group's
    /// lock.
    [[nodiscard]] std::optional<Error> allocation_fault(std::uint64_t size_bytes) {
        return faults_.allocation_fault_due(size_bytes, memory_manager_);
    }
    /// Whether a wait on `event` may be enqueued: InvalidArgument for an event no device of the
    /// runtime recorded (`next_event` is the sequence the next recording gets), DeviceLost for
    /// an event of a lost device. The recorder is asked through the directory.
    [[nodiscard]] Status check_event(const Event& event, std::uint64_t next_event) const;
    /// Whether `event` was recorded by a device of another process that the directory reaches
    /// (a job's other rank): a wait on it asks the directory, not this runtime's events.
    [[nodiscard]] bool of_other_process(const Event& event) const;

    /// The device's id.
    const ServiceId service_;
    /// The device's claims and failure graph.
    ClaimStore claims_;
    /// The runtime's devices, each reached by its service id.
    DeviceDirectory& directory_;
    /// The devices whose kernels may read this device's shared memory.
    std::set<ServiceId> granted_;
    /// Why the device is lost, once it is (D1): set once, under the group's lock, and never
    /// changed after; readable without the lock once `lost_flag_` is seen set.
    std::optional<Error> lost_;
    /// The faults injected into this device, and when each is due.
    FaultPlan faults_;

    /// What a sync waits for (`do_settle`).
    struct SyncScope {
        /// Which work a sync waits for.
        enum class Kind : std::uint8_t {
            /// The work enqueued on `stream` so far, and what it needs.
            Stream,
            /// All work of the device, and what it needs of other devices.
            Device,
            /// All work of the device, and every writer of `keys` on any device.
            Writers,
        };
        /// Which work.
        Kind kind = Kind::Device;
        /// The stream, for `Kind::Stream`.
        StreamId stream{};
        /// The bytes whose writers are waited for, for `Kind::Writers`.
        std::span<const ClaimKey> keys{};
    };

private:
    friend class LocalDirectory;  // Counts the work the device's pipeline enqueues.

    // The checks every call makes, here once.
    /// The device's loss, or `InvalidArgument` for a stream it does not have; none otherwise.
    [[nodiscard]] std::optional<Error> refusal(StreamId stream) const;
    [[nodiscard]] std::optional<Error> loss() const;
    [[nodiscard]] std::optional<Error> foreign(const BufferBinding& binding) const;
    /// Joins this device's group with `other`'s, a device of the runtime (`DeviceGroups::join`),
    /// when a call involves it (the owner of shared memory it binds or copies, the recorder of
    /// an event it waits on).
    void reach(ServiceId other);
    /// Waits for `stream`'s work, then destroys it (checked to exist and not to be the default
    /// stream): `InvalidArgument` while it has an open capture window.
    Status destroy_checked(StreamId stream);
    /// `adopt` once its arguments are checked: a handle of `memory` on the default stream,
    /// whose release sink forgets its claims and calls `memory.release` when the last reference
    /// goes; the backend checks the memory first (`do_check_adopted`).
    Result<Handle> adopt_checked(AdoptedMemory memory);
    /// `inject` on a device that is not lost.
    Status arm(const Fault& fault);
    /// Takes the group's lock into `held` when an injected kernel fault is armed, and says whether
    /// it did: a launch then draws under the lock, and holds it until the backend has enqueued the
    /// launch (its hook takes the lock again), so launches of several threads are enqueued in the
    /// order they drew. With none armed, the common case, it takes no lock.
    bool hold_to_draw(std::optional<GroupLock>& held) const;
    /// The injected kernel fault due for a launch of `kernel`, if one is (`FaultPlan`); under the
    /// group's lock.
    std::optional<InjectedFault> draw_kernel_fault(std::string_view kernel);
    /// One unit of work of this device is about to be enqueued on its group's pipeline, which
    /// holds the lock (`DeviceDirectory::count_work`): an injected loss due at it loses the device
    /// first (`do_lose_now`), so that it and every later unit fail with the loss (D1). Inline: it
    /// is asked for every unit of work, and with no loss armed it is one test.
    void count_work() {
        if (faults_.loss_armed() && faults_.loss_due()) [[unlikely]] {
            do_lose_now();
        }
    }
    /// Whether `stream` was destroyed; takes `destroyed_mutex_`.
    [[nodiscard]] bool destroyed(StreamId stream) const;

    // The contract: what a backend implements, declared in its own header (`override`). Each is
    // called once the entry point that calls it has made its checks (the device is not lost, the
    // stream exists, the memory is this device's, the launch is within the limits); the errors
    // each may return are those of its entry point. Work a hook enqueues is recorded as a `Work`
    // of its group's `SettlePipeline`, which settles it by the rules.
    virtual Result<StreamId> do_create_stream() = 0;
    /// The stream `id` of this device, or null when there is none.
    virtual DeviceStream* do_find_stream(StreamId id) = 0;
    virtual Result<Handle> do_allocate(std::uint64_t size_bytes, StreamId stream) = 0;
    virtual Result<NativeView> do_native(const BufferBinding* binding, StreamId stream) = 0;
    virtual Status do_write(const BufferBinding& target, std::span<const std::byte> bytes,
                            StreamId stream) = 0;
    virtual Result<std::vector<std::byte>> do_read(const BufferBinding& source) = 0;
    virtual Result<std::vector<std::byte>> do_read_strided(const CopyDescriptor& source) = 0;
    /// Enqueues the read described by `state` into `into` on `stream`, then the event after it.
    virtual Result<Event> do_read_async(const BufferBinding& source, std::span<std::byte> into,
                                        StreamId stream, std::shared_ptr<ReadBack> state) = 0;
    virtual Status do_copy(const KernelResource& source, const BufferBinding& target,
                           StreamId stream) = 0;
    /// Enqueues `request` as the Server admitted it: its kernel looked up (`request.entry`), its
    /// injected fault drawn (`request.injected`), and never a launch of nothing it can run.
    virtual Status do_launch(LaunchRequest&& request) = 0;
    /// Whether this backend can run `request` (its kernel has a build for it, or its external
    /// work a callable); one it cannot is still enqueued, and refused (C10). Takes no lock.
    [[nodiscard]] virtual bool do_can_run(const LaunchRequest& request) const = 0;
    /// Enqueues a replay of `graph`. `injected` holds the injected kernel fault drawn for each of
    /// its launches, in order, or is empty when none was armed (then none is due).
    virtual Status do_replay(const CaptureGraph& graph, StreamId stream,
                             std::span<const std::optional<InjectedFault>> injected) = 0;
    virtual Result<Event> do_record_event(StreamId stream) = 0;
    virtual Status do_wait_event(StreamId stream, const Event& event) = 0;
    /// Whether the work before `event` has run; with `block`, once it has (true).
    virtual Result<bool> do_event_done(const Event& event, bool block) = 0;
    /// Returns once the work of `scope` has run and is settled; an error only when that cannot
    /// be (a deadlock the backend found, say). The entry point then checks loss and claims.
    virtual Status do_settle(const SyncScope& scope) = 0;
    /// Returns once every work of `window` (enqueued on `stream`) is settled; under the lock.
    virtual Status do_settle_window(StreamId stream, const CaptureWindow& window) = 0;
    /// An injected loss with no delay: learn what can be learned of pending work, then lose the
    /// device; under the lock.
    virtual void do_lose_now() = 0;

    // Optional hooks, under the group's lock: what a backend may add to what the base does.
    /// Whether this device can take `memory` (a device pointer of this GPU, say, or no device
    /// address of a device of the runtime); pointer and size are checked. Memory held anywhere
    /// in the process (`HeldRanges`) is refused after this check.
    virtual Status do_check_adopted(const AdoptedMemory& /*memory*/) { return {}; }
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
    /// The graph a replay of the clean, closed `window` runs; a backend adds what it needs.
    virtual Result<CaptureGraph> do_make_graph(CaptureWindow& window);
    /// Whether every device may bind this device's shared memory without a grant.
    [[nodiscard]] virtual bool do_grants_all_peers() const { return false; }

    DeviceGroups& groups_;
    /// Where `groups_` keeps this device's group.
    const std::atomic<DeviceGroup*>& place_;
    /// The backend's memory manager, for `memory_usage`.
    const MemoryManager& memory_manager_;
    /// `lost_` is set, readable without the lock.
    std::atomic<bool> lost_flag_{false};
    /// Whether an injected kernel fault may still hit (`FaultPlan::kernel_faults_armed`), readable
    /// without the lock; set under it, as faults are armed and spent.
    std::atomic<bool> kernel_faults_armed_{false};
    std::atomic<std::uint64_t> stream_count_{0};
    std::atomic<std::size_t> adopted_live_{0};
    /// The destroyed streams' ids. A leaf lock: `has_stream` takes it under no other.
    mutable std::mutex destroyed_mutex_;
    std::set<std::uint64_t> destroyed_;
    std::atomic<std::uint64_t> destroyed_count_{0};
};

/// Whether a host backend can run `request`: its external work has a host callable, or its
/// kernel (`request.entry`, which the Server found by name) has a host build.
bool host_runnable(const LaunchRequest& request);

}  // namespace tandem
