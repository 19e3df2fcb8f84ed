// Launches on a GPU: the resources a launch binds, what the host knows when it enqueues it (a
// refusal, a claimed input, an injected fault), and the parameter block the kernel receives,
// with the status words of the producers it checks before it computes (C13 on the device).

#include "engine.hpp"
#include "tensor_map_encode.hpp"

#include <algorithm>
#include <cassert>
#include <iterator>

namespace tandem::cuda {

namespace {

/// The resources and tensor maps of `request` as the kernel receives them. `local_pointer`
/// resolves a buffer of the launching device, `peer_pointer` shared memory of a peer (its address,
/// or where another process's memory is mapped here).
template <typename LocalPointer, typename PeerPointer>
void encode_resources(const LaunchRequest& request, TensorLaunchParams& params,
                      const LocalPointer& local_pointer, const PeerPointer& peer_pointer) {
    // The block is reused from launch to launch: every field a kernel may read is written here,
    // and what this launch does not bind is left as a fresh block has it (null, zero).
    for (std::uint32_t map = 0; map < params.tensor_maps_encoded; ++map) {
        params.tensor_maps[map] = DeviceTensorMap{};
    }
    params.tensor_maps_encoded = 0;
    std::fill(std::begin(params.tensor_map_of), std::end(params.tensor_map_of), std::uint8_t{0});
    params.tma_slot_bytes = 0;
    std::fill(std::begin(params.resources) + static_cast<std::ptrdiff_t>(request.resources.size()),
              std::end(params.resources), DeviceResource{});
    std::uint32_t maps = 0;
    params.resource_count = static_cast<std::uint32_t>(request.resources.size());
    for (std::size_t index = 0; index < request.resources.size(); ++index) {
        const KernelResource& resource = request.resources[index];
        DeviceResource& bound = params.resources[index];
        bound.size_bytes = resource.buffer_binding().size_in_use();
        if (const PeerBinding* peer = resource.peer_binding()) {
            bound.pointer = peer_pointer(*peer);
        } else {
            bound.pointer = local_pointer(resource.buffer_binding());
        }
        const auto* map = std::get_if<TensorMapBinding>(&resource.binding());
        if (map == nullptr) {
            continue;
        }
        params.tensor_map_of[index] = static_cast<std::uint8_t>(maps);
        DeviceTensorMap& encoded = params.tensor_maps[maps++];
        params.tensor_maps_encoded = maps;
        const TensorMapDescriptor& descriptor = map->descriptor();
        encoded.rank = static_cast<std::uint32_t>(descriptor.dims.size());
        encoded.elem_size_bytes = descriptor.elem_size_bytes;
        for (std::size_t dim = 0; dim < descriptor.dims.size(); ++dim) {
            encoded.dims[dim] = descriptor.dims[dim];
            encoded.box[dim] = descriptor.box[dim];
        }
        for (std::size_t dim = 0; dim < descriptor.strides_bytes.size(); ++dim) {
            encoded.strides_bytes[dim] = descriptor.strides_bytes[dim];
        }
    }
}

/// The parameter block of the launch this thread is enqueueing, kept from one launch to the next
/// so that a launch does not zero all of it (about a kilobyte; `encode_params` writes every field
/// a kernel reads). The thread's own: a launch makes its call with the engine's lock let go,
/// while other threads encode theirs.
TensorLaunchParams& launch_block() {
    thread_local TensorLaunchParams block;
    return block;
}

bool same_shape(const TensorMapDescriptor& a, const TensorMapDescriptor& b) {
    return a.dims == b.dims && a.box == b.box && a.elem_size_bytes == b.elem_size_bytes;
}

/// Sends the launch's tensor maps to the TMA when every one is local memory the TMA can take,
/// all have one shape (so a tile loaded from one fits any other), and a tile per thread fits the
/// block's shared memory. Otherwise `tma_slot_bytes` stays zero and tiles move with plain loads
/// and stores, with the same result.
void encode_tma(const LaunchRequest& request, TensorLaunchParams& params) {
    const TensorMapDescriptor* shape = nullptr;
    for (std::size_t index = 0; index < request.resources.size(); ++index) {
        const KernelResource& resource = request.resources[index];
        const auto* map = std::get_if<TensorMapBinding>(&resource.binding());
        if (map == nullptr) {
            continue;
        }
        if (resource.peer_binding() != nullptr ||
            (shape != nullptr && !same_shape(*shape, map->descriptor())) ||
            !encode_for_tma(map->descriptor(), params.resources[index].pointer,
                            params.tma[params.tensor_map_of[index]])) {
            return;
        }
        shape = &map->descriptor();
    }
    if (shape == nullptr) {
        return;
    }
    const std::uint64_t slot_bytes = tma_slot_bytes(*shape);
    if ((slot_bytes + tma_barrier_bytes) * request.config.block.count() <= tma_shared_bytes_max) {
        params.tma_slot_bytes = static_cast<std::uint32_t>(slot_bytes);
    }
}

}  // namespace

void CudaDevice::encode_params(const LaunchRequest& request, TensorLaunchParams& params) const {
    encode_resources(
        request, params, [this](const BufferBinding& binding) { return device_pointer(binding); },
        [this](const PeerBinding& peer) { return engine_.peer_pointer(peer); });
    for (std::size_t word = 0; word < KernelArgs::max_words; ++word) {
        params.args[word] = request.args.u64_at(word);  // Zero past the arguments given.
    }
    if (tma_capable_) {
        encode_tma(request, params);
    }
}

const unsigned long long* CudaDevice::readable_status_word(const PendingOp& producer) const {
    const CudaDevice& owner = *engine_.devices[producer.device];
    if (&owner != this && !owner.granted_.contains(service_)) {
        return nullptr;
    }
    return owner.status_device_ + producer.slot;
}

std::optional<Error> CudaDevice::unmapped_peer(const LaunchRequest& request) const {
    for (const KernelResource& resource : request.resources) {
        const PeerBinding* peer = resource.peer_binding();
        if (peer != nullptr && engine_.peer_pointer(*peer) == nullptr) [[unlikely]] {
            return Error::launch_refused(request.kernel, engine_.unmapped_words(*peer));
        }
    }
    return std::nullopt;
}

bool CudaDevice::do_can_run(const LaunchRequest& request) const {
    return request.external ? static_cast<bool>(request.external->cuda)
                            : launcher_of(request.entry) != nullptr;
}

Status CudaDevice::do_launch(LaunchRequest&& request) {
    // External work runs under the lock, after every open issue; a launch records itself under
    // it and makes its call to the driver after letting go, so that threads on other streams and
    // devices put their kernels on the GPU at once.
    const bool waits = request.external || !engine_.options.unlocked_launch_calls;
    PreparedIssue prepared;
    Status enqueued;
    {
        const GroupLock lock = lock_group(waits ? GroupLock::Mode::Wait : GroupLock::Mode::ToIssue);
        Result<CudaStream*> found = stream(request.stream);
        if (!found) {
            return found.error();
        }
        // The client refused a launch over the limits (`check_launch_limits`): the block holds
        // no more.
        assert(check_launch_limits(request.resources) && "a launch within the launch limits");
        // Nested in a call holding the lock (external work that launches), it issues at once.
        const bool hand_off =
            engine_.options.unlocked_launch_calls && lock.group().mutex.depth() == 1;
        enqueued = enqueue_launch(request, **found, true, nullptr, nullptr,
                                  hand_off ? &prepared : nullptr);
    }
    if (prepared.op != nullptr) {
        issue(prepared);
    }
    return enqueued;
}

bool CudaDevice::add_producers(const Work& consumer, TensorLaunchParams& params) {
    // The producers whose outcome is not known yet are checked by the GPU before the launch
    // computes, each by its status word, the newest first. One it cannot read (a copy, a word on a
    // GPU that never granted this one) or one too many sends the host to learn them first.
    params.producer_count = 0;
    const SettlePipeline::Inputs inputs = group().pipeline.examine(consumer, [&](const Work& work) {
        const auto& producer = static_cast<const PendingOp&>(work);
        if (producer.lands) {
            return true;  // Nothing to check: it is ahead of the launch on the GPU.
        }
        const unsigned long long* word =
            producer.has_status_word ? readable_status_word(producer) : nullptr;
        if (word == nullptr || params.producer_count == max_checked_producers) {
            return false;
        }
        params.producers[params.producer_count++] = ProducerStatus{word, producer.launch_id};
        return true;
    });
    if (inputs != SettlePipeline::Inputs::Undecided) {
        return inputs != SettlePipeline::Inputs::Claimed;
    }
    group().resolve_inputs(consumer);
    params.producer_count = 0;
    return group().pipeline.examine(consumer, [](const Work&) { return false; }) ==
           SettlePipeline::Inputs::Clean;
}

SettlePipeline::Inputs CudaDevice::host_inputs(const Work& work) const {
    bool unknown = false;
    const SettlePipeline::Inputs inputs = group().pipeline.examine(work, [&](const Work& producer) {
        unknown = unknown || !static_cast<const PendingOp&>(producer).lands;
        return true;
    });
    return inputs == SettlePipeline::Inputs::Pending && !unknown ? SettlePipeline::Inputs::Clean
                                                                 : inputs;
}

Status CudaDevice::enqueue_launch(LaunchRequest& request, CudaStream& target_stream,
                                  bool check_inputs, PendingOp* replay,
                                  const std::string* as_copy, PreparedIssue* handoff) {
    CudaGroup& mine = group();  // Looked up once: it stays while the lock is held.
    keep_status_words_bounded();
    // Drawn by the Server (a copy run as a kernel draws none), which also returned at once for
    // a launch of nothing (C10).
    const std::optional<InjectedFault> injected = request.injected;
    const Launcher launcher = request.external ? nullptr : launcher_of(request);
    const bool runnable = request.external ? static_cast<bool>(request.external->cuda)
                                           : launcher != nullptr;
    // A copy run as a kernel stays a copy: a window records launches only (C14).
    std::shared_ptr<PendingOp> op =
        new_op(as_copy != nullptr ? PendingOp::Kind::Copy : PendingOp::Kind::Launch, target_stream);
    op->label = as_copy != nullptr ? *as_copy : request.kernel;
    if (Status found = mine.pipeline.add_targets(request, *op); !found) {
        return found;
    }
    TensorLaunchParams& params = launch_block();
    params.producer_count = 0;
    params.ticket = nullptr;
    params.replay_index = 0;
    bool runs = true;
    if (replay != nullptr) {
        op->slot = replay->slot;
        op->launch_id = replay->launch_id;
        op->inputs.clear();  // C14: a replay does not check inputs.
    } else {
        op->issued = next_slot_;
        op->slot = next_slot_++ % status_slots;
        op->launch_id = take_launch_id();
        // A copy run as a kernel stays a copy: no window records it, a failed one dooms it.
        mine.pipeline.admit_launch(*op, request, runnable,
                                      as_copy == nullptr ? target_stream.capture : nullptr);
        if (as_copy != nullptr) {
            SettlePipeline::place_copy(*op, target_stream.capture);
        }
        if (!op->refusal()) [[likely]] {
            if (std::optional<Error> unmapped = unmapped_peer(request)) [[unlikely]] {
                op->refuse(std::move(*unmapped));
            }
        }
        if (op->refusal()) [[unlikely]] {
            runs = false;
        } else if (request.external) {
            runs = admit_external(*op, target_stream);
        } else if (check_inputs && !add_producers(*op, params)) {
            op->did_not_run();  // C9: skipped work writes nothing.
            runs = false;
        }
    }
    if (runs && request.external) {
        run_external(request, target_stream, *op, injected);
        if (replay != nullptr && op->reported() == Work::Report::Failed) {
            // A replay launch by launch shares one outcome: external work reports no status
            // word, so its failure is the replay's at once (unless the replay ended already).
            replay->ran(*op->failure());
        }
    } else if (runs) {
        run_on_gpu(request, launcher, target_stream, *op, replay, injected, handoff);
    }
    // The request is done with: its bindings move into the work they keep reserved.
    (replay != nullptr ? replay->held : op->held).take(request.resources);
    if (replay != nullptr) {
        return {};
    }
    const bool to_issue = handoff != nullptr && handoff->op == op.get();
    push(std::move(op));
    if (to_issue) {
        // Taken before the engine's lock is let go: the next launch on this stream, recorded
        // after this one, reaches the driver after it too.
        handoff->stream->issue_mutex.lock();
        handoff->mutex = &mine.mutex;
        handoff->mutex->begin_issue();
    }
    return {};
}

void CudaDevice::run_on_gpu(const LaunchRequest& request, Launcher launcher,
                            CudaStream& target_stream, PendingOp& op, PendingOp* replay,
                            std::optional<InjectedFault> injected, PreparedIssue* handoff) {
    TensorLaunchParams& params = launch_block();
    encode_params(request, params);
    params.status = status_device_ + op.slot;
    params.launch_id = op.launch_id;
    params.injected_code = injected ? injected->code : 0;
    PendingOp& reporter = replay != nullptr ? *replay : op;  // Whose word reports the failure.
    if (injected && !reporter.injected) {
        reporter.injected = injected;
    }
    if (replay != nullptr) {
        // Launches of one replay share its word: after a failed one, the rest do not run.
        params.producers[params.producer_count++] = ProducerStatus{params.status, op.launch_id};
    } else if (handoff != nullptr) {
        // Its word, until its call says otherwise (`issue_error`, read by `fill_report`): a
        // launch recorded after it may check it before the call returns.
        op.has_status_word = true;
        *handoff = PreparedIssue{launcher, &request.config, &target_stream, &params, &op, nullptr};
        return;
    }
    const cudaError_t status = call_launcher(launcher, request.config, target_stream, params);
    if (status == cudaSuccess) {
        (replay != nullptr ? *replay : op).has_status_word = true;
        count_tma(params);
    } else {
        op.refuse(refusal_of(request.kernel, status));
    }
}

cudaError_t CudaDevice::call_launcher(Launcher launcher, const LaunchConfig& config,
                                      const CudaStream& stream, TensorLaunchParams& params) const {
    DeviceGuard guard(ordinal_);
    params.current_context = guard.context();  // The launcher need not ask the driver again.
    const auto status = static_cast<cudaError_t>(launcher(config, stream.handle, params));
    params.current_context = nullptr;
    return status;
}

void CudaDevice::issue(const PreparedIssue& prepared) {
    const cudaError_t status =
        call_launcher(prepared.launcher, *prepared.config, *prepared.stream, *prepared.params);
    if (status == cudaSuccess) {
        count_tma(*prepared.params);
    } else {
        prepared.op->issue_error = status;  // Becomes its refusal when it settles.
    }
    prepared.stream->issue_mutex.unlock();
    prepared.mutex->end_issue();
    if (status != cudaSuccess && sticky(status)) [[unlikely]] {
        // D1 at once, as a launch under the lock has it; the op's report says so when it settles.
        const GroupLock lock = lock_group();
        take_wait_status(status);
    }
}

}  // namespace tandem::cuda
