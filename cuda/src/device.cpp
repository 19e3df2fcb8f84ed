// CudaDevice: the Server of one GPU. Work goes straight to CUDA streams; what the host knows at
// enqueue (a refusal, a claimed input) is recorded with the work, and everything is resolved in
// enqueue order when the host synchronises.

#include "engine.hpp"
#include "tandem/core/kernels/catalog.hpp"

#include <algorithm>
#include <cstring>

namespace tandem::cuda {

CudaDevice::CudaDevice(CudaEngine& engine, std::uint32_t index, int ordinal,
                       std::uint64_t capacity_bytes, bool shares_gpu,
                       std::vector<int> peer_ordinals)
    : Server(ServiceId{engine.runtime_id, index, engine.runtime_number,
                       engine.options.rank.value_or(ServiceId::no_rank)},
             engine.groups, engine.directory, engine.options.seed, memory_),
      engine_(engine),
      index_(index),
      ordinal_(ordinal),
      shares_gpu_(shares_gpu),
      storage_(ordinal, capacity_bytes,
               engine.options.exportable_memory.value_or(engine.options.rank.has_value()),
               std::move(peer_ordinals)),
      memory_(storage_, order_, engine.options.pools, service().rank),
      next_launch_id_(engine.options.first_launch_id) {
    DeviceGuard guard(ordinal_);
    int major = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ordinal_);
    tma_capable_ = major >= 9;
    // Every kernel loaded now, before any runs: a first launch would load it while others run,
    // waiting for them (lazy loading), and a handoff would wait for ever. A failure is the
    // first launch's to report.
    if (load_kernels() != 0) {
        (void)cudaGetLastError();
    }
    cudaStream_t handle = nullptr;
    cudaStreamCreateWithFlags(&handle, cudaStreamNonBlocking);
    streams_.emplace_back(StreamId{1}, handle);
    set_stream_count(1);
    constexpr std::size_t status_bytes = status_slots * sizeof(unsigned long long);
    // The host copy is pinned, so that fetching the words after a sync is one direct copy.
    cudaError_t status = cudaMalloc(reinterpret_cast<void**>(&status_device_), status_bytes);
    if (status == cudaSuccess) {
        status = cudaMalloc(reinterpret_cast<void**>(&failed_nodes_device_),
                            status_slots * sizeof(std::uint32_t));
    }
    if (status == cudaSuccess) {
        status = cudaMallocHost(reinterpret_cast<void**>(&status_host_), status_bytes);
    }
    if (status == cudaSuccess) {
        status = clear_status_words();
    }
    if (status != cudaSuccess) {
        // Every operation on the device then reports this instead of running without status words.
        lose("cannot allocate the launch status words: " + cuda_error_text(status));
    } else {
        // Where kernels reach the host copy (pinned memory is mapped); none, and every word is
        // fetched, where the driver does not map it.
        void* mapped = nullptr;
        if (cudaHostGetDevicePointer(&mapped, status_host_, 0) == cudaSuccess) {
            status_host_mapped_ = static_cast<unsigned long long*>(mapped);
        } else {
            (void)cudaGetLastError();
        }
    }
    memory_.set_freed_listener([this](const AllocationInfo& info) { claims_.forget(info.id); });
}

CudaDevice::~CudaDevice() {
    DeviceGuard guard(ordinal_);
    cudaDeviceSynchronize();
    cudaFree(status_device_);
    cudaFree(failed_nodes_device_);
    cudaFreeHost(status_host_);
    for (cudaEvent_t event : spare_events_) {
        cudaEventDestroy(event);
    }
    for (CudaStream& each : streams_) {
        if (each.handle != nullptr) {
            cudaStreamDestroy(each.handle);
        }
    }
}

void CudaDevice::do_release_stream(DeviceStream& stream) {
    auto& cuda_stream = static_cast<CudaStream&>(stream);
    DeviceGuard guard(ordinal_);
    cudaStreamDestroy(cuda_stream.handle);  // Its work has run: the caller waited for it.
    cuda_stream.handle = nullptr;
}

Result<CudaStream*> CudaDevice::stream(StreamId id) { return find_stream(streams_, id); }

void CudaDevice::lose(const std::string& reason) {
    if (mark_lost(reason)) {
        update_quick_allocation();
    }
}

