#pragma once

// The user's front door for one device. A client checks everything a caller can get wrong
// before anything reaches a device: a handle of another device is refused with `WrongService`
// (rule P1), offsets and sizes are validated, shared memory of a peer is bound at its peer
// address. Only then does the server see the work.

#include "tandem/core/capture_graph.hpp"
#include "tandem/core/event.hpp"
#include "tandem/core/external_work.hpp"
#include "tandem/core/fault.hpp"
#include "tandem/core/foreign_memory.hpp"
#include "tandem/core/handle.hpp"
#include "tandem/core/host_kernels.hpp"
#include "tandem/core/kernel_resource.hpp"
#include "tandem/core/labels.hpp"
#include "tandem/core/memory_usage.hpp"
#include "tandem/core/result.hpp"

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tandem {

class Server;

/// Work tandem did not write (external_work.hpp): its name (for reports and injected faults),
/// the buffers it reads and writes, and how each backend runs it.
struct ExternalWork {
    /// What reports and injected kernel faults call it.
    std::string name;
    /// The buffers it reads and writes, in the order its callables receive them.
    std::vector<LaunchArgument> arguments;
    /// How each backend runs it.
    ExternalCallables run;
};

/// How `Client::allocate` places and names an allocation: `allocate(bytes, {.label = "weights"})`.
struct AllocateOptions {
    /// What reports call the allocation, beside its id: "memory #3 'weights'". Checked as
    /// `check_label` says; empty for none.
    std::string label{};
    /// The stream whose work must pass before its bytes are reused; the default stream when none.
    std::optional<StreamId> stream{};
};

/// One device's front door, the same on every backend. It checks what a caller can get wrong before
/// anything reaches the device (a handle of another device is `WrongService` (P1), sizes and
/// offsets are validated, a peer's shared memory is bound at its shared address) and passes the
/// call to the device's `Server`. A call refused here changes nothing.
class Client {
public:
    /// The client of `server`'s device. A runtime makes it (`Runtime::client`); the server is
    /// the backend's, out of a program's reach.
    explicit Client(std::shared_ptr<Server> server);

    /// The device this client is the door of.
    [[nodiscard]] ServiceId service() const;
    /// The stream every device has from the start, numbered 1.
    [[nodiscard]] StreamId default_stream() const { return StreamId{1}; }
    /// The sticky fault that lost this device (D1), if it is lost: every later call on it then
    /// fails with this `DeviceLost`.
    [[nodiscard]] std::optional<Error> lost() const;
    /// Whether kernels on `accessor` may bind this device's shared memory (P7): always for the
    /// device itself, otherwise once granted (`grant_peer_access`).
    [[nodiscard]] bool peer_access_granted(ServiceId accessor) const;

    /// A new stream of this device; `DeviceLost` when it is lost, `InvalidArgument` past
    /// `device_streams_max` created in the device's life.
    Result<StreamId> create_stream();
    /// `create_stream()` of a stream that reports name with `label` beside its number: "stream 2
    /// 'copy-in'", until it is destroyed. `InvalidArgument` for a label `check_label` refuses, or
    /// when `labels_live_max` labels are live; no stream is created then. An empty label is none.
    Result<StreamId> create_stream(std::string label);
    /// The label `stream` was created with; empty for none, or no such stream.
    [[nodiscard]] std::string label(StreamId stream) const;
    /// Waits for the work enqueued on `stream` and settles it (as `sync_stream`), then destroys
    /// the stream: later calls naming it are `InvalidArgument`, and its id is not reused.
    /// `InvalidArgument` for the default stream, a stream with an open capture window, or no such
    /// stream; nothing changes then.
    Status destroy_stream(StreamId stream);
    /// An allocation of `size_bytes` on the default stream: `InvalidArgument` for 0 or too many
    /// bytes, `OutOfMemory` (with figures) when it does not fit or an injected fault is due.
    Result<Handle> allocate(std::uint64_t size_bytes);
    /// An allocation of `size_bytes` on `stream`, whose work must pass before its bytes are reused;
    /// the errors of `allocate(size_bytes)`, and `InvalidArgument` for no such stream.
    Result<Handle> allocate(std::uint64_t size_bytes, StreamId stream);
    /// An allocation of `size_bytes` on `options.stream` (the default stream when none), which
    /// reports name with `options.label` beside its id ("memory #3 'weights'") for as long as any
    /// handle or binding holds it (`Handle::label`). The errors of `allocate(size_bytes, stream)`,
    /// and `InvalidArgument` for a label `check_label` refuses or when `labels_live_max` labels
    /// are live; nothing is allocated then.
    Result<Handle> allocate(std::uint64_t size_bytes, AllocateOptions options);
    /// Memory another allocator owns as a handle of this device, with claims like any other
    /// (`Server::adopt`); `memory.release` is called when the last handle and binding are gone.
    Result<Handle> adopt(AdoptedMemory memory);
    /// The raw pointer and size of `handle`'s bytes (this device's) and the native handle of
    /// `stream`, for another library. What it enqueues there is outside tandem's claims: order it
    /// with tandem's work on the same stream, or enqueue it as `ExternalWork` instead.
    Result<NativeView> native(const Handle& handle, StreamId stream);
    /// `native(handle, default_stream())`.
    Result<NativeView> native(const Handle& handle) { return native(handle, default_stream()); }
    /// Where this device's memory is and the native handle of `stream`, with no buffer.
    Result<NativeView> native(StreamId stream);
    /// Enqueues a write of `bytes` (copied now) into `target`'s bytes, on its stream (the stream it
    /// was allocated on, or the default stream once that one is destroyed): the write lands after
    /// the work before it and releases their claims (C3). `WrongService` for a handle
    /// of another device, `InvalidArgument` when the sizes differ.
    Status write(const Handle& target, std::span<const std::byte> bytes);
    /// Waits for the work before it and every writer of `source`'s bytes on any device, then
    /// returns the bytes, or why they cannot be read (C6): `Unwritten` naming the root failure and
    /// the work skipped on the way, `Several` when several failures claim them.
    Result<std::vector<std::byte>> read(const Handle& source);
    /// Enqueues on `stream` a copy of `source`'s bytes into `into` (exactly as many bytes) and
    /// returns at once; `wait` on the result then says whether the bytes may be used (C6). Ordered
    /// as a copy on `stream` is: after the stream's earlier work, and after other streams' work
    /// only through events. On CUDA, `into` in pinned memory makes the copy asynchronous; from
    /// pageable memory it completes before the call returns. `into` must outlive the wait.
    Result<PendingRead> read_async(const Handle& source, std::span<std::byte> into,
                                   StreamId stream);
    /// `read_async` on the default stream.
    Result<PendingRead> read_async(const Handle& source, std::span<std::byte> into) {
        return read_async(source, into, default_stream());
    }
    /// Blocks until `read`'s bytes are in its buffer: success iff every byte was written at the
    /// read's place in program order, otherwise the `Unwritten` (or `Several`) error a read
    /// gets, with the buffer zeroed. `InvalidArgument` for a read of another device.
    Status wait(const PendingRead& read);
    /// `read` of a strided view of `source`: `shape` elements of `elem_size_bytes`, `strides`
    /// elements apart, outermost first, in view order. `InvalidArgument` for a view that is
    /// malformed or reaches past the handle's bytes.
    Result<std::vector<std::byte>> read_strided(const Handle& source,
                                                std::vector<std::uint64_t> shape,
                                                std::vector<std::uint64_t> strides,
                                                std::uint64_t elem_size_bytes);
    /// `write` of a strided view of `target`: `bytes` holds the view's elements in view order
    /// (`shape` elements of `elem_size_bytes`, `strides` elements apart, outermost first). Lands
    /// on `target`'s stream and releases the claims of exactly the bytes the view covers (C3):
    /// the bytes between its elements keep theirs. `InvalidArgument`, changing nothing, for a view
    /// that is malformed, reaches past the handle's bytes or whose elements share bytes, and for
    /// a `bytes` of another size than the view's.
    Status write_strided(const Handle& target, std::vector<std::uint64_t> shape,
                         std::vector<std::uint64_t> strides, std::uint64_t elem_size_bytes,
                         std::span<const std::byte> bytes);
    /// Copies `source` (this device, or memory a peer shared) into `target` (this device), on
    /// `target`'s stream (the default stream once that one is destroyed).
    /// `InvalidArgument` for sizes that differ, or a source and target that share bytes (a GPU's
    /// copy gives overlapping bytes no order).
    Status copy(const Handle& source, const Handle& target);
    /// `copy` on `stream` instead of the target's stream.
    Status copy(const Handle& source, const Handle& target, StreamId stream);
    /// Launches the kernel registered as `kernel` on the default stream. A name no one
    /// registered is refused at once (C10: its outputs are claimed, its inputs stay readable),
    /// naming the registered kernels and the closest. Inline: a launch returns through each of
    /// its callers after the driver's deep call chain, and every level costs there.
    Status launch(std::string_view kernel, LaunchConfig config,
                  const std::vector<LaunchArgument>& arguments, KernelArgs args = {}) {
        return launch_entry(nullptr, kernel, config, arguments, args, default_stream(), nullptr);
    }
    /// `launch` on `stream`. Errors are the call's own: an argument of another device that was not
    /// shared (`WrongService`), a malformed tensor map, too many resources (`InvalidArgument`), a
    /// lost device. A kernel that fails after it was enqueued claims its outputs instead (C8); a
    /// launch the device refuses before it runs claims them too (C10).
    Status launch(std::string_view kernel, LaunchConfig config,
                  const std::vector<LaunchArgument>& arguments, KernelArgs args, StreamId stream) {
        return launch_entry(nullptr, kernel, config, arguments, args, stream, nullptr);
    }
    /// Launches the kernel functor `Kernel`, resolved at compile time: nothing is looked up by
    /// name. It runs on a host backend as it is; on CUDA its registration unit must be linked
    /// in (`TANDEM_REGISTER_CUDA_KERNEL`), or the launch is refused (C10) saying so.
    template <typename Kernel>
    Status launch(LaunchConfig config, const std::vector<LaunchArgument>& arguments,
                  KernelArgs args = {}) {
        return launch_entry(&kernel_entry<Kernel>, {}, config, arguments, args,
                            default_stream(), nullptr);
    }
    /// The typed launch of `Kernel` on `stream`.
    template <typename Kernel>
    Status launch(LaunchConfig config, const std::vector<LaunchArgument>& arguments,
                  KernelArgs args, StreamId stream) {
        return launch_entry(&kernel_entry<Kernel>, {}, config, arguments, args, stream, nullptr);
    }

    /// Enqueues `work` on `stream` under the rules of a launch: skipped, never called, when an
    /// input is claimed (C9); its writes claimed when it fails (C8), released when it succeeds
    /// (C3); refused (C10) on a backend it has no callable for. On CUDA it is called when the host
    /// knows its inputs are clean, so work whose inputs' producers are still running first waits
    /// for them.
    Status enqueue(ExternalWork&& work, StreamId stream);
    /// `enqueue` of a description the caller keeps, to enqueue again: its callables are copied,
    /// its arguments are not.
    Status enqueue(const ExternalWork& work, StreamId stream);
    /// `enqueue` on the default stream.
    Status enqueue(ExternalWork&& work) { return enqueue(std::move(work), default_stream()); }
    /// `enqueue` on the default stream of a description the caller keeps.
    Status enqueue(const ExternalWork& work) { return enqueue(work, default_stream()); }

    /// A point in `stream`'s work that a stream of any device can wait for.
    Result<Event> record_event(StreamId stream);
    /// Later work on `stream` waits for `event`, which may be another device's, or another
    /// rank's (`Job::lookup_event`): `InvalidArgument` for an event of no device of this runtime
    /// nor published to it, `DeviceLost` for one of a lost device. When a wait on another rank's
    /// event fails (its owner is lost, or it is not reached within
    /// `JoinOptions::event_wait_timeout`), the work `stream` ordered after it, and all later
    /// work of `stream`, is skipped with that error.
    Status wait_event(StreamId stream, const Event& event);
    /// Blocks the host until the work enqueued before `event` on its stream has run (the event
    /// may be another device's), and settles what that work decides. `InvalidArgument` for an
    /// event of no device of this runtime nor published to it, `DeviceLost` for one of a lost
    /// device; for another rank's event, `DeviceLost` naming the rank when it is lost first and
    /// `PeerUnreachable` past `JoinOptions::event_wait_timeout`. Failed work does not fail the
    /// wait: its bytes are claimed, and a read says why.
    Status wait(const Event& event);
    /// Whether the work enqueued before `event` has run, without waiting; the errors of `wait`.
    Result<bool> event_complete(const Event& event);
    /// Blocks the host until the work enqueued on `stream` so far has run and is settled, and
    /// what it needs of other streams; `InvalidArgument` for no such stream.
    Status sync_stream(StreamId stream);
    /// Waits for all work of this device, and for the work of other devices that it needs (work
    /// on memory it also touches), not for the rest; `DeviceLost` if it is or became lost. Failed
    /// work does not fail a sync: its bytes are claimed, and a read or `sync(handles)` says why.
    Status sync();
    /// Waits for this device's work and every writer of the handles' bytes on any device, then
    /// fails if any byte of them is claimed (C6).
    Status sync(std::span<const Handle> handles);

    /// `handle` with its allocation shared with the other devices (P2: pinned while shared).
    Result<Handle> share_with_peers(const Handle& handle);
    /// Lets kernels on `accessor` bind this device's shared memory (P7): `PeerUnreachable` for a
    /// device of no runtime of this process, or GPUs that cannot reach each other.
    Status grant_peer_access(ServiceId accessor);

    /// Opens a recording window on `stream` (C14); `InvalidArgument` if one is open. A window
    /// records at most `capture_launches_max` launches.
    Status begin_capture(StreamId stream);
    /// Ends the window on `stream`: the graph of what it recorded, or `LaunchRefused` when its work
    /// failed or was skipped (what it recorded is then claimed); `InvalidArgument` if none is open.
    Result<CaptureGraph> end_capture(StreamId stream);
    /// Enqueues a replay of `graph` on `stream`; `WrongService` for a graph another device
    /// recorded.
    Status replay(const CaptureGraph& graph, StreamId stream);

    /// The device's memory figures now; `DeviceLost` on a lost device (D1).
    [[nodiscard]] Result<MemoryUsage> memory_usage() const;
    /// Arms `fault` on this device (`Server::inject`): the way tests and scenarios make failures
    /// happen on purpose.
    Status inject(const Fault& fault);

private:
    /// A launch of `entry` (typed), of `external` work, or of the kernel registered as `kernel`
    /// when both are null. The name is copied into the thread's reused request: a name past the
    /// string's inline capacity costs no heap call once warm.
    Status launch_entry(const KernelEntry* entry, std::string_view kernel, LaunchConfig config,
                        const std::vector<LaunchArgument>& arguments, KernelArgs args,
                        StreamId stream, const ExternalCallables* external);
    Status check_local(const Handle& handle) const;
    Result<KernelResource> bind(const LaunchArgument& argument) const;
    /// Whether `argument` is a plain buffer of this device: bound as it is, with nothing to check.
    [[nodiscard]] bool local_buffer(const LaunchArgument& argument) const {
        return argument.handle.service() == service() && !argument.tensor_map &&
               !argument.handle.empty();
    }

    std::shared_ptr<Server> server_;
};

}  // namespace tandem
