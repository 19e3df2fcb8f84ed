#pragma once

// Memory and streams crossing between tandem and other libraries: memory another allocator owns,
// handed to tandem (`Client::adopt`), and a handle's bytes as another library takes them
// (`Client::native`).

#include <cstdint>
#include <functional>

namespace tandem {

/// Memory another allocator owns, handed to tandem (`Client::adopt`): a device pointer on CUDA,
/// host memory on the simulator and the reference backend.
struct AdoptedMemory {
    /// Where the memory starts: a device pointer on CUDA, a host pointer on host backends.
    void* pointer = nullptr;
    /// How many bytes of it tandem may use.
    std::uint64_t size_bytes = 0;
    /// Called once, when the last handle and binding of the adopted memory are gone and no work
    /// holds it, on the thread that dropped the last reference: it must not block. An exception
    /// it throws is dropped (a destructor dropped the last reference: nothing can report it). Not
    /// called when the adoption is refused (the caller still owns the memory then).
    std::function<void()> release;
};

/// A handle's bytes and a stream as another library takes them (`Client::native`): the device
/// pointer and the `cudaStream_t` on CUDA, a host pointer and no stream on host backends. Work
/// enqueued through them is outside tandem's claims.
struct NativeView {
    /// The first byte of the handle's bytes; null when no handle was asked about.
    void* pointer = nullptr;
    /// How many bytes the handle spans.
    std::uint64_t size_bytes = 0;
    /// The stream's `cudaStream_t` on CUDA; null on host backends.
    void* stream = nullptr;
    /// Whether `pointer` is GPU memory (of the GPU `ordinal`), not host memory.
    bool on_gpu = false;
    /// The CUDA ordinal of the GPU, when `on_gpu`.
    int ordinal = 0;
};

}  // namespace tandem