void CudaDevice::update_quick_allocation() {
    quick_allocation_.store(!lost_ && !faults_.allocation_fault_armed(), std::memory_order_release);
}

void CudaDevice::synchronize() {
    if (lost_) {
        return;
    }
    if (shares_gpu_) {
        for (const CudaStream& each : streams_) {
            synchronize(each.id);  // Its own streams: a neighbour's work is not its to wait for.
        }
        return;
    }
    DeviceGuard guard(ordinal_);
    const cudaError_t status = cudaDeviceSynchronize();
    for (CudaStream& each : streams_) {
        each.delay_steps = 0;  // Every delay enqueued so far has run out.
    }
    take_wait_status(status);
}

void CudaDevice::synchronize(StreamId id) {
    Result<CudaStream*> found = stream(id);
    if (lost_ || !found) {
        return;
    }
    DeviceGuard guard(ordinal_);
    const cudaError_t status = cudaStreamSynchronize((*found)->handle);
    (*found)->delay_steps = 0;  // Every delay enqueued on it so far has run out.
    take_wait_status(status);
}

void CudaDevice::fetch_status() {
    // Only the slots handed out since the last fetch can hold news: copy that span (two pieces
    // when it wraps), which for a sync after a few launches is a few bytes, not the whole ring.
    const std::uint64_t from = unfetched_from_;
    unfetched_from_ = next_slot_;
    fetch_status(from, next_slot_);
}

void CudaDevice::fetch_status(std::uint64_t from, std::uint64_t to) {
    if (lost_ || from >= to) {
        return;
    }
    DeviceGuard guard(ordinal_);
    const auto fetch = [this](std::uint64_t first, std::uint64_t last) {
        cudaMemcpy(status_host_ + first, status_device_ + first,
                   (last - first) * sizeof(unsigned long long), cudaMemcpyDeviceToHost);
    };
    const std::uint64_t first = from % status_slots;
    const std::uint64_t count = std::min<std::uint64_t>(to - from, status_slots);
    if (first + count <= status_slots) {
        fetch(first, first + count);
    } else {
        fetch(first, status_slots);
        fetch(0, first + count - status_slots);
    }
}

CudaGroup& CudaDevice::group() const { return static_cast<CudaGroup&>(current_group()); }

Status CudaDevice::check_recorded(const Event& event) const {
    return check_event(event, engine_.next_event.load(std::memory_order_relaxed));
}

std::uint32_t CudaDevice::take_launch_id() {
    if (next_launch_id_ > CudaOptions::last_launch_id || next_launch_id_ == 0) [[unlikely]] {
        // A kernel on another GPU of the group may still read one of these words as its
        // producer's: wait for every device of the group, not this one alone (a device of
        // another group has no producer here). Once in two billion launches.
        (void)group().resolve_all();
        if (!lost_) {
            DeviceGuard guard(ordinal_);
            if (const cudaError_t cleared = clear_status_words(); cleared != cudaSuccess) {
                lose("cannot clear the launch status words: " + cuda_error_text(cleared));
            }
        }
        next_launch_id_ = 1;
    }
    return next_launch_id_++;
}

cudaError_t CudaDevice::clear_status_words() {
    std::fill_n(status_host_, status_slots, 0ULL);
    return clear_device_words(status_device_, status_slots * sizeof(unsigned long long));
}

void CudaDevice::push(std::shared_ptr<PendingOp> op) { group().pipeline.enqueue(std::move(op)); }

Result<StreamId> CudaDevice::do_create_stream() {
    const GroupLock lock = lock_group();
    if (std::optional<Error> full = no_room_for_stream()) {
        return *full;
    }
    DeviceGuard guard(ordinal_);
    cudaStream_t handle = nullptr;
    if (const cudaError_t status = cudaStreamCreateWithFlags(&handle, cudaStreamNonBlocking);
        status != cudaSuccess) {
        return call_error("cudaStreamCreate", status);
    }
    const StreamId id{streams_.back().id.value + 1};
    streams_.emplace_back(id, handle);  // A deque: the other streams stay where they are.
    set_stream_count(streams_.size());
    return id;
}

