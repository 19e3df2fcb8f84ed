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
        pointers[index] = peer != nullptr ? reinterpret_cast<void*>(peer->address())
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
        op.report = Work::Report::NotRun;
        return false;
    }
    return true;
}

void CudaDevice::run_external(const LaunchRequest& request, CudaStream& stream, PendingOp& op,
                              std::optional<std::uint32_t> injected) {
    if (injected) {
        op.report = Work::Report::Failed;  // As an injected kernel fault: it never ran.
        op.failure = Error::kernel_failed(
            KernelFailedDetails{request.kernel, service_, request.stream, *injected});
        return;
    }
    std::array<void*, max_launch_resources> pointers{};  // On the stack.
    std::array<std::uint64_t, max_launch_resources> sizes{};
    const std::size_t count = external_arguments(request, pointers, sizes);
    if (std::optional<Error> failure =
            call_external(request.kernel, *request.external, std::span(pointers.data(), count),
                          std::span(sizes.data(), count), stream)) {
        op.report = Work::Report::Failed;
        op.failure = std::move(failure);
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

bool CudaDevice::do_repeat_external(std::string_view name, const ExternalCallables& run,
                                    std::span<const LaunchArgument> arguments, StreamId stream) {
    // A program that enqueues the same external work again and again (a loop of library calls)
    // would otherwise pay for a request and a record per unit, and for settling each: most of
    // what external work adds to a raw launch. The lock's count says nothing else ran since the
    // newest work was recorded: no claim, producer, window, fault or stream changed, and that
    // work is still unsettled and the newest, so this unit finds its inputs as that one did
    // (clean) and writes the same bytes right after it on the same stream. One record stands
    // for both: it settles once a wait passes both (every wait begins after this call),
    // releasing or claiming the same bytes either would (C3, D1).
    if (!run.cuda || arguments.size() > max_launch_resources ||
        !may_repeat_.load(std::memory_order_relaxed)) {
        return false;
    }
    const GroupLock lock = lock_group();
    CudaGroup& mine = group();
    const PendingOp* last = repeatable_.op;
    const std::uint64_t entered = mine.mutex.entries();
    if (last == nullptr || repeatable_.group != &mine || entered != repeatable_.entries + 1 ||
        is_lost() || faults_.kernel_faults_armed() || last->stream != stream ||
        last->label != name || !mine.pipeline.same_local_targets(arguments, *last)) {
        return false;
    }
    std::array<void*, max_launch_resources> pointers{};
    std::array<std::uint64_t, max_launch_resources> sizes{};
    for (std::size_t index = 0; index < arguments.size(); ++index) {
        const Handle& handle = arguments[index].handle;  // Local: `same_local_targets`.
        pointers[index] =
            reinterpret_cast<void*>(handle.memory().allocation().address + handle.offset_start());
        sizes[index] = handle.size_in_use();
    }
    std::optional<Error> failure =
        call_external(name, run, std::span(pointers.data(), arguments.size()),
                      std::span(sizes.data(), arguments.size()), *repeatable_.stream);
    if (failure || mine.mutex.entries() != entered) {
        // It failed, or called tandem (its work then comes after what it enqueued): a record of
        // its own, after everything before it.
        record_ran_external(name, arguments, stream, std::move(failure));
        return true;
    }
    count_operation();  // As a record's enqueue counts it; an injected loss may be due (D1).
    if (is_lost()) {
        forget_external();  // Its loss settled the record.
    } else {
        repeatable_.entries = entered;
    }
    return true;
}

void CudaDevice::record_ran_external(std::string_view name,
                                     std::span<const LaunchArgument> arguments, StreamId stream,
                                     std::optional<Error> failure) {
    // Rare (a failure, a callable that called tandem): the request a launch builds, built here.
    LaunchRequest request;
    request.kernel.assign(name);
    request.stream = stream;
    for (const LaunchArgument& argument : arguments) {
        request.resources.emplace_back(argument.handle, argument.access);
    }
    CudaGroup& mine = group();
    std::shared_ptr<PendingOp> op = mine.new_op(PendingOp::Kind::Launch);
    op->label = request.kernel;
    op->device = index_;
    op->stream = stream;
    (void)mine.pipeline.add_targets(request, *op);  // Local bytes of this device: none refused.
    if (failure) {
        op->report = Work::Report::Failed;
        op->failure = std::move(failure);
    } else {
        op->lands = true;
    }
    op->held.take(request.resources);
    const PendingOp& recorded = *op;
    push(std::move(op));
    Result<CudaStream*> found = this->stream(stream);
    if (found) {
        remember_external(recorded, **found);
    } else {
        forget_external();  // The callable destroyed the stream.
    }
}

void CudaDevice::remember_external(const PendingOp& op, CudaStream& stream) {
    // A loss that `push` found due settled everything: `op` may be gone. Nothing else settles
    // work within the call that recorded it.
    const auto local = [this](const Target& target) {
        return target.owner == service_ && !target.peer;
    };
    if (is_lost() || !op.lands || op.report != Work::Report::Pending || op.refused ||
        op.window || stream.capture || !std::all_of(op.inputs.begin(), op.inputs.end(), local) ||
        !std::all_of(op.outputs.begin(), op.outputs.end(), local)) {
        forget_external();
        return;
    }
    repeatable_ = RepeatableExternal{&op, &stream, &group(), group().mutex.entries()};
    may_repeat_.store(true, std::memory_order_relaxed);
}

}  // namespace tandem::cuda
