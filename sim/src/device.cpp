// SimDevice: the Server of one simulated device. Calls that enqueue build an Operation and put
// it on a stream; calls that wait drive the engine until what they wait for is done.

#include "engine.hpp"
#include "tandem/sim/kernel_registry.hpp"

#include <algorithm>
#include <cstring>

namespace tandem::sim {

namespace {

/// Each device owns 1 TiB of the simulated address space, so an address names its device; each
/// rank of a job owns the space of `SimOptions::max_devices` devices, so it names its rank too.
constexpr std::uint64_t address_space_bits = 40;
static_assert((std::uint64_t{job_ranks_max} * SimOptions::max_devices + 1) <<
                  address_space_bits >> address_space_bits ==
              std::uint64_t{job_ranks_max} * SimOptions::max_devices + 1,
              "every rank's devices have addresses below 2^64");

std::uint64_t base_address(std::optional<std::uint32_t> rank, std::uint32_t index) {
    const std::uint64_t place = std::uint64_t{rank.value_or(0)} * SimOptions::max_devices + index;
    return (place + 1) << address_space_bits;
}

std::string hex(std::uint64_t value) {
    char text[24];
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
    return text;
}

std::uint64_t splitmix(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

}  // namespace

SimDevice::SimDevice(Engine& engine, std::uint32_t index, std::unique_ptr<Segment> segment)
    : Server(ServiceId{engine.runtime_id, index, engine.runtime_number,
                       engine.options.rank.value_or(ServiceId::no_rank)},
             engine.groups, engine.directory, engine.options.seed, memory_),
      engine_(engine),
      index_(index),
      segment_(std::move(segment)),
      storage_(*segment_, base_address(engine.options.rank, index)),
      memory_(storage_, order_, engine.options.pools, service().rank) {
    memory_.set_freed_listener([this](const AllocationInfo& info) {
        claims_.forget(info.id);  // C5: a new occupant starts clean.
        engine_.races.forget(info.id, info.address, info.size_bytes);
        freed_.push_back(FreedRecord{info.id, info.address, info.size_bytes, engine_.steps});
        if (freed_.size() > max_freed_records) {
            freed_.pop_front();
        }
    });
    streams_.emplace_back(StreamId{1}, engine.next_stream_global++);
    set_stream_count(streams_.size());
}

SimDevice::~SimDevice() = default;

Result<SimStream*> SimDevice::stream(StreamId id) { return find_stream(streams_, id); }

void SimDevice::lose(const std::string& reason) {
    if (mark_lost(reason)) {
        engine_.mix_trace(0xdead0000ULL + index_);
    }
}

void SimDevice::lose_after_queued_work() {
    // Refused from inside running work (it may be queued here itself): the loss comes at once.
    (void)engine_.run_until([this] {
        return std::all_of(streams_.begin(), streams_.end(),
                           [](const SimStream& stream) { return stream.queue.empty(); });
    });
    lose("injected device loss");
}

void SimDevice::sweep() { memory_.sweep(); }

std::string SimDevice::describe_address(std::uint64_t address) const {
    const std::uint64_t owner = (address >> address_space_bits);
    if (owner == 0 || owner > engine_.devices.size()) {
        return "the address belongs to no device";
    }
    const SimDevice& device = *engine_.devices[owner - 1];
    if (auto info = device.memory_.find_address(address)) {
        return "it lies in " + to_string(info->id) + " (" + std::to_string(info->size_bytes) +
               " bytes at " + hex(info->address) + " on device " + std::to_string(owner - 1) +
               ", live)";
    }
    for (auto record = device.freed_.rbegin(); record != device.freed_.rend(); ++record) {
        if (address >= record->address && address - record->address < record->size_bytes) {
            return "it lies in " + to_string(record->id) + " (" +
                   std::to_string(record->size_bytes) + " bytes at " + hex(record->address) +
                   "), freed at scheduler step " + std::to_string(record->step);
        }
    }
    return "it lies in no allocation of device " + std::to_string(owner - 1);
}

void SimDevice::fill_garbage(const AllocationInfo& info) {
    // Bytes never written read as noise derived from the seed, so a program that reads them does
    // not pass by luck, and the same seed gives the same noise. The noise comes from a block made
    // once per device, copied in at an offset drawn from the device's allocation count (not the
    // process-wide memory id), which costs a memcpy rather than a generator per word.
    constexpr std::size_t noise_words = 8192;
    if (noise_.empty()) {
        std::uint64_t state = engine_.options.seed ^ (std::uint64_t{index_} << 56);
        noise_.resize(noise_words);
        for (std::uint64_t& word : noise_) {
            word = splitmix(state);
        }
    }
    std::uint64_t draw = engine_.options.seed ^ (++allocations_made_ * 0x9e3779b97f4a7c15ULL);
    const auto* noise = reinterpret_cast<const std::byte*>(noise_.data());
    std::byte* host = storage_.host_of_new(info.address, info.size_bytes);
    std::uint64_t offset = 0;
    while (offset < info.size_bytes) {
        const std::uint64_t start = splitmix(draw) % (noise_words * 8 / 2);
        const std::uint64_t length =
            std::min<std::uint64_t>(info.size_bytes - offset, noise_words * 8 - start);
        std::memcpy(host + offset, noise + start, length);
        offset += length;
    }
}

Result<StreamId> SimDevice::do_create_stream() {
    std::lock_guard lock(engine_.mutex);
    if (std::optional<Error> full = no_room_for_stream()) {
        return *full;
    }
    if (engine_.options.mode == SchedulerMode::Threads && streams_.size() >= max_threaded_streams) {
        return Error::invalid_argument("the simulator's threads mode runs a thread per stream: at "
                                       "most " + std::to_string(max_threaded_streams) +
                                       " streams a device");
    }
    const StreamId id{streams_.back().id.value + 1};
    streams_.emplace_back(id, engine_.next_stream_global++);
    set_stream_count(streams_.size());
    if (engine_.options.mode == SchedulerMode::Threads) {
        engine_.start_workers();
    }
    return id;
}

Result<Handle> SimDevice::do_allocate(std::uint64_t size_bytes, StreamId stream_id) {
    std::lock_guard lock(engine_.mutex);
    if (std::optional<Error> injected = allocation_fault(size_bytes)) {
        return *injected;
    }
    auto allocated = memory_.allocate(size_bytes, stream_id);
    if (!allocated) {
        return allocated.error();
    }
    fill_garbage(allocated->allocation());
    engine_.mix_trace(allocated->allocation().address ^ size_bytes);
    return Result<Handle>(std::in_place, key(), std::move(*allocated), service_, stream_id,
                          size_bytes);
}

Status SimDevice::enqueue(StreamId stream_id, std::shared_ptr<Operation> operation) {
    Result<SimStream*> found = stream(stream_id);
    if (!found) {
        return found.error();
    }
    SimStream& target = **found;
    operation->device = index_;
    operation->stream = stream_id;
    operation->stream_local = static_cast<std::uint32_t>(target.id.value - 1);
    operation->stream_global = target.global_index;
    operation->stream_sequence = target.next_sequence++;
    operation->host_clock = engine_.host_clock;
    if (operation->is_work()) {
        if (engine_.pipeline.size() >= Engine::max_unsettled_work) {
            // Runs the oldest work until there is room: this call pays for what it must, not for
            // everything queued.
            (void)engine_.run_until(
                [this] { return engine_.pipeline.size() < Engine::max_unsettled_work; });
        }
        engine_.pipeline.enqueue(operation);
    }
    target.queue.push_back(std::move(operation));
    engine_.notify();
    return {};
}

Status SimDevice::do_write(const BufferBinding& target, std::span<const std::byte> bytes,
                           StreamId stream_id) {
    std::lock_guard lock(engine_.mutex);
    auto operation = engine_.new_operation(Operation::Kind::Write);
    operation->label = "host write";
    operation->outputs.push_back(Target{service_, target.claim_key()});
    operation->bytes.assign(bytes.begin(), bytes.end());
    operation->held.push_back(target);
    return enqueue(stream_id, std::move(operation));
}

Status SimDevice::drain_for_read(StreamId stream_id, std::span<const ClaimKey> keys) {
    Result<SimStream*> found = stream(stream_id);
    if (!found) {
        return found.error();
    }
    SimStream* target = *found;
    // A read waits for the work before it on its stream, and for every writer of the bytes it
    // reads, on any device, until the writer is settled (C6, C13); a writer settles once what it
    // depends on has, not behind unrelated older work (`SettlePipeline::final_for`).
    Status drained = engine_.run_until(
        [&] { return target->queue.empty() && engine_.pipeline.final_for(service_, keys); });
    merge_into(engine_.host_clock, target->clock);
    sweep();
    return drained;
}

Result<std::vector<std::byte>> SimDevice::read_ranges(const BufferBinding& source,
                                                      const std::vector<ByteRange>& ranges) {
    std::vector<ClaimKey> keys;
    for (const ByteRange& range : ranges) {
        keys.push_back(ClaimKey{source.memory_id(), range});
    }
    if (Status drained = drain_for_read(stream_or_default(source.stream()), keys); !drained) {
        return drained.error();
    }
    if (Status alive = refuse_if_lost(); !alive) {
        return alive.error();
    }
    if (Status readable = claims_.check(keys); !readable) {
        return readable.error();
    }
    const std::uint64_t address = source.memory().allocation().address;
    std::vector<std::byte> bytes;
    for (const ByteRange& range : ranges) {
        const std::byte* host = storage_.host(address + range.begin);
        bytes.insert(bytes.end(), host, host + range.size_bytes());
    }
    return bytes;
}

Result<std::vector<std::byte>> SimDevice::do_read(const BufferBinding& source) {
    std::lock_guard lock(engine_.mutex);
    return read_ranges(source, {source.range()});
}

Result<std::vector<std::byte>> SimDevice::do_read_strided(const CopyDescriptor& source) {
    std::lock_guard lock(engine_.mutex);
    const BufferBinding& binding = source.binding();
    // Claims are checked over the bytes the view covers; the bytes come back in view order.
    std::vector<ByteRange> elements;
    for (std::uint64_t offset : source.element_offsets()) {
        elements.push_back(ByteRange{offset, offset + source.elem_size_bytes()});
    }
    return read_ranges(binding, elements);
}

Result<Event> SimDevice::do_read_async(const BufferBinding& source, std::span<std::byte> into,
                                       StreamId stream_id, std::shared_ptr<ReadBack> state) {
    std::lock_guard lock(engine_.mutex);
    auto operation = engine_.new_operation(Operation::Kind::ReadBack);
    operation->label = "asynchronous read";
    operation->device = index_;
    operation->inputs.push_back(Target{service_, source.claim_key()});
    operation->held.push_back(source);
    operation->read_into = into;
    operation->read_back = std::move(state);
    if (Status queued = enqueue(stream_id, std::move(operation)); !queued) {
        return queued.error();
    }
    return do_record_event(stream_id);
}

Status SimDevice::do_copy(const KernelResource& source, const BufferBinding& target,
                          StreamId stream_id) {
    std::lock_guard lock(engine_.mutex);
    Result<SimStream*> found = stream(stream_id);
    if (!found) {
        return found.error();
    }
    auto operation = engine_.new_operation(Operation::Kind::Copy);
    operation->device = index_;
    if (Status targets =
            engine_.pipeline.add_copy_targets(source, target, *operation, (*found)->capture);
        !targets) {
        return targets;
    }
    operation->copy_source = source;
    operation->held = {source.buffer_binding(), target};
    return enqueue(stream_id, std::move(operation));
}

Status SimDevice::do_launch(LaunchRequest&& request) {
    std::lock_guard lock(engine_.mutex);
    auto operation = engine_.new_operation(Operation::Kind::Launch);
    operation->label = request.kernel;
    operation->device = index_;
    if (Status targets = engine_.pipeline.add_targets(request, *operation); !targets) {
        return targets;
    }
    Result<SimStream*> found = stream(request.stream);
    if (!found) {
        return found.error();
    }
    for (const KernelResource& resource : request.resources) {
        operation->held.push_back(resource.buffer_binding());
    }
    operation->injected.push_back(request.injected);
    engine_.pipeline.admit_launch(*operation, request, host_runnable(request), (*found)->capture);
    const StreamId stream_id = request.stream;
    // A swap, not a move: the caller's request takes the reused operation's emptied storage.
    if (!operation->launch) {
        operation->launch.emplace();
    }
    std::swap(*operation->launch, request);
    return enqueue(stream_id, std::move(operation));
}

Result<Event> SimDevice::do_record_event(StreamId stream_id) {
    std::lock_guard lock(engine_.mutex);
    auto operation = engine_.new_operation(Operation::Kind::Record);
    operation->label = "record event";
    operation->event = engine_.next_event++;
    engine_.events[operation->event] = Engine::EventState{false, {}, index_, std::nullopt};
    const std::uint64_t event = operation->event;
    if (Status queued = enqueue(stream_id, std::move(operation)); !queued) {
        engine_.events.erase(event);
        return queued.error();
    }
    return Event(key(), service_, stream_id, event);
}

Result<NativeView> SimDevice::do_native(const BufferBinding* binding, StreamId) {
    if (binding == nullptr) {
        return NativeView{};
    }
    std::lock_guard lock(engine_.mutex);
    return NativeView{storage_.host(binding->start_address()), binding->size_in_use(), nullptr};
}

Status SimDevice::do_check_adopted(const AdoptedMemory& memory) {
    // An address names its device here: host memory at addresses of a device's range (this
    // one's included) would be taken for that device's memory.
    const auto address = reinterpret_cast<std::uint64_t>(memory.pointer);
    for (const auto& device : engine_.devices) {
        if (device->storage_.overlaps(address, memory.size_bytes)) {
            return Error::invalid_argument("the adopted range of " +
                                           std::to_string(memory.size_bytes) + " bytes at " +
                                           hex(address) + " overlaps the device addresses of " +
                                           to_string(device->service()));
        }
    }
    return {};
}

Status SimDevice::do_wait_event(StreamId stream_id, const Event& event) {
    std::lock_guard lock(engine_.mutex);
    if (Status known = check_event(event, engine_.next_event); !known) {
        return known;
    }
    auto operation = engine_.new_operation(Operation::Kind::Wait);
    operation->event = event.sequence();
    if (of_other_process(event)) [[unlikely]] {
        operation->label = "wait for event of " + to_string(event.device());
        operation->remote_event = event;
    } else {
        operation->label =
            "wait for event of device " + std::to_string(event.device().device_index);
    }
    return enqueue(stream_id, std::move(operation));
}

Result<bool> SimDevice::do_event_done(const Event& event, bool block) {
    std::lock_guard lock(engine_.mutex);
    if (Status known = check_event(event, engine_.next_event); !known) {
        return known.error();
    }
    if (!block) {
        return engine_.event_completed(event.sequence());
    }
    Status drained = engine_.run_until([&] {
        if (!engine_.event_completed(event.sequence())) {
            return false;
        }
        engine_.settle_known();  // What the work before it decides.
        return true;
    });
    merge_into(engine_.host_clock, engine_.event_clock(event.sequence()));  // Happens before.
    sweep();
    if (!drained) {
        return drained.error();
    }
    return true;
}

Status SimDevice::do_settle(const SyncScope& scope) {
    switch (scope.kind) {
    case SyncScope::Kind::Stream:
        return settle_stream(scope.stream);
    case SyncScope::Kind::Device:
        return settle_device();
    case SyncScope::Kind::Writers:
        break;
    }
    // The device's own sync first, outside this call's lock: in threads mode a wait lets go of
    // the lock so that the workers can run, and one nested in a call holding it would not.
    if (Status synced = settle_device(); !synced) {
        return synced;
    }
    std::lock_guard lock(engine_.mutex);
    Status drained =
        engine_.run_until([&] { return engine_.pipeline.final_for(service_, scope.keys); });
    sweep();
    return drained;
}

Status SimDevice::settle_stream(StreamId stream_id) {
    std::lock_guard lock(engine_.mutex);
    SimStream* target = *stream(stream_id);  // The Server checked that it exists.
    const auto on_stream = [&](const Work& work) {
        return work.device == index_ && work.stream == stream_id;
    };
    Status drained = engine_.run_until(
        [&] { return target->queue.empty() && engine_.pipeline.settled_where(on_stream); });
    merge_into(engine_.host_clock, target->clock);
    sweep();
    return drained;
}

Status SimDevice::settle_device() {
    std::lock_guard lock(engine_.mutex);
    Status drained = engine_.run_until([this] {
        for (const SimStream& each : streams_) {
            if (!each.queue.empty()) {
                return false;
            }
        }
        return engine_.pipeline.settled_on(index_);
    });
    for (const SimStream& each : streams_) {
        merge_into(engine_.host_clock, each.clock);
    }
    sweep();
    return drained;
}

Status SimDevice::do_settle_window(StreamId stream_id, const CaptureWindow& window) {
    SimStream* target = *stream(stream_id);
    return engine_.run_until(
        [target, &window] { return target->queue.empty() && window.unsettled == 0; });
}

Status SimDevice::do_replay(const CaptureGraph& graph, StreamId stream_id,
                            std::span<const std::optional<InjectedFault>> injected) {
    std::lock_guard lock(engine_.mutex);
    Result<SimStream*> found = stream(stream_id);
    if (!found) {
        return found.error();
    }
    auto operation = engine_.new_operation(Operation::Kind::Replay);
    operation->device = index_;
    engine_.pipeline.add_replay_targets(graph, *operation, (*found)->capture);
    operation->graph = std::make_shared<const CaptureGraph>(graph);
    operation->injected.assign(injected.begin(), injected.end());
    return enqueue(stream_id, std::move(operation));
}

bool SimDevice::do_grants_all_peers() const { return engine_.options.grant_all_peers; }

}  // namespace tandem::sim