Result<Handle> CudaDevice::do_allocate(std::uint64_t size_bytes, StreamId stream_id) {
    // The common case takes only the memory manager's lock: the Server checked the device and
    // the stream without one, and the engine's is needed only for an armed fault. An allocation
    // that reads the flag just before a loss or an armed fault is ordered before them, as it
    // would be had it taken the engine's lock first.
    if (!quick_allocation_.load(std::memory_order_acquire)) {
        const GroupLock lock = lock_group();
        std::optional<Error> injected = lost_;
        if (!injected) {
            injected = allocation_fault(size_bytes);
        }
        update_quick_allocation();  // A failure that came due is no longer armed.
        if (injected) {
            return *injected;
        }
    }
    auto allocated = memory_.allocate(size_bytes, stream_id);
    if (!allocated) {
        return allocated.error();
    }
    return Result<Handle>(std::in_place, key(), std::move(*allocated), service_, stream_id,
                          size_bytes);
}

std::uint8_t* CudaDevice::device_pointer(const BufferBinding& binding) const {
    assert(binding.service() == service_ && "a binding of this device");
    return reinterpret_cast<std::uint8_t*>(binding.start_address());
}

Result<CudaDevice::WriteTarget> CudaDevice::write_target(const BufferBinding& target,
                                                         StreamId stream_id) {
    Result<CudaStream*> found = stream(stream_id);
    if (!found) {
        return found.error();
    }
    return WriteTarget{*found, device_pointer(target)};
}

Status CudaDevice::do_write(const BufferBinding& target, std::span<const std::byte> bytes,
                            StreamId stream_id) {
    const GroupLock lock = lock_group();
    Result<WriteTarget> resolved = write_target(target, stream_id);
    if (!resolved) {
        return resolved.error();
    }
    CudaStream** found = &resolved->stream;
    std::uint8_t** pointer = &resolved->pointer;
    keep_status_words_bounded();  // It stays unsettled until its stream passes it (`lands`).
    std::shared_ptr<PendingOp> op = new_op(PendingOp::Kind::Write, **found);
    op->label = "host write";
    op->outputs.push_back(Target{service_, target.claim_key()});
    op->held.add(target);
    if (op->after_failed_wait()) [[unlikely]] {
        op->did_not_run();  // Ordered after a wait that failed: it writes nothing.
        push(std::move(op));
        return {};
    }
    DeviceGuard guard(ordinal_);
    // From pageable memory the call returns once the bytes are staged, so `bytes` may go. A
    // write of no bytes (into an empty view) has nothing to copy and no source pointer.
    const cudaError_t status = bytes.empty()
                                   ? cudaSuccess
                                   : cudaMemcpyAsync(*pointer, bytes.data(), bytes.size(),
                                                     cudaMemcpyHostToDevice, (*found)->handle);
    if (status != cudaSuccess) {
        op->refuse(refusal_of(op->label, status));
    } else {
        op->put_on_stream(bytes.size());  // Only the loss of the device can undo it (D1).
    }
    push(std::move(op));
    return {};
}

void CudaDevice::keep_status_words_bounded() {
    // A slot is reused `status_slots` launches later: the work that held it must be settled by
    // then. Unsettled work is bounded at half the slots, resolved oldest first; and now and
    // then the oldest unsettled work of this device is checked for being too far behind (work on
    // a stream no one waits for while later work settles past it).
    if (group().pipeline.size() >= status_slots / 2) {
        group().resolve_oldest(resolve_batch);
    }
    if (next_slot_ % (status_slots / 4) != 0 || next_slot_ == 0) {
        return;
    }
    std::uint64_t oldest = next_slot_;
    group().pipeline.for_each_pending([&](const Work& work) {
        const auto& op = static_cast<const PendingOp&>(work);
        if (op.device == index_ && op.has_status_word) {
            oldest = std::min(oldest, op.issued);
        }
    });
    if (next_slot_ - oldest >= status_slots / 2) {
        settle_own_work();
    }
}

void CudaDevice::settle_own_work(bool may_unlock) {
    // The work enqueued before the call: other threads may enqueue more while it waits unlocked.
    const std::uint64_t before = group().pipeline.next_sequence();
    const auto own = [this, before](const Work& work) {
        return work.device == index_ && work.sequence() < before;
    };
    const std::uint32_t whole[] = {index_};
    group().resolve_needed({}, own, whole, may_unlock);
    if (!group().pipeline.settled_where(own)) {
        (void)group().resolve_all();  // Not expected: every work it needed was waited for.
    }
}

