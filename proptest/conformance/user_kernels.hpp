// Kernels of a program's own, as a user writes them: in their own header, registered in their
// own sources (user_kernels.cpp for every backend, user_kernels.cu for CUDA).
#pragma once

#include "tandem/core/kernel.hpp"

#include <cstdint>

namespace tandem::conformance {

/// Buffer 1 (write) = buffer 0 (read) + the low byte of u64 argument 0, byte-wise.
struct AddByte {
    static constexpr const char* name = "conformance_add_byte";
    template <typename Context>
    TANDEM_HOST_DEVICE void operator()(Context& ctx) const {
        auto in = ctx.template buffer<std::uint8_t>(0);
        auto out = ctx.template buffer<std::uint8_t>(1);
        const auto add = static_cast<std::uint8_t>(ctx.u64(0));
        for (std::uint64_t i = ctx.thread_index(); i < out.size(); i += ctx.thread_count()) {
            out.store(i, static_cast<std::uint8_t>(in.load(i) + add));
        }
    }
};

/// Copies buffer 0 (read) into buffer 1 (write), and fails with u64 argument 0 as its code when
/// the first byte of buffer 0 is not zero: a kernel whose failure depends on its data, as a
/// replay meets it after the inputs were rewritten.
struct FailOnNonzero {
    static constexpr const char* name = "conformance_fail_on_nonzero";
    template <typename Context>
    TANDEM_HOST_DEVICE void operator()(Context& ctx) const {
        auto in = ctx.template buffer<std::uint8_t>(0);
        auto out = ctx.template buffer<std::uint8_t>(1);
        if (in.size() != 0 && in.load(0) != 0) {
            if (ctx.thread_index() == 0) {
                ctx.fail(static_cast<std::uint32_t>(ctx.u64(0)));
            }
            return;
        }
        for (std::uint64_t i = ctx.thread_index(); i < out.size(); i += ctx.thread_count()) {
            out.store(i, in.load(i));
        }
    }
};

/// Sets buffer 0 (write) to 1 byte-wise. It has no CUDA registration unit: a host build only.
struct HostOnly {
    static constexpr const char* name = "conformance_host_only";
    template <typename Context>
    TANDEM_HOST_DEVICE void operator()(Context& ctx) const {
        auto out = ctx.template buffer<std::uint8_t>(0);
        for (std::uint64_t i = ctx.thread_index(); i < out.size(); i += ctx.thread_count()) {
            out.store(i, 1);
        }
    }
};

}  // namespace tandem::conformance

#include "tandem/core/external_work.hpp"

namespace tandem::conformance {

/// CUDA callables of the suite's external work, compiled in user_kernels.cu; empty where the
/// suite is built without CUDA.
/// Sets every byte of argument 0 to `value` (cudaMemsetAsync).
std::function<Status(const DeviceWorkContext&)> device_fill(std::uint8_t value);
/// Copies argument 0 into argument 1, as many bytes as the smaller holds (cudaMemcpyAsync).
std::function<Status(const DeviceWorkContext&)> device_copy();
/// Adds one to every byte of argument 0, which it reads and writes (a raw `<<<>>>` launch).
std::function<Status(const DeviceWorkContext&)> device_add_one();
/// A flag in mapped host memory, kept for the process's life, and a wait of the stream until
/// the host sets it (`cuStreamWaitValue32`): work a test holds back and lets go of when it says
/// (`Gate`).
struct DeviceGate {
    /// Set to 1 by the host to let the stream go on.
    volatile int* flag = nullptr;
    /// Enqueues the wait on the stream it is given.
    std::function<Status(const DeviceWorkContext&)> wait;
};
/// A new gate, closed; an empty one where the suite is built without CUDA.
DeviceGate device_gate();

}  // namespace tandem::conformance

namespace tandem::conformance {

/// Memory of another allocator on the GPU (cudaMalloc and cudaFree), for adoption tests; null
/// where the suite is built without CUDA.
void* device_malloc(std::uint64_t size_bytes);
void device_free(void* pointer);
/// Copies `size_bytes` from GPU memory at `from` to the host (cudaMemcpy).
void device_to_host(void* to, const void* from, std::uint64_t size_bytes);

}  // namespace tandem::conformance
