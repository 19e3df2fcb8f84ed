#pragma once

// The Server contract: what every backend does for one device. Clients validate; servers act.
//
// Everything that enqueues work returns once the work is queued: its outcome shows in the claims
// of its write set, and a later read fails if the work failed (rules C8, C13). Calls that wait
// (`read`, `sync`) return the failures they found. A server is also the owner its shared memory
// reports peer failures to (P4).

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

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tandem {

/// A launch as a server receives it: bindings already checked against the device.
struct LaunchRequest {
    /// The kernel's name, as reports give it.
    std::string kernel;
    /// The kernel: set by a typed launch, or by the backend once it found `kernel` by name. Null
    /// for a name no one registered (refused, C10), and for external work.
    const KernelEntry* entry = nullptr;
    /// Set for work tandem did not write (`Client::enqueue`): what runs instead of a kernel.
    ExternalRef external;
    /// Blocks and threads.
    LaunchConfig config;
    /// What the kernel binds, in the order its parameters take them.
    std::vector<KernelResource> resources;
    /// Its scalar arguments.
    KernelArgs args;
    /// The stream it is enqueued on.
    StreamId stream;
};

/// What a replay of a capture graph runs: the launches recorded, in enqueue order, and what the
/// backend built to replay them (a CUDA graph on GPUs; null where it replays the launches one by
/// one).
struct CapturedWork {
    /// The launches recorded, in enqueue order.
    std::vector<LaunchRequest> launches;
    /// The backend's own replay of them, or null.
    std::shared_ptr<void> native;
};

/// One device, as its client reaches it. The public calls are not virtual: each checks what every
/// backend must check, once, here (the device is not lost, the stream exists, the memory is this
/// device's, the launch is within the limits), then calls the backend's `do_` hook, which does
/// only what differs between backends. A call the caller got wrong changes nothing.
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
class Server : public PeerOwner {
public:
    /// Streams a device creates in its life, the default one included: a bound on what a
    /// program that leaks streams holds, not a size to plan for. Ids are never reused.
    static constexpr std::uint64_t max_streams = device_streams_max;

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
    /// granted) is enqueued and claims its outputs (C10).
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
    /// Fails iff some byte of some key is claimed (C6), or the device is lost (D1).
    [[nodiscard]] virtual Status check(std::span<const ClaimKey> keys) const = 0;

    /// Shared memory for the whole allocation `binding` names (P2: pinned while shared).
    virtual Result<PeerMemory> share(const BufferBinding& binding) = 0;
    /// Lets kernels on `accessor` bind this device's shared memory (P7).
    Status grant_peer_access(ServiceId accessor);
    /// Whether kernels on `accessor` may bind this device's shared memory.
    [[nodiscard]] virtual bool peer_access_granted(ServiceId accessor) const = 0;

    /// Opens a recording window on `stream` (C14); `InvalidArgument` if one is open.
    Status begin_capture(StreamId stream);
    /// Ends the window: its graph, or `LaunchRefused` when its work failed or was skipped (what
    /// it recorded is then claimed); `InvalidArgument` if none is open.
    Result<CaptureGraph> end_capture(StreamId stream);
    /// Enqueues a replay of `graph`, which this device recorded (`WrongService` otherwise).
    Status replay(const CaptureGraph& graph, StreamId stream);

    /// The device's memory figures now.
    [[nodiscard]] Result<MemoryUsage> memory_usage() const;
    /// Arms `fault` on this device: `InvalidArgument` for a probability outside [0, 1] (NaN
    /// included), an allocation counted from 0 or a delay past its bound; a loss with no delay
    /// loses the device at once (D1).
    Status inject(const Fault& fault);
    /// The sticky fault that lost this device, if it is lost (D1).
    [[nodiscard]] virtual std::optional<Error> lost() const = 0;

protected:
    /// What a backend shows to build handles, events, pending reads, peer memory and capture
    /// graphs (`RuntimeKey`).
    static RuntimeKey key() { return RuntimeKey{}; }
    /// Whether the device may be lost: a cheap test before `lost()`, which takes the lock.
    [[nodiscard]] virtual bool maybe_lost() const = 0;
    /// Whether `stream` is a stream of this device.
    [[nodiscard]] virtual bool has_stream(StreamId stream) const = 0;

private:
    /// The device's loss, or `InvalidArgument` for a stream it does not have; none otherwise.
    [[nodiscard]] std::optional<Error> refusal(StreamId stream) const;
    [[nodiscard]] std::optional<Error> loss() const;
    [[nodiscard]] std::optional<Error> foreign(const BufferBinding& binding) const;

    virtual Result<StreamId> do_create_stream() = 0;
    virtual Status do_destroy_stream(StreamId stream) = 0;
    virtual Result<Handle> do_allocate(std::uint64_t size_bytes, StreamId stream) = 0;
    virtual Result<Handle> do_adopt(AdoptedMemory memory) = 0;
    virtual Result<NativeView> do_native(const BufferBinding* binding, StreamId stream) = 0;
    virtual Status do_write(const BufferBinding& target, std::span<const std::byte> bytes,
                            StreamId stream) = 0;
    virtual Result<std::vector<std::byte>> do_read(const BufferBinding& source) = 0;
    virtual Result<std::vector<std::byte>> do_read_strided(const CopyDescriptor& source) = 0;
    /// Enqueues the read described by `state` into `into` on `stream` (checked), then the event
    /// after it.
    virtual Result<Event> do_read_async(const BufferBinding& source, std::span<std::byte> into,
                                        StreamId stream, std::shared_ptr<ReadBack> state) = 0;
    virtual Status do_copy(const KernelResource& source, const BufferBinding& target,
                           StreamId stream) = 0;
    virtual Status do_launch(LaunchRequest&& request) = 0;
    /// The call about to be made involves `other` (the owner of shared memory it binds or copies,
    /// the recorder of an event it waits on), which may be this device or a device of no runtime
    /// of this one: a backend that locks devices apart puts them together first.
    virtual void do_reach(ServiceId other) = 0;
    virtual Result<Event> do_record_event(StreamId stream) = 0;
    virtual Status do_wait_event(StreamId stream, const Event& event) = 0;
    virtual Status do_wait_host(const Event& event) = 0;
    virtual Result<bool> do_event_complete(const Event& event) = 0;
    virtual Status do_sync_stream(StreamId stream) = 0;
    virtual Status do_sync() = 0;
    virtual Status do_sync(std::span<const ClaimKey> keys) = 0;
    virtual Status do_begin_capture(StreamId stream) = 0;
    virtual Result<CaptureGraph> do_end_capture(StreamId stream) = 0;
    virtual Status do_replay(const CaptureGraph& graph, StreamId stream) = 0;
    [[nodiscard]] virtual MemoryUsage do_memory_usage() const = 0;
    virtual Status do_grant_peer_access(ServiceId accessor) = 0;
    virtual Status do_inject(const Fault& fault) = 0;
};

/// Whether a host backend can run `request`: its external work has a host callable, or its
/// kernel (found by name the first time, and kept in `request.entry`) has a host build.
bool host_runnable(LaunchRequest& request);

}  // namespace tandem