void CudaDevice::settle_for_read(std::span<const ClaimKey> keys, bool may_unlock) {
    // A writer another thread enqueues while this waits unlocked is waited for in the next
    // round; the last round waits holding the lock, so that no new writer can come.
    constexpr int rounds = 4;
    for (int round = 0; group().pipeline.writes_unsettled(service_, keys); ++round) {
        if (round == rounds) {
            (void)group().resolve_all();  // Not expected: every writer it needed was waited for.
            return;
        }
        group().resolve_needed(
            keys, [](const Work&) { return false; }, {}, may_unlock && round + 1 < rounds);
    }
}

bool CudaDevice::add_fence(StreamId stream_id, std::vector<Fence>& fences) {
    CudaStream* found = stream_in(streams_, stream_id);
    if (lost_ || found == nullptr) {
        return true;  // Nothing to wait for on a stream gone, or on a lost device.
    }
    Result<cudaEvent_t> event = take_event();
    if (!event) {
        return false;
    }
    DeviceGuard guard(ordinal_);
    if (cudaEventRecord(*event, found->handle) != cudaSuccess) {
        (void)cudaGetLastError();
        reuse_event(*event);
        return false;
    }
    fences.push_back(Fence{index_, ordinal_, stream_id, *event, {found->delay_steps}});
    return true;
}

void CudaDevice::add_fences(std::vector<Fence>& fences) {
    if (lost_) {
        return;
    }
    if (shares_gpu_) {
        for (const CudaStream& each : streams_) {
            if (!add_fence(each.id, fences)) {
                synchronize(each.id);  // No event to wait on unlocked: waited for here.
            }
        }
        return;
    }
    Fence& whole = fences.emplace_back(Fence{index_, ordinal_, StreamId{}, nullptr, {}});
    for (const CudaStream& each : streams_) {
        whole.delay_steps.push_back(each.delay_steps);
    }
}

void CudaDevice::take_wait_status(cudaError_t status) {
    if (status == cudaSuccess) {
        return;
    }
    if (sticky(status)) {
        lose(cuda_error_text(status));  // D1: a sticky error loses the device.
    } else {
        cudaGetLastError();  // Not sticky: leave it for no later call.
    }
}

void CudaDevice::end_fence(const Fence& fence) {
    take_wait_status(fence.status);
    // The delays enqueued before the fence have run out.
    const auto ran_out = [](CudaStream& stream, std::uint64_t steps) {
        stream.delay_steps -= std::min(stream.delay_steps, steps);
    };
    if (fence.event == nullptr) {
        for (std::size_t index = 0; index < fence.delay_steps.size(); ++index) {
            ran_out(streams_[index], fence.delay_steps[index]);
        }
        return;
    }
    if (CudaStream* found = stream_in(streams_, fence.stream)) {
        ran_out(*found, fence.delay_steps.front());
    }
    if (!lost_) {
        reuse_event(fence.event);
    }
}

Result<std::vector<std::byte>> CudaDevice::do_read(const BufferBinding& source) {
    const GroupLock lock = lock_group();
    const ClaimKey keys[] = {source.claim_key()};
    settle_for_read(keys, true);  // Waits for the writers of the bytes and what they need.
    if (Status alive = refuse_if_lost(); !alive) {
        return alive.error();
    }
    if (Status readable = claims_.check(keys); !readable) {
        return readable.error();
    }
    std::uint8_t* pointer = device_pointer(source);
    std::vector<std::byte> bytes(source.size_in_use());
    DeviceGuard guard(ordinal_);
    const cudaError_t status =
        cudaMemcpy(bytes.data(), pointer, bytes.size(), cudaMemcpyDeviceToHost);
    if (status != cudaSuccess) {
        return call_error("the device to host copy of the read", status);
    }
    return bytes;
}

