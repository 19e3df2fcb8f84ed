#pragma once

// Work tandem did not write, run under its claims: a raw CUDA kernel, a cuBLAS, cuDNN or NCCL
// call on the GPU, a reference implementation of the same operation on a host backend. The
// program declares what it reads and writes; tandem binds those buffers, checks them like a
// launch's, and decides the outcome by the same rules: the work is skipped, never called, when an
// input is claimed (C9); its writes are claimed when it fails (C8) and released when it returns
// success (C3); it is recorded in a capture window like a launch (C14, on host backends).

#include "tandem/core/host_kernel_context.hpp"
#include "tandem/core/result.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <span>

namespace tandem {

/// What CUDA work receives: the stream it must enqueue on (a `cudaStream_t`) and, for each
/// declared argument in order, the device address of its bytes and their size.
struct DeviceWorkContext {
    /// The `cudaStream_t` to enqueue on.
    void* stream = nullptr;
    /// The device address of each declared argument's bytes.
    std::span<void* const> pointers;
    /// The size in bytes of each declared argument.
    std::span<const std::uint64_t> sizes;

    /// Argument `index`'s bytes as `T` (the caller knows what it declared).
    template <typename T>
    [[nodiscard]] T* pointer(std::size_t index) const {
        return static_cast<T*>(pointers[index]);
    }
};

/// How each backend runs a unit of external work. A missing one makes the work refused on that
/// backend (C10), with a report naming what is missing.
///
/// A callable may enqueue more work through a client (a launch, a write, a copy); its order
/// against the callable's own work is not defined, so it should touch bytes of its own. A call
/// that waits (a read, a sync, a wait for an event) belongs before the work is enqueued or after
/// it ends: on the simulator, where the host callable runs as the device runs the work, one that
/// would have to wait is refused with `InvalidArgument` naming the work.
struct ExternalCallables {
    /// Runs on a host backend, on the caller's view of the declared arguments: the same checked
    /// views a kernel gets (`context.buffer<T>(i)`), with one thread. Returns failure to fail the
    /// work (C8); a throw fails it too.
    std::function<Status(HostKernelContext& context)> host;
    /// Enqueues on the GPU. Returns failure to fail the work (C8); a CUDA error it leaves
    /// (`cudaGetLastError`) fails it too, and a sticky one loses the device (D1).
    std::function<Status(const DeviceWorkContext& context)> cuda;
};

/// The callables a unit of external work runs, as a request carries them: during the call that
/// enqueues the work, a view of the caller's own (no copy); once anything keeps the request past
/// that call (a capture window recording it, a backend that runs it later), a copy shared by
/// everything that keeps it. A copy or a move of a view is such a shared copy, so a view never
/// outlives the call it was made in.
class ExternalRef {
public:
    /// No external work.
    ExternalRef() = default;
    /// Makes this a view of `callables`, which must outlive every use of the view itself (copies
    /// and moves of it make their own copy of the callables).
    void view(const ExternalCallables& callables) {
        owned_.reset();
        callables_ = &callables;
    }
    /// Shares `other`'s shared copy, or makes one of the callables `other` views.
    ExternalRef(const ExternalRef& other);
    /// Takes `other`'s shared copy, or makes one of the callables `other` views; `other` is left
    /// empty.
    ExternalRef(ExternalRef&& other);
    /// As the copy constructor, in place of what this held.
    ExternalRef& operator=(const ExternalRef& other);
    /// As the move constructor, in place of what this held.
    ExternalRef& operator=(ExternalRef&& other);
    ~ExternalRef() = default;

    /// Whether the request runs external work.
    explicit operator bool() const { return callables_ != nullptr; }
    /// The callables; only when there is external work.
    const ExternalCallables* operator->() const { return callables_; }
    /// The callables; only when there is external work.
    const ExternalCallables& operator*() const { return *callables_; }
    /// No external work.
    void reset() {
        callables_ = nullptr;
        owned_.reset();
    }

private:
    /// Shares `other`'s copy, or makes one of the callables it views.
    void take_shared(const ExternalRef& other);

    const ExternalCallables* callables_ = nullptr;
    /// The shared copy `callables_` points into; null for a view.
    std::shared_ptr<const ExternalCallables> owned_;
};

}  // namespace tandem
