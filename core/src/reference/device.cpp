// ReferenceDevice: the Server of one device of host memory. Every call that enqueues work runs
// it before it returns, on the caller's thread, so the settle pipeline settles it at once.

#include "reference.hpp"

#include "tandem/core/host_kernels.hpp"

#include <cstring>

namespace tandem::reference {
namespace {

/// Thrown out of a kernel whose wait can never be satisfied: nothing else runs while it waits.
struct WaitsForever {
    std::string what;
};

class ReferenceHost final : public KernelHost {
public:
    explicit ReferenceHost(const MemoryManager& memory) : memory_(memory) {}
    void yield() override {}
    void block_until(const std::function<bool()>& ready, const std::string& what) override {
        if (!ready()) {
            throw WaitsForever{what};
        }
    }
    void on_release(std::uint64_t) override {}
    void on_acquire(std::uint64_t) override {}
    [[nodiscard]] std::string describe_address(std::uint64_t address) const override {
        if (auto info = memory_.find_address(address)) {
            return "it lies in " + to_string(info->id) + " (" + std::to_string(info->size_bytes) +
                   " bytes, live)";
        }
        return "it lies in no live allocation of this device";
    }
    [[nodiscard]] bool threaded() const override { return false; }

private:
    const MemoryManager& memory_;
};

std::byte* host(std::uint64_t address) { return reinterpret_cast<std::byte*>(address); }

}  // namespace

ReferenceDevice::ReferenceDevice(ReferenceEngine& engine, std::uint32_t index,
                                 std::uint64_t capacity_bytes, PoolOptions pools)
    : Server(ServiceId{engine.runtime_id, index, engine.runtime_number,
                       engine.options.rank.value_or(ServiceId::no_rank)},
             engine.groups, engine.directory, engine.options.seed, memory_),
      engine_(engine),
      index_(index),
      storage_(capacity_bytes),
      memory_(storage_, order_, pools, service().rank) {
    memory_.set_freed_listener([this](const AllocationInfo& info) { claims_.forget(info.id); });
    streams_.push_back(ReferenceStream{{StreamId{1}, {}, 0}});
    set_stream_count(1);
}

Result<StreamId> ReferenceDevice::do_create_stream() {
    const GroupLock lock = lock_group();
    if (std::optional<Error> full = no_room_for_stream()) {
        return *full;
    }
    const StreamId id{streams_.back().id.value + 1};
    streams_.push_back(ReferenceStream{{id, {}, 0}});
    set_stream_count(streams_.size());
    return id;
}

Result<Handle> ReferenceDevice::do_allocate(std::uint64_t size_bytes, StreamId stream) {
    const GroupLock lock = lock_group();
    if (std::optional<Error> injected = allocation_fault(size_bytes)) {
        return *injected;
    }
    Result<ManagedMemoryHandle> allocated = memory_.allocate(size_bytes, stream);
    if (!allocated) {
        return allocated.error();
    }
    return Result<Handle>(std::in_place, key(), std::move(*allocated), service_, stream,
                          size_bytes);
}

SettlePipeline& ReferenceDevice::pipeline() const { return current_group().pipeline; }

Status ReferenceDevice::submit(const std::shared_ptr<ReferenceWork>& work,
                               const std::function<Status()>& run) {
    pipeline().enqueue(work);
    pipeline().run_now(*work, lost_, run);
    pipeline().settle_ready();
    return {};
}

Status ReferenceDevice::do_write(const BufferBinding& target, std::span<const std::byte> bytes,
                                 StreamId stream) {
    const GroupLock lock = lock_group();
    if (Result<ReferenceStream*> found = find_stream(streams_, stream); !found) {
        return found.error();
    }
    auto work = std::make_shared<ReferenceWork>();
    work->label = "host write";
    work->device = index_;
    work->stream = stream;
    work->outputs.push_back(Target{service_, target.claim_key()});
    work->held.add(target);
    return submit(work, [&] {
        if (!bytes.empty()) {
            std::memcpy(host(target.start_address()), bytes.data(), bytes.size());
        }
        return Status{};
    });
}

Result<std::vector<std::byte>> ReferenceDevice::do_read(const BufferBinding& source) {
    const GroupLock lock = lock_group();
    const ClaimKey keys[] = {source.claim_key()};
    if (Status readable = claims_.check(keys); !readable) {
        return readable.error();
    }
    const std::byte* from = host(source.start_address());
    return std::vector<std::byte>(from, from + source.size_in_use());
}

Result<std::vector<std::byte>> ReferenceDevice::do_read_strided(const CopyDescriptor& source) {
    const GroupLock lock = lock_group();
    if (Status readable = claims_.check(source.element_keys()); !readable) {
        return readable.error();
    }
    const ByteRange extent = source.extent();
    return source.gather(std::span<const std::byte>(
        host(source.binding().memory().allocation().address + extent.begin), extent.size_bytes()));
}

Result<Event> ReferenceDevice::do_read_async(const BufferBinding& source,
                                             std::span<std::byte> into, StreamId stream,
                                             std::shared_ptr<ReadBack> state) {
    const GroupLock lock = lock_group();
    if (Result<ReferenceStream*> found = find_stream(streams_, stream); !found) {
        return found.error();
    }
    auto work = std::make_shared<ReferenceWork>();
    work->label = "asynchronous read";
    work->device = index_;
    work->stream = stream;
    work->inputs.push_back(Target{service_, source.claim_key()});
    work->held.add(source);
    work->read_back = std::move(state);
    (void)submit(work, [&] {
        if (!into.empty()) {
            std::memcpy(into.data(), host(source.start_address()), into.size());
        }
        return Status{};
    });
    return Event(key(), service_, stream, engine_.new_event_sequence());  // Complete: its work is done.
}

Status ReferenceDevice::do_copy(const KernelResource& source, const BufferBinding& target,
                                StreamId stream) {
    const GroupLock lock = lock_group();
    Result<ReferenceStream*> found = find_stream(streams_, stream);
    if (!found) {
        return found.error();
    }
    auto work = std::make_shared<ReferenceWork>();
    work->device = index_;
    work->stream = stream;
    if (Status targets = pipeline().add_copy_targets(source, target, *work, (*found)->capture);
        !targets) {
        return targets;
    }
    const BufferBinding& from = source.buffer_binding();
    const std::uint64_t from_address =
        source.peer_binding() != nullptr ? source.peer_binding()->address() : from.start_address();
    work->held.add(from);
    work->held.add(target);
    return submit(work, [&] {
        if (target.size_in_use() != 0) {
            std::memmove(host(target.start_address()), host(from_address), target.size_in_use());
        }
        return Status{};
    });
}

Status ReferenceDevice::do_launch(LaunchRequest&& request) {
    const GroupLock lock = lock_group();
    auto work = std::make_shared<ReferenceWork>();
    work->label = request.kernel;
    work->device = index_;
    work->stream = request.stream;
    if (Status targets = pipeline().add_targets(request, *work); !targets) {
        return targets;
    }
    Result<ReferenceStream*> found = find_stream(streams_, request.stream);
    if (!found) {
        return found.error();
    }
    work->held.add(request.resources);
    pipeline().admit_launch(*work, request, host_runnable(request), (*found)->capture);
    const std::optional<InjectedFault> injected[] = {request.injected};
    return submit(work, [&] { return run_launches({&request}, injected, *work); });
}

Status ReferenceDevice::run_launches(const std::vector<const LaunchRequest*>& launches,
                                     std::span<const std::optional<InjectedFault>> injected,
                                     const ReferenceWork& work) {
    for (std::size_t index = 0; index < launches.size(); ++index) {
        const LaunchRequest& request = *launches[index];
        if (index < injected.size() && injected[index]) {  // Reported without running, as on a GPU.
            return injected[index]->failure(request.kernel, service_, work.stream);
        }
        if (Status ran = run_kernel(request, work); !ran) {
            return ran;
        }
    }
    return {};
}

std::vector<BoundResource> ReferenceDevice::bind(const LaunchRequest& request) const {
    std::vector<BoundResource> bound;
    for (const KernelResource& resource : request.resources) {
        const BufferBinding& binding = resource.buffer_binding();
        BoundResource entry;
        entry.access = resource.access();
        entry.size_bytes = binding.size_in_use();
        entry.address = binding.start_address();
        entry.owner = service_;
        if (const PeerBinding* peer = resource.peer_binding()) {
            const ReferenceDevice& owner = *engine_.device_of(peer->memory().owner_service());
            entry.address = peer->address();
            entry.owner = owner.service();
            entry.granted = owner.granted_locked(service_);
        }
        entry.host = host(entry.address);
        if (const auto* map = std::get_if<TensorMapBinding>(&resource.binding())) {
            entry.tensor_map = map->descriptor();
        }
        bound.push_back(std::move(entry));
    }
    return bound;
}

Status ReferenceDevice::run_kernel(const LaunchRequest& request, const ReferenceWork& work) {
    ReferenceHost kernel_host(memory_);
    const std::vector<BoundResource> bound = bind(request);
    HostKernelContext context(request.kernel, bound, request.args,
                              request.config.thread_count(), kernel_host);
    try {
        if (request.external) {
            context.set_thread(0);
            if (Status ran = request.external->host(context); !ran) {
                return ran;
            }
        } else {
            request.entry->host(context, request.config);
        }
        if (std::optional<std::uint32_t> code = context.failure_code()) {
            return Error::kernel_failed(
                KernelFailedDetails{request.kernel, service_, work.stream, *code});
        }
        return {};
    } catch (const HostFault& fault) {
        mark_lost(fault.report);  // D1: a sticky fault loses the device.
        return *lost_;
    } catch (const WaitsForever& wait) {
        return Error::torn_down("deadlock: " + wait.what +
                                ", and the reference backend runs one kernel at a time");
    } catch (...) {
        return Error::thrown_by("'" + request.kernel + "'");  // The kernel of a replay, named.
    }
}

Result<NativeView> ReferenceDevice::do_native(const BufferBinding* binding, StreamId) {
    if (binding == nullptr) {
        return NativeView{};
    }
    return NativeView{host(binding->start_address()), binding->size_in_use(), nullptr};
}

Result<Event> ReferenceDevice::do_record_event(StreamId stream) {
    const GroupLock lock = lock_group();
    if (Result<ReferenceStream*> found = find_stream(streams_, stream); !found) {
        return found.error();
    }
    return Event(key(), service_, stream, engine_.new_event_sequence());  // Complete: its work is done.
}

Status ReferenceDevice::do_wait_event(StreamId stream, const Event& event) {
    const GroupLock lock = lock_group();
    if (Status known = check_event(event, engine_.next_event_sequence()); !known) {
        return known;
    }
    if (Result<ReferenceStream*> found = find_stream(streams_, stream); !found) {
        return found.error();
    }
    return {};
}

// Work runs on the caller's thread as it is enqueued: every event is complete when recorded, and
// every stream has run what it was given.
Result<bool> ReferenceDevice::do_event_done(const Event& event, bool) {
    const GroupLock lock = lock_group();
    if (Status known = check_event(event, engine_.next_event_sequence()); !known) {
        return known.error();
    }
    return true;
}

Status ReferenceDevice::do_settle(const SyncScope& scope) {
    const GroupLock lock = lock_group();
    if (scope.kind != SyncScope::Kind::Stream) {
        memory_.sweep();  // Memory freed while work still held it is taken back.
    }
    return {};
}

Status ReferenceDevice::do_replay(const CaptureGraph& graph, StreamId stream,
                                  std::span<const std::optional<InjectedFault>> injected) {
    const GroupLock lock = lock_group();
    Result<ReferenceStream*> found = find_stream(streams_, stream);
    if (!found) {
        return found.error();
    }
    auto work = std::make_shared<ReferenceWork>();
    work->device = index_;
    work->stream = stream;
    pipeline().add_replay_targets(graph, *work, (*found)->capture);
    std::vector<const LaunchRequest*> launches;
    for (const LaunchRequest& launch : graph.work().launches) {
        launches.push_back(&launch);
    }
    return submit(work, [&] { return run_launches(launches, injected, *work); });
}

}  // namespace tandem::reference