Result<Event> CudaDevice::do_read_async(const BufferBinding& source, std::span<std::byte> into,
                                        StreamId stream_id, std::shared_ptr<ReadBack> state) {
    const GroupLock lock = lock_group();
    Result<CudaStream*> found = stream(stream_id);
    if (!found) {
        return found.error();
    }
    keep_status_words_bounded();
    std::shared_ptr<PendingOp> op = new_op(PendingOp::Kind::Copy, **found);
    op->label = "asynchronous read";
    op->inputs.push_back(Target{service_, source.claim_key()});
    op->held.add(source);
    op->read_back = std::move(state);
    // A read whose bytes are known to end up claimed copies nothing; one whose producers are
    // still running copies now, and its settlement says whether the bytes may be used.
    if (group().pipeline.examine(*op, [](const Work&) { return true; }) ==
        SettlePipeline::Inputs::Claimed) {
        op->did_not_run();
    } else {
        DeviceGuard guard(ordinal_);
        const cudaError_t status =
            into.empty() ? cudaSuccess
                         : cudaMemcpyAsync(into.data(), device_pointer(source), into.size(),
                                           cudaMemcpyDeviceToHost, (*found)->handle);
        if (status != cudaSuccess) {
            op->ran(call_error("the device to host copy of the asynchronous read", status));
        } else {
            op->put_on_stream(into.size());  // Only the loss of the device can undo it (D1).
        }
    }
    push(std::move(op));
    return do_record_event(stream_id);
}

Result<std::vector<std::byte>> CudaDevice::do_read_strided(const CopyDescriptor& source) {
    const GroupLock lock = lock_group();
    const BufferBinding& binding = source.binding();
    const ClaimKey read_keys[] = {binding.claim_key()};
    settle_for_read(read_keys, true);
    if (Status alive = refuse_if_lost(); !alive) {
        return alive.error();
    }
    if (Status readable = claims_.check(source.element_keys()); !readable) {
        return readable.error();
    }
    // The view's extent only: the bytes between its first and last element.
    const ByteRange extent = source.extent();
    std::vector<std::byte> covered(extent.size_bytes());
    DeviceGuard guard(ordinal_);
    const cudaError_t status = cudaMemcpy(
        covered.data(),
        reinterpret_cast<void*>(binding.memory().allocation().address + extent.begin),
        covered.size(), cudaMemcpyDeviceToHost);
    if (status != cudaSuccess) {
        return call_error("the device to host copy of the strided read", status);
    }
    return source.gather(covered);
}

Status CudaDevice::do_copy(const KernelResource& source, const BufferBinding& target,
                           StreamId stream_id) {
    const GroupLock lock = lock_group();
    Result<WriteTarget> resolved = write_target(target, stream_id);
    if (!resolved) {
        return resolved.error();
    }
    keep_status_words_bounded();
    std::shared_ptr<PendingOp> op = new_op(PendingOp::Kind::Copy, *resolved->stream);
    if (Status targets =
            group().pipeline.add_copy_targets(source, target, *op, resolved->stream->capture);
        !targets) {
        return targets;
    }
    // Null for memory of another process (a job's other rank), which this GPU reads where it is
    // mapped here.
    const CudaDevice* owner = engine_.device_of(op->inputs.front().owner);
    op->held.add(source);
    op->held.add(target);
    // C9: a copy whose input will end up claimed does not move a byte. One whose producers are
    // not known yet runs as the catalog's copy kernel, which checks their status words first;
    // where this GPU cannot read them, the host learns their outcome first.
    SettlePipeline::Inputs inputs = host_inputs(*op);
    if (inputs == SettlePipeline::Inputs::Pending) {
        if (owner == this || (owner != nullptr && owner->granted_locked(service_))) {
            return copy_as_launch(source, target, *resolved, op->label);
        }
        group().resolve_inputs(*op);
        inputs = host_inputs(*op);
    }
    if (inputs == SettlePipeline::Inputs::Claimed) {
        op->did_not_run();
    } else {
        enqueue_copy(*op, owner, source, *resolved);
    }
    push(std::move(op));
    return {};
}

void CudaDevice::enqueue_copy(PendingOp& op, const CudaDevice* owner, const KernelResource& source,
                              const WriteTarget& target) {
    const std::uint64_t size_bytes = source.buffer_binding().size_in_use();
    const PeerBinding* peer = source.peer_binding();
    const void* from = peer != nullptr ? engine_.peer_pointer(*peer)
                                       : device_pointer(source.buffer_binding());
    if (from == nullptr) {
        op.refuse(Error::launch_refused(op.label, engine_.unmapped_words(*peer)));
        return;
    }
    cudaError_t status = cudaSuccess;
    if (size_bytes != 0) {
        DeviceGuard guard(ordinal_);
        // Another process's memory is mapped here, for this GPU: a copy within its address space.
        status = owner == this || owner == nullptr
                     ? cudaMemcpyAsync(target.pointer, from, size_bytes, cudaMemcpyDeviceToDevice,
                                       target.stream->handle)
                     : cudaMemcpyPeerAsync(target.pointer, ordinal_, from, owner->ordinal_,
                                           size_bytes, target.stream->handle);
    }
    if (status != cudaSuccess) {
        op.refuse(refusal_of(op.label, status));
    } else {
        op.put_on_stream(size_bytes);  // Its inputs were clean: only a loss can undo it.
    }
}

