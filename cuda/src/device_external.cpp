// Work tandem did not write, on a GPU: a callable that enqueues its own CUDA work (a raw
// kernel, a library call) on a tandem stream, over the raw pointers of its bindings.

#include "device_guard.hpp"
#include "engine.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <span>

namespace tandem::cuda {

namespace {

/// `name` in quotes, as errors name work.
std::string quoted(std::string_view name) {
    std::string text;
    text.reserve(name.size() + 2);
    text += '\'';
    text += name;
    text += '\'';
    return text;
}

}  // namespace

std::size_t CudaDevice::external_arguments(
    const LaunchRequest& request, std::array<void*, max_launch_resources>& pointers,
    std::array<std::uint64_t, max_launch_resources>& sizes) const {
    // The client refused more than the launch limit of resources.
    const std::size_t count = request.resources.size();
    for (std::size_t index = 0; index < count; ++index) {
        const KernelResource& resource = request.resources[index];
        const PeerBinding* peer = resource.peer_binding();
        pointers[index] = peer != nullptr ? static_cast<void*>(engine_.peer_pointer(*peer))
                                          : static_cast<void*>(device_pointer(
                                                resource.buffer_binding()));
        sizes[index] = resource.buffer_binding().size_in_use();
    }
    return count;
}

bool CudaDevice::admit_external(PendingOp& op, CudaStream& /*stream*/) {
    // A window records it like a launch (`admit_launch`); its graph calls it again on the
    // capture stream, so its CUDA work must be capturable (a cuBLAS call, a raw launch).
    // The callable cannot check a producer's status word as a catalog kernel does: the host must
    // know the inputs are clean before it calls it, or skip it (C9: skipped work writes nothing).
    SettlePipeline::Inputs inputs = host_inputs(op);
    if (inputs == SettlePipeline::Inputs::Pending || inputs == SettlePipeline::Inputs::Undecided) {
        group().resolve_inputs(op);
        inputs = host_inputs(op);
    }
    if (inputs != SettlePipeline::Inputs::Clean) {
        op.did_not_run();
        return false;
    }
    return true;
}

void CudaDevice::run_external(const LaunchRequest& request, CudaStream& stream, PendingOp& op,
                              std::optional<InjectedFault> injected) {
    if (injected) {
        // As an injected kernel fault: it never ran.
        op.ran(injected->failure(request.kernel, service_, request.stream));
        return;
    }
    std::array<void*, max_launch_resources> pointers{};  // On the stack.
    std::array<std::uint64_t, max_launch_resources> sizes{};
    const std::size_t count = external_arguments(request, pointers, sizes);
    if (std::optional<Error> failure =
            call_external(request.kernel, *request.external, std::span(pointers.data(), count),
                          std::span(sizes.data(), count), stream)) {
        op.ran(std::move(*failure));
        return;
    }
    op.lands = true;  // What it enqueued lands once its stream passes it.
}

std::optional<Error> CudaDevice::call_external(std::string_view name, const ExternalCallables& run,
                                               std::span<void* const> pointers,
                                               std::span<const std::uint64_t> sizes,
                                               CudaStream& stream) {
    DeviceGuard guard(ordinal_);
    Status ran;
    try {
        ran = run.cuda(DeviceWorkContext{stream.handle, pointers, sizes});
    } catch (...) {
        ran = Error::thrown_by(quoted(name));
    }
    const cudaError_t left = cudaGetLastError();
    if (ran && left == cudaSuccess) {
        return std::nullopt;
    }
    return !ran ? ran.error() : call_error(quoted(name), left);
}

}  // namespace tandem::cuda
