// What every device keeps the same way, whatever backend runs its work: claims, loss, grants,
// faults, streams destroyed, adopted memory and capture windows.

#include "tandem/backend/server.hpp"

#include "tandem/backend/cross_process_events.hpp"

#include "tandem/backend/held_ranges.hpp"
#include "tandem/core/labels.hpp"

#include "api/label_table.hpp"

namespace tandem {

/// The release sink of one allocation a Server made outside its memory manager (adopted memory,
/// memory another process shared): when the last holder goes it calls `released` once with the
/// allocation (a throw has nowhere to go then: the last reference went in a destructor), then
/// deletes itself.
class CallbackRelease final : public ReleaseSink {
public:
    explicit CallbackRelease(std::function<void(const AllocationInfo&)> released)
        : released_(std::move(released)) {}

    void released(detail::MemoryControl& control) noexcept override {
        try {
            released_(control.allocation);
        } catch (...) {
            // Nothing is left to report it to.
        }
        control.drop_weak();
        delete this;
    }

private:
    std::function<void(const AllocationInfo&)> released_;
};

Server::~Server() {
    // Labels of streams never destroyed one by one go with their device: no later device has its
    // id (the runtime's is drawn at random).
    detail::LabelTable::forget_streams(service_);
}

Result<Handle> Server::import_shared(ImportedShare share) {
    const GroupLock lock = lock_group();
    if (Status alive = refuse_if_lost(); !alive) {
        return alive.error();
    }
    if (share.owner.runtime_id == service_.runtime_id || !directory_.reaches(share.owner)) {
        return Error::peer_unreachable(service_, share.owner,
                                       "not a device of another process of this job");
    }
    const AllocationInfo info = share.allocation;
    // The owner's claims are the owner's to forget: this process only says it holds no more.
    auto* sink = new CallbackRelease(
        [released = std::move(share.released)](const AllocationInfo&) {
            if (released) {
                released();
            }
        });
    Handle handle(key(), ManagedMemoryHandle::create(key(), info, sink), share.owner, info.stream,
                  info.size_bytes);
    PeerMemory memory(key(), handle.binding().memory(), info.address, share.owner,
                      std::move(share.owner_view));
    return handle.with_peer(std::move(memory));
}

Status Server::check(std::span<const ClaimKey> keys) const {
    const GroupLock lock = lock_group();
    if (Status alive = refuse_if_lost(); !alive) {
        return alive;
    }
    return claims_.check(keys);
}

std::optional<Error> Server::claim_on(const ClaimKey& key) const {
    const GroupLock lock = lock_group();
    if (lost_) {
        return lost_;
    }
    const ClaimKey keys[] = {key};
    const auto claimed = claims_.first_claimed(keys);
    if (!claimed) {
        return std::nullopt;
    }
    return claims_.report(claimed->second, claimed->first);
}

Result<PeerMemory> Server::share(const BufferBinding& binding) {
    const GroupLock lock = lock_group();
    if (Status alive = refuse_if_lost(); !alive) {
        return alive.error();
    }
    if (binding.service() != service_) {
        return Error::wrong_service(service_, binding.service());
    }
    return PeerMemory(key(), binding.memory(), binding.memory().allocation().address,
                      service_, weak_from_this());
}

std::optional<Error> Server::no_room_for_stream() const {
    if (stream_count_.load(std::memory_order_acquire) < max_streams) {
        return std::nullopt;
    }
    return Error::invalid_argument(to_string(service_) + " has created " +
                                   std::to_string(max_streams) +
                                   " streams, the most a device creates in its life");
}

bool Server::destroyed(StreamId stream) const {
    std::lock_guard lock(destroyed_mutex_);
    return destroyed_.contains(stream.value);
}

Status Server::destroy_checked(StreamId stream) {
    const GroupLock lock = lock_group();
    Result<DeviceStream*> found = device_stream(stream);
    if (!found) {
        return found.error();
    }
    if ((*found)->capture) {
        return Error::invalid_argument(stream_name(service_, stream) +
                                       " is capturing: end the capture before destroying it");
    }
    // Its work must run and settle first: what it holds is held until then.
    if (Status synced = sync_stream(stream); !synced) {
        return synced;
    }
    do_release_stream(**found);
    (*found)->destroyed = true;
    {
        std::lock_guard destroyed_lock(destroyed_mutex_);
        destroyed_.insert(stream.value);
        destroyed_count_.fetch_add(1, std::memory_order_release);
    }
    detail::LabelTable::forget(service_, stream);  // Its id is never reused: nothing names it.
    return {};
}

Result<DeviceStream*> Server::device_stream(StreamId id) {
    if (DeviceStream* found = do_find_stream(id)) {
        return found;
    }
    return no_such_stream(id);
}

Result<Handle> Server::adopt_checked(AdoptedMemory memory) {
    const GroupLock lock = lock_group();
    if (Status alive = refuse_if_lost(); !alive) {
        return alive.error();
    }
    const auto address = reinterpret_cast<std::uint64_t>(memory.pointer);
    if (Status fits = do_check_adopted(memory); !fits) {
        return fits.error();
    }
    // Last, since it holds the range at once if no one holds a byte of it: two adoptions of the
    // same bytes, on any devices, race to one.
    if (!HeldRanges::process().hold(address, memory.size_bytes)) {
        return Error::invalid_argument(
            "the adopted range of " + std::to_string(memory.size_bytes) + " bytes at " +
            std::to_string(address) + " overlaps memory tandem already holds in this process " +
            "(the storage or adopted memory of a device of any runtime); " + to_string(service_) +
            " adopts none of it");
    }
    const AllocationInfo info{MemoryId::next(service_.rank), address, memory.size_bytes,
                              default_stream()};
    // The owner's claims on it are forgotten (C5), then the adopter's release is called.
    auto* sink = new CallbackRelease([owner = weak_from_this(), release = std::move(memory.release)](
                                         const AllocationInfo& allocation) {
        if (std::shared_ptr<Server> server = owner.lock()) {
            server->claims().forget(allocation.id);
            server->adopted_released();
        }
        // Before the adopter frees it: memory it then allocates again may be adopted again.
        HeldRanges::process().release(allocation.address);
        if (release) {
            release();
        }
    });
    adopted_live_.fetch_add(1, std::memory_order_acq_rel);
    return Handle(key(), ManagedMemoryHandle::create(key(), info, sink), service_, default_stream(),
                  memory.size_bytes);
}

Status Server::begin_capture(StreamId stream) {
    if (std::optional<Error> refused = refusal(stream)) {
        return *refused;
    }
    const GroupLock lock = lock_group();
    Result<DeviceStream*> found = device_stream(stream);
    if (!found) {
        return found.error();
    }
    if ((*found)->capture) {
        return Error::invalid_argument(stream_name(service_, stream) + " is already capturing");
    }
    (*found)->capture = std::make_shared<CaptureWindow>();
    return {};
}

Result<CaptureGraph> Server::end_capture(StreamId stream) {
    if (std::optional<Error> gone = loss()) [[unlikely]] {
        return *gone;  // Never the graph of a window whose device can run nothing more (D1).
    }
    const GroupLock lock = lock_group();
    Result<DeviceStream*> found = device_stream(stream);
    if (!found) {
        return found.error();
    }
    if (!(*found)->capture) {
        return Error::invalid_argument(stream_name(service_, stream) + " is not capturing");
    }
    std::shared_ptr<CaptureWindow> window = std::move((*found)->capture);
    // Settled, the window's clean launches have filled its write set, and a failed or skipped
    // one has doomed it.
    if (Status settled = do_settle_window(stream, *window); !settled) {
        return settled.error();
    }
    window->close();
    if (window->doomed) {
        Error refusal =
            Error::launch_refused("capture",
                                  "the recording window was doomed: " + window->doomed->message())
                .caused_by(*window->doomed);
        (void)claims_.fail(window->write_set, refusal);
        return refusal;
    }
    return do_make_graph(*window);
}

Result<CaptureGraph> Server::do_make_graph(CaptureWindow& window) {
    return graph_of(window, nullptr);
}

CaptureGraph Server::graph_of(CaptureWindow& window, std::shared_ptr<void> native) const {
    auto work = std::make_shared<CapturedWork>(
        CapturedWork{std::move(window.launches), std::move(native)});
    return CaptureGraph(key(), service_, std::move(window.write_set), std::move(work));
}

bool Server::of_other_process(const Event& event) const {
    return event.device().runtime_id != service_.runtime_id && !event.empty() &&
           directory_.reaches(event.device());
}

Result<Event> Server::import_event(ServiceId owner, StreamId stream, std::uint64_t sequence) {
    if (owner.runtime_id == service_.runtime_id || !directory_.reaches(owner)) {
        return Error::peer_unreachable(service_, owner,
                                       "not a device of another process of this job");
    }
    if (sequence == 0 || stream.value == 0) {
        return Error::invalid_argument("an event of " + to_string(owner) + " names no work");
    }
    return Event(key(), owner, stream, sequence);
}

Status Server::check_event(const Event& event, std::uint64_t next_event) const {
    if (of_other_process(event)) [[unlikely]] {
        // Its owner's board says whether it was published here. A wait once the owner is lost
        // is refused, as for an event of this runtime, even when the event was reached before.
        Result<bool> reached = directory_.event_reached(event);
        if (!reached) {
            return event_refused(event, reached.error());
        }
        if (std::optional<Error> gone = directory_.lost(event.device())) {
            return event_refused(event, *gone);
        }
        return {};
    }
    if (!directory_.reaches(event.device()) || event.sequence() == 0 || event.sequence() >= next_event) {
        return Error::invalid_argument("the event does not belong to this runtime");
    }
    if (std::optional<Error> gone = directory_.lost(event.device())) {
        return Error::device_lost(event.device(), "cannot wait on an event of a lost device")
            .caused_by(*gone);
    }
    return {};
}

Status Server::arm(const Fault& fault) {
    const GroupLock lock = lock_group();
    // A delay is checked before the plan counts it: a refused fault takes no number.
    DeviceStream* delayed = nullptr;
    if (const auto* delay = std::get_if<StreamDelay>(&fault)) {
        Result<DeviceStream*> stream = device_stream(delay->stream);
        if (!stream) {
            return stream.error();
        }
        if (Status bounded = FaultPlan::check_delay((*stream)->delay_steps, delay->steps);
            !bounded) {
            return bounded;
        }
        delayed = *stream;
    }
    if (Status armed = faults_.arm(fault); !armed) {
        return armed;
    }
    kernel_faults_armed_.store(faults_.kernel_faults_armed(), std::memory_order_release);
    do_fault_armed();
    if (const auto* loss = std::get_if<DeviceLossFault>(&fault)) {
        if (loss->after_operations == 0) {
            do_lose_now();
        }
    } else if (delayed != nullptr) {
        const std::uint64_t steps = std::get<StreamDelay>(fault).steps;
        delayed->delay_steps += steps;
        do_delay(*delayed, steps);
    }
    return {};
}

bool Server::hold_to_draw(std::optional<GroupLock>& held) const {
    // A launch that reads the flag just before a fault is armed is ordered before the arming, as
    // it would be had it taken the lock first.
    if (!kernel_faults_armed_.load(std::memory_order_acquire)) [[likely]] {
        return false;
    }
    held.emplace(place_);
    return true;
}

std::optional<InjectedFault> Server::draw_kernel_fault(std::string_view kernel) {
    std::optional<InjectedFault> due = faults_.kernel_fault_due(kernel);
    // A fault for the nth launch is retired once that launch has drawn.
    kernel_faults_armed_.store(faults_.kernel_faults_armed(), std::memory_order_release);
    return due;
}

void Server::reach(ServiceId other) {
    // Devices of another process (a job's other ranks) share no group: their state is theirs.
    if (other.runtime_id == service_.runtime_id && other != service_ && directory_.reaches(other) &&
        !groups_.together(service_.device_index, other.device_index)) [[unlikely]] {
        groups_.join(service_.device_index, other.device_index);
    }
}

Status Server::grant_peer_access(ServiceId accessor) {
    if (std::optional<Error> gone = loss()) [[unlikely]] {
        return *gone;
    }
    if (accessor == service_) {
        return {};
    }
    if (!directory_.reaches(accessor)) {
        return Error::peer_unreachable(service_, accessor, "not a device of this runtime");
    }
    reach(accessor);  // Kernels of the accessor will bind this device's memory.
    const GroupLock lock = lock_group();
    // A device of another process maps what it binds in its own process; admitting it is not
    // this backend's question.
    if (accessor.runtime_id == service_.runtime_id) {
        if (Status admitted = do_admit_peer(accessor); !admitted) {
            return admitted;
        }
    } else {
        directory_.granted_remote(service_, accessor);
    }
    granted_.insert(accessor);
    return {};
}

bool Server::peer_access_granted(ServiceId accessor) const {
    const GroupLock lock = lock_group();
    return granted_locked(accessor);
}

std::optional<Error> Server::lost() const {
    // Set once, before the flag, and never changed after: no lock needed, so a device of another
    // group can ask (check_event, a pipeline's input check).
    if (!lost_flag_.load(std::memory_order_acquire)) {
        return std::nullopt;
    }
    return lost_;
}

Status Server::refuse_if_lost() const {
    if (lost_) {
        return *lost_;
    }
    return {};
}

bool Server::mark_lost(const std::string& reason) {
    if (lost_) {
        return false;
    }
    lost_ = Error::device_lost(service_, reason);
    lost_flag_.store(true, std::memory_order_release);
    directory_.lost_here(service_);  // Other processes reading its memory learn of it.
    return true;
}

}  // namespace tandem
