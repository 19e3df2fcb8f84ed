#pragma once

// The user's front door for one device. A client checks everything a caller can get wrong
// before anything reaches a device: a handle of another device is refused with `WrongService`
// (rule P1), offsets and sizes are validated, shared memory of a peer is bound at its peer
// address. Only then does the server see the work.

#include "tandem/core/host_kernels.hpp"
#include "tandem/core/server.hpp"

#include <memory>
#include <span>
#include <vector>

namespace tandem {

/// A resource of a launch, as a user names it: a handle (of this device, or shared memory of a
/// peer), optionally viewed as a tensor map, and the access the kernel needs.
struct LaunchArgument {
    Handle handle;
    AccessMode access = AccessMode::ReadWrite;
    std::optional<TensorMapDescriptor> tensor_map;
};

/// Work tandem did not write (external_work.hpp): its name (for reports and injected faults),
/// the buffers it reads and writes, and how each backend runs it.
struct ExternalWork {
    std::string name;
    std::vector<LaunchArgument> arguments;
    ExternalCallables run;
};

class Client {
public:
    explicit Client(std::shared_ptr<Server> server);

    [[nodiscard]] ServiceId service() const;
    [[nodiscard]] StreamId default_stream() const { return server_->default_stream(); }
    [[nodiscard]] Server& server() const { return *server_; }

    Result<StreamId> create_stream();
    Result<Handle> allocate(std::uint64_t size_bytes);
    Result<Handle> allocate(std::uint64_t size_bytes, StreamId stream);
    /// Memory another allocator owns as a handle of this device, with claims like any other
    /// (`Server::adopt`); `memory.release` is called when the last handle and binding are gone.
    Result<Handle> adopt(AdoptedMemory memory);
    /// The raw pointer and size of `handle`'s bytes (this device's) and the native handle of
    /// `stream`, for another library. What it enqueues there is outside tandem's claims: order it
    /// with tandem's work on the same stream, or enqueue it as `ExternalWork` instead.
    Result<NativeView> native(const Handle& handle, StreamId stream);
    Result<NativeView> native(const Handle& handle) { return native(handle, default_stream()); }
    /// Where this device's memory is and the native handle of `stream`, with no buffer.
    Result<NativeView> native(StreamId stream) { return server_->native(nullptr, stream); }
    Status write(const Handle& target, std::span<const std::byte> bytes);
    Result<std::vector<std::byte>> read(const Handle& source);
    Result<std::vector<std::byte>> read_strided(const Handle& source,
                                                std::vector<std::uint64_t> shape,
                                                std::vector<std::uint64_t> strides,
                                                std::uint64_t elem_size_bytes);
    /// Copies `source` (this device, or memory a peer shared) into `target` (this device).
    Status copy(const Handle& source, const Handle& target);
    Status copy(const Handle& source, const Handle& target, StreamId stream);
    /// Launches the kernel registered as `kernel` on the default stream. A name no one
    /// registered is refused at once (C10: its outputs are claimed, its inputs stay readable),
    /// naming the registered kernels and the closest. Inline: a launch returns through each of
    /// its callers after the driver's deep call chain, and every level costs there.
    Status launch(std::string kernel, LaunchConfig config,
                  const std::vector<LaunchArgument>& arguments, KernelArgs args = {}) {
        return launch_entry(nullptr, std::move(kernel), config, arguments, args,
                            default_stream(), nullptr);
    }
    Status launch(std::string kernel, LaunchConfig config,
                  const std::vector<LaunchArgument>& arguments, KernelArgs args, StreamId stream) {
        return launch_entry(nullptr, std::move(kernel), config, arguments, args, stream, nullptr);
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
    Status enqueue(ExternalWork work, StreamId stream);
    Status enqueue(ExternalWork work) { return enqueue(std::move(work), default_stream()); }

    Result<Event> record_event(StreamId stream);
    Status wait_event(StreamId stream, const Event& event);
    Status sync();
    /// Waits for this device's work and every writer of the handles' bytes on any device, then
    /// fails if any byte of them is claimed (C6).
    Status sync(std::span<const Handle> handles);

    /// `handle` with its allocation shared with the other devices (P2: pinned while shared).
    Result<Handle> share_with_peers(const Handle& handle);
    Status grant_peer_access(ServiceId accessor);

    Status begin_capture(StreamId stream);
    Result<CaptureGraph> end_capture(StreamId stream);
    Status replay(const CaptureGraph& graph, StreamId stream);

    [[nodiscard]] MemoryUsage memory_usage() const;
    Status inject(const Fault& fault);

private:
    /// A launch of `entry` (typed), of `external` work, or of the kernel registered as `kernel`
    /// when both are null.
    Status launch_entry(const KernelEntry* entry, std::string kernel, LaunchConfig config,
                        const std::vector<LaunchArgument>& arguments, KernelArgs args,
                        StreamId stream, std::shared_ptr<const ExternalCallables> external);
    Status check_local(const Handle& handle) const;
    Result<KernelResource> bind(const LaunchArgument& argument) const;
    /// Whether `argument` is a plain buffer of this device: bound as it is, with nothing to check.
    [[nodiscard]] bool local_buffer(const LaunchArgument& argument) const {
        return argument.handle.service() == service() && !argument.tensor_map;
    }

    std::shared_ptr<Server> server_;
};

}  // namespace tandem
