// The entry points of `Server`: the checks every backend would otherwise repeat, made once
// here before the backend's hook is called.

#include "tandem/backend/server.hpp"

#include "tandem/backend/cross_process_events.hpp"

#include "tandem/core/host_kernels.hpp"

#include "tandem/core/runtime.hpp"
#include "tandem/backend/work.hpp"

#include <cstring>

namespace tandem {

std::optional<Error> Server::loss() const {
    if (maybe_lost()) [[unlikely]] {
        return lost();
    }
    return std::nullopt;
}

std::optional<Error> Server::refusal(StreamId stream) const {
    if (std::optional<Error> gone = loss()) [[unlikely]] {
        return gone;
    }
    if (!has_stream(stream)) [[unlikely]] {
        return Error::invalid_argument(to_string(stream) + " does not exist on " +
                                       to_string(service()));
    }
    return std::nullopt;
}

std::optional<Error> Server::foreign(const BufferBinding& binding) const {
    if (binding.service() != service()) [[unlikely]] {
        return Error::wrong_service(service(), binding.service());  // P1
    }
    return std::nullopt;
}

Result<StreamId> Server::create_stream() {
    if (std::optional<Error> gone = loss()) {
        return *gone;
    }
    return do_create_stream();
}

Status Server::destroy_stream(StreamId stream) {
    if (std::optional<Error> refused = refusal(stream)) {
        return *refused;
    }
    if (stream == default_stream()) {
        return Error::invalid_argument("the default stream cannot be destroyed");
    }
    return destroy_checked(stream);
}

Result<Handle> Server::allocate(std::uint64_t size_bytes, StreamId stream) {
    if (std::optional<Error> refused = refusal(stream)) {
        return *refused;
    }
    return do_allocate(size_bytes, stream);
}

Result<Handle> Server::adopt(AdoptedMemory memory) {
    if (std::optional<Error> gone = loss()) {
        return *gone;
    }
    const auto address = reinterpret_cast<std::uint64_t>(memory.pointer);
    if (memory.pointer == nullptr || memory.size_bytes == 0 ||
        memory.size_bytes > MemoryManager::max_allocation_bytes ||
        address > UINT64_MAX - memory.size_bytes) {
        return Error::invalid_argument("adopted memory needs a pointer and 1 to " +
                                       std::to_string(MemoryManager::max_allocation_bytes) +
                                       " bytes that do not wrap; got " +
                                       std::to_string(memory.size_bytes) + " bytes at " +
                                       std::to_string(address));
    }
    return adopt_checked(std::move(memory));
}

Result<NativeView> Server::native(const BufferBinding* binding, StreamId stream) {
    if (std::optional<Error> refused = refusal(stream)) {
        return *refused;
    }
    if (binding == nullptr) {
        return do_native(nullptr, stream);
    }
    if (std::optional<Error> wrong = foreign(*binding)) {
        return *wrong;
    }
    return do_native(binding, stream);
}

Status Server::write(const BufferBinding& target, std::span<const std::byte> bytes,
                     StreamId stream) {
    if (std::optional<Error> refused = refusal(stream)) {
        return *refused;
    }
    if (std::optional<Error> wrong = foreign(target)) {
        return *wrong;
    }
    return do_write(target, bytes, stream);
}

Result<std::vector<std::byte>> Server::read(const BufferBinding& source) {
    if (std::optional<Error> wrong = foreign(source)) {
        return *wrong;
    }
    if (std::optional<Error> gone = loss()) {
        return *gone;
    }
    return do_read(source);
}

Result<PendingRead> Server::read_async(const BufferBinding& source, std::span<std::byte> into,
                                       StreamId stream) {
    if (std::optional<Error> wrong = foreign(source)) {
        return *wrong;
    }
    if (std::optional<Error> refused = refusal(stream)) {
        return *refused;
    }
    if (into.size() != source.size_in_use()) {
        return Error::invalid_argument("an asynchronous read of " +
                                       std::to_string(source.size_in_use()) +
                                       " bytes into a buffer of " + std::to_string(into.size()));
    }
    auto state = std::make_shared<ReadBack>(ReadBack{service(), source.claim_key(), std::nullopt});
    Result<Event> done = do_read_async(source, into, stream, state);
    if (!done) {
        return done.error();
    }
    return PendingRead(key(), *done, into, std::move(state));
}

Status Server::wait(const PendingRead& read) {
    if (!read.state() || read.state()->owner != service()) {
        return Error::invalid_argument("the read was not made by this device");
    }
    Status outcome = wait(read.done());
    if (outcome && !read.state()->outcome) {
        // Older work it conflicts with, on another stream, was still unsettled: this device's
        // sync settles the read with what it needs.
        outcome = sync();
    }
    if (outcome && !read.state()->outcome) {
        outcome = Error::torn_down("the asynchronous read did not settle");
    }
    if (outcome) {
        outcome = *read.state()->outcome;
    }
    if (!outcome && !read.into().empty()) {
        std::memset(read.into().data(), 0, read.into().size());  // Never hand out unwritten bytes.
    }
    return outcome;
}

Result<std::vector<std::byte>> Server::read_strided(const CopyDescriptor& source) {
    if (std::optional<Error> wrong = foreign(source.binding())) {
        return *wrong;
    }
    if (std::optional<Error> gone = loss()) {
        return *gone;
    }
    return do_read_strided(source);
}

Status Server::copy(const KernelResource& source, const BufferBinding& target, StreamId stream) {
    if (std::optional<Error> refused = refusal(stream)) {
        return *refused;
    }
    if (std::optional<Error> wrong = foreign(target)) {
        return *wrong;
    }
    if (const PeerBinding* peer = source.peer_binding()) {
        reach(peer->memory().owner_service());
    } else if (std::optional<Error> wrong = foreign(source.buffer_binding())) {
        return *wrong;
    }
    return do_copy(source, target, stream);
}

Status Server::launch(LaunchRequest&& request) {
    if (std::optional<Error> refused = refusal(request.stream)) {
        return *refused;
    }
    if (Status within = check_launch_limits(request.resources); !within) [[unlikely]] {
        return within;
    }
    for (const KernelResource& resource : request.resources) {
        if (const PeerBinding* peer = resource.peer_binding()) [[unlikely]] {
            const ServiceId owner = peer->memory().owner_service();
            if (!directory_.reaches(owner)) {
                // Refused by the call, before it draws: a launch the device never takes.
                return Error::peer_unreachable(service_, owner,
                                               "the owner is not a device of this runtime");
            }
            reach(owner);
        }
    }
    if (request.entry == nullptr && !request.external) {
        request.entry = find_kernel(request.kernel);  // Once, here: the backend finds it set.
    }
    // Drawn for every launch the device takes, in program order, whatever it then does: "the
    // nth launch from now" counts launches of nothing and launches skipped later too.
    std::optional<GroupLock> held;
    request.injected = hold_to_draw(held) ? draw_kernel_fault(request.kernel) : std::nullopt;
    if (request.entry != nullptr || request.external) [[likely]] {
        if (request.config.runs_nothing() && do_can_run(request)) {
            return {};  // C10: a launch of nothing changes no claim; a window does not record it.
        }
        return do_launch(std::move(request));
    }
    // A name no one registered: the backend still enqueues it, so that the refusal claims what
    // it declared it writes (C10) in program order, and the call returns that refusal too, so a
    // launch that declares no output is not silently taken.
    Error unknown = unknown_kernel(request.kernel);
    if (Status enqueued = do_launch(std::move(request)); !enqueued) {
        return enqueued;
    }
    return unknown;
}

Result<Event> Server::record_event(StreamId stream) {
    if (std::optional<Error> refused = refusal(stream)) {
        return *refused;
    }
    return do_record_event(stream);
}

Status Server::wait_event(StreamId stream, const Event& event) {
    if (std::optional<Error> refused = refusal(stream)) {
        return *refused;
    }
    reach(event.device());
    return do_wait_event(stream, event);
}

Status Server::wait(const Event& event) {
    if (std::optional<Error> gone = loss()) {
        return *gone;
    }
    if (of_other_process(event)) [[unlikely]] {
        if (Status known = check_event(event, 0); !known) {
            return known;
        }
        return wait_for_other_process(directory_, service_, event);  // No backend is asked.
    }
    reach(event.device());
    if (Result<bool> done = do_event_done(event, true); !done) {
        return done.error();
    }
    return {};
}

Result<bool> Server::event_complete(const Event& event) {
    if (std::optional<Error> gone = loss()) {
        return *gone;
    }
    if (of_other_process(event)) [[unlikely]] {
        if (Status known = check_event(event, 0); !known) {
            return known.error();
        }
        Result<bool> reached = directory_.event_reached(event);
        return reached ? reached : Result<bool>(event_refused(event, reached.error()));
    }
    reach(event.device());
    return do_event_done(event, false);
}

Status Server::sync_stream(StreamId stream) {
    if (std::optional<Error> refused = refusal(stream)) {
        return *refused;
    }
    if (Status settled = do_settle({SyncScope::Kind::Stream, stream, {}}); !settled) {
        return settled;
    }
    if (std::optional<Error> gone = loss()) {
        return *gone;
    }
    return {};
}

Status Server::sync() {
    if (Status settled = do_settle({SyncScope::Kind::Device, {}, {}}); !settled) {
        return settled;
    }
    if (std::optional<Error> gone = loss()) {
        return *gone;
    }
    return {};
}

Status Server::sync(std::span<const ClaimKey> keys) {
    if (Status settled = do_settle({SyncScope::Kind::Writers, {}, keys}); !settled) {
        return settled;
    }
    return check(keys);
}

Status Server::replay(const CaptureGraph& graph, StreamId stream) {
    if (graph.device() != service()) {
        return Error::wrong_service(service(), graph.device());
    }
    if (std::optional<Error> refused = refusal(stream)) {
        return *refused;
    }
    // Each launch replayed draws, in order, as it would enqueued on its own.
    std::optional<GroupLock> held;
    std::vector<std::optional<InjectedFault>> injected;
    if (hold_to_draw(held)) [[unlikely]] {
        injected.reserve(graph.work().launches.size());
        for (const LaunchRequest& launch : graph.work().launches) {
            injected.push_back(draw_kernel_fault(launch.kernel));
        }
    }
    return do_replay(graph, stream, injected);
}

Result<MemoryUsage> Server::memory_usage() const {
    if (std::optional<Error> gone = loss()) [[unlikely]] {
        return *gone;
    }
    const GroupLock lock = lock_group();
    return memory_manager_.usage();
}

Status Server::inject(const Fault& fault) {
    if (std::optional<Error> gone = loss()) [[unlikely]] {
        return *gone;  // A lost device arms nothing more: it runs nothing more (D1).
    }
    return arm(fault);
}

Status check_job_rank(std::optional<std::uint32_t> rank) {
    if (rank && *rank >= job_ranks_max) {
        return Error::invalid_argument("rank " + std::to_string(*rank) +
                                       " is past the last rank of a job (" +
                                       std::to_string(job_ranks_max - 1) + ")");
    }
    return {};
}

Status sync_every_device(const Runtime& runtime) {
    Status first;
    for (std::size_t index = 0; index < runtime.device_count(); ++index) {
        Status synced = runtime.client(index).sync();
        if (first.ok() && !synced.ok() && synced.error().kind() != ErrorKind::DeviceLost) {
            first = synced;
        }
    }
    return first;
}

}  // namespace tandem
