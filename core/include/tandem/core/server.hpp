#pragma once

// The Server contract: what every backend does for one device. Clients validate; servers act.
//
// Everything that enqueues work returns once the work is queued: its outcome shows in the claims
// of its write set, and a later read fails if the work failed (rules C8, C13). Calls that wait
// (`read`, `sync`) return the failures they found. A server is also the owner its shared memory
// reports peer failures to (P4).

#include "tandem/core/copy_descriptor.hpp"
#include "tandem/core/fault.hpp"
#include "tandem/core/handle.hpp"
#include "tandem/core/kernel.hpp"
#include "tandem/core/kernel_resource.hpp"
#include "tandem/core/memory_manager.hpp"
#include "tandem/core/peer_memory.hpp"
#include "tandem/core/result.hpp"

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace tandem {

/// A point in one stream's work. Waiting on it orders later work after everything before it.
struct Event {
    ServiceId device;
    StreamId stream;
    std::uint64_t sequence = 0;
};

/// A launch as a server receives it: bindings already checked against the device.
struct LaunchRequest {
    std::string kernel;
    LaunchConfig config;
    std::vector<KernelResource> resources;
    KernelArgs args;
    StreamId stream;
};

/// A recorded sequence of launches that can be replayed (rule C14). The write set is
/// deduplicated by claim key.
class CaptureGraph {
public:
    /// Only a backend builds one, from a window it recorded (`RuntimeKey`).
    CaptureGraph(RuntimeKey, ServiceId device, std::vector<LaunchRequest> launches,
                 std::vector<ClaimKey> write_set)
        : device_(device), launches_(std::move(launches)), write_set_(std::move(write_set)) {}

    [[nodiscard]] ServiceId device() const { return device_; }
    [[nodiscard]] const std::vector<LaunchRequest>& launches() const { return launches_; }
    [[nodiscard]] const std::vector<ClaimKey>& write_set() const { return write_set_; }
    /// What the backend built to replay the window (a CUDA graph on GPUs); null where it
    /// replays the recorded launches one by one.
    [[nodiscard]] const std::shared_ptr<void>& native() const { return native_; }
    void set_native(std::shared_ptr<void> native) { native_ = std::move(native); }

private:
    ServiceId device_;
    std::vector<LaunchRequest> launches_;
    std::vector<ClaimKey> write_set_;
    std::shared_ptr<void> native_;
};

class Server : public PeerOwner {
public:
    [[nodiscard]] StreamId default_stream() const { return StreamId{1}; }
    virtual Result<StreamId> create_stream() = 0;

    virtual Result<Handle> allocate(std::uint64_t size_bytes, StreamId stream) = 0;
    /// Enqueues a host-to-device write of `bytes` (copied now) into the binding's bytes.
    virtual Status write(const BufferBinding& target, std::span<const std::byte> bytes,
                         StreamId stream) = 0;
    /// Waits for the work before it, then returns the bytes, or why they cannot be read (C6).
    virtual Result<std::vector<std::byte>> read(const BufferBinding& source) = 0;
    virtual Result<std::vector<std::byte>> read_strided(const CopyDescriptor& source) = 0;
    /// Enqueues a copy into `target` (this device) from `source`: a buffer of this device or
    /// shared memory of a peer.
    virtual Status copy(const KernelResource& source, const BufferBinding& target,
                        StreamId stream) = 0;
    /// Enqueues `request`. The server moves out what it keeps; the caller then clears the rest,
    /// and may reuse the request's storage for its next launch.
    virtual Status launch(LaunchRequest&& request) = 0;

    virtual Result<Event> record_event(StreamId stream) = 0;
    /// Later work on `stream` waits for `event`, which may belong to another device.
    virtual Status wait_event(StreamId stream, const Event& event) = 0;
    /// Waits for all work of this device.
    virtual Status sync() = 0;
    /// Waits for all work of this device and for every writer of `keys` on any device, then
    /// fails iff some byte of some key is claimed (C6), as a read of them would.
    virtual Status sync(std::span<const ClaimKey> keys) = 0;
    /// Fails iff some byte of some key is claimed (C6), or the device is lost (D1).
    [[nodiscard]] virtual Status check(std::span<const ClaimKey> keys) const = 0;

    /// Shared memory for the whole allocation `binding` names (P2: pinned while shared).
    virtual Result<PeerMemory> share(const BufferBinding& binding) = 0;
    /// Lets kernels on `accessor` bind this device's shared memory (P7).
    virtual Status grant_peer_access(ServiceId accessor) = 0;
    [[nodiscard]] virtual bool peer_access_granted(ServiceId accessor) const = 0;

    virtual Status begin_capture(StreamId stream) = 0;
    virtual Result<CaptureGraph> end_capture(StreamId stream) = 0;
    virtual Status replay(const CaptureGraph& graph, StreamId stream) = 0;

    [[nodiscard]] virtual MemoryUsage memory_usage() const = 0;
    virtual Status inject(const Fault& fault) = 0;
    /// The sticky fault that lost this device, if it is lost (D1).
    [[nodiscard]] virtual std::optional<Error> lost() const = 0;
};

}  // namespace tandem