Status CudaDevice::copy_as_launch(const KernelResource& source, const BufferBinding& target,
                                  const WriteTarget& resolved, const std::string& label) {
    LaunchRequest request;
    request.kernel = kernels::Copy::name;
    request.config = LaunchConfig::linear(std::max<std::uint64_t>(target.size_in_use(), 1));
    request.stream = resolved.stream->id;
    request.resources.push_back(source);  // Bound for reading by the client.
    request.resources.push_back(KernelResource::buffer(target, AccessMode::Write));
    return enqueue_launch(request, *resolved.stream, true, nullptr, &label);
}

Error CudaDevice::call_error(const std::string& what, cudaError_t status) {
    if (sticky(status)) {
        lose(cuda_error_text(status));  // D1.
        return *lost_;
    }
    cudaGetLastError();  // Not sticky: leave it for no later call.
    const std::string text = what + " failed: " + cuda_error_text(status);
    switch (status) {
        case cudaErrorMemoryAllocation: {
            std::size_t free_bytes = 0;
            std::size_t total_bytes = 0;
            cudaMemGetInfo(&free_bytes, &total_bytes);
            return Error::out_of_memory(
                text, OutOfMemoryDetails{0, free_bytes, storage_.reserved_bytes(), free_bytes});
        }
        case cudaErrorPeerAccessNotEnabled:
        case cudaErrorPeerAccessUnsupported:
            return Error::peer_unreachable(service_, service_, text);
        default:
            return Error::invalid_argument(text);
    }
}

Error CudaDevice::refusal_of(const std::string& label, cudaError_t status) {
    if (sticky(status)) {
        lose(cuda_error_text(status));  // D1.
        return *lost_;
    }
    return Error::launch_refused(label, "the CUDA runtime refused it: " + cuda_error_text(status));
}

Result<Event> CudaDevice::do_record_event(StreamId stream_id) {
    const GroupLock lock = lock_group();
    Result<CudaStream*> found = stream(stream_id);
    if (!found) {
        return found.error();
    }
    if (group().events.size() >= CudaRuntime::max_live_events) {
        group().retire_oldest_event();  // Waits for the oldest only, not for everything queued.
    }
    Result<cudaEvent_t> event = take_event();
    if (!event) {
        return event.error();
    }
    DeviceGuard guard(ordinal_);
    cudaEventRecord(*event, (*found)->handle);
    const std::uint64_t id = engine_.next_event.fetch_add(1, std::memory_order_relaxed);
    group().events[id] =
        CudaGroup::EventState{*event, index_, stream_id, group().pipeline.next_sequence()};
    return Event(key(), service_, stream_id, id);
}

Result<cudaEvent_t> CudaDevice::take_event() {
    if (!spare_events_.empty()) {
        cudaEvent_t event = spare_events_.back();
        spare_events_.pop_back();
        return event;
    }
    DeviceGuard guard(ordinal_);
    cudaEvent_t event = nullptr;
    const cudaError_t status = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
    if (status != cudaSuccess) {
        return call_error("cudaEventCreate", status);
    }
    return event;
}

Result<NativeView> CudaDevice::do_native(const BufferBinding* binding, StreamId stream_id) {
    const GroupLock lock = lock_group();
    Result<CudaStream*> found = stream(stream_id);
    if (!found) {
        return found.error();
    }
    if (binding == nullptr) {
        return NativeView{nullptr, 0, (*found)->handle, true, ordinal_};
    }
    return NativeView{device_pointer(*binding), binding->size_in_use(), (*found)->handle, true,
                      ordinal_};
}

Status CudaDevice::do_check_adopted(const AdoptedMemory& memory) {
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, memory.pointer) != cudaSuccess) {
        cudaGetLastError();
        return Error::invalid_argument("the adopted pointer is not memory CUDA knows");
    }
    const bool on_device =
        attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
    if (!on_device || attributes.device != ordinal_) {
        return Error::invalid_argument("the adopted pointer is not device memory of GPU " +
                                       std::to_string(ordinal_) + " (" + to_string(service_) + ")");
    }
    return {};
}

Status CudaDevice::do_wait_event(StreamId stream_id, const Event& event) {
    const GroupLock lock = lock_group();
    if (Status known = check_recorded(event); !known) {
        return known;
    }
    Result<CudaStream*> found = stream(stream_id);
    if (!found) {
        return found.error();
    }
    if (of_other_process(event)) [[unlikely]] {
        return wait_other_process(**found, event);
    }
    if (Status joined = join_waits(**found, event); !joined) {
        return joined;
    }
    auto recorded = group().events.find(event.sequence());
    if (recorded == group().events.end()) {
        return {};  // Completed when everything last resolved: nothing to wait for.
    }
    DeviceGuard guard(ordinal_);
    cudaStreamWaitEvent((*found)->handle, recorded->second.event, 0);
    return {};
}

Result<bool> CudaDevice::do_event_done(const Event& event, bool block) {
    const GroupLock lock = lock_group();
    if (Status known = check_recorded(event); !known) {
        return known.error();
    }
    bool done = true;
    if (block) {
        group().wait_for_event(event, true);
        memory_.sweep();
    } else {
        done = group().event_complete(event);
    }
    if (std::optional<Error> gone = directory_.lost(event.device())) {
        return Error::device_lost(event.device(), "the event's device was lost").caused_by(*gone);
    }
    return done;
}

Status CudaDevice::do_settle(const SyncScope& scope) {
    const GroupLock lock = lock_group();
    if (scope.kind == SyncScope::Kind::Stream) {
        // The stream itself is waited for, whether or not work of it is unsettled, and the work
        // enqueued on it before the call settles.
        const std::uint64_t before = group().pipeline.next_sequence();
        const auto on_stream = [&](const Work& work) {
            return work.device == index_ && work.stream == scope.stream &&
                   work.sequence() < before;
        };
        group().resolve_needed({}, on_stream, {}, true, std::pair{index_, scope.stream});
        if (!group().pipeline.settled_where(on_stream)) {
            (void)group().resolve_all();  // Not expected: every work it needed was waited for.
        }
    } else {
        settle_own_work(true);  // This device, and only what its work needs of the others.
        if (scope.kind == SyncScope::Kind::Writers) {
            settle_for_read(scope.keys, true);  // A writer of the keys may run on any device.
        }
    }
    memory_.sweep();
    return {};
}

Status CudaDevice::do_admit_peer(ServiceId accessor) {
    CudaDevice* peer = engine_.device_of(accessor);  // The Server checked it is one.
    if (peer == this || peer->ordinal_ == ordinal_) {
        return {};  // One GPU: its kernels reach all of its memory without peer access.
    }
    int can_access = 0;
    cudaDeviceCanAccessPeer(&can_access, peer->ordinal_, ordinal_);
    if (can_access == 0) {
        return Error::peer_unreachable(accessor, service_,
                                       "the GPUs cannot access each other's memory");
    }
    // Peer access belongs to the CUDA context, which outlives runtimes: enable each pair once
    // per process, so no call is made that the driver answers with an error.
    static std::mutex enabled_mutex;
    static std::set<std::pair<int, int>> enabled;
    std::lock_guard enabled_lock(enabled_mutex);
    if (!enabled.contains({peer->ordinal_, ordinal_})) {
        DeviceGuard guard(peer->ordinal_);
        const cudaError_t status = cudaDeviceEnablePeerAccess(ordinal_, 0);
        if (status != cudaSuccess && status != cudaErrorPeerAccessAlreadyEnabled) {
            return Error::peer_unreachable(accessor, service_, cuda_error_text(status));
        }
        enabled.insert({peer->ordinal_, ordinal_});
    }
    return {};
}

void CudaDevice::do_lose_now() {
    (void)group().resolve_all();
    lose("injected device loss (simulated)");
}

void CudaDevice::do_delay(DeviceStream& stream, std::uint64_t steps) {
    DeviceGuard guard(ordinal_);
    // One scheduler step of the simulator is taken as one microsecond on the GPU.
    (void)launch_delay(static_cast<CudaStream&>(stream).handle, steps);
}

}  // namespace tandem::cuda
