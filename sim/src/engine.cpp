// The engine's scheduling: which stream's work runs next, and what happens when nothing can.

#include "engine.hpp"

#include "tandem/core/labels.hpp"

#include <chrono>

namespace tandem::sim {

Engine::Engine(SimOptions sim_options)
    : options(sim_options),
      runtime_id(std::random_device{}() ^ (std::uint64_t{std::random_device{}()} << 32)),
      rng(sim_options.seed) {
    if (options.mode == SchedulerMode::Deterministic) {
        // A simulation checks its state every step: a broken book is a bug of tandem, reported
        // with the seed that replays it, at the settle that broke it.
        pipeline.check_after_settles(true, "(simulator seed " + std::to_string(options.seed) + ")");
    }
}

Engine::~Engine() {
    // The last owner went (the runtime, or the last client kept past it): what was enqueued runs
    // before the devices go, as a sync would have run it.
    for (const auto& device : devices) {
        (void)device->sync();
    }
    stop_workers();
}

SimDevice* Engine::device_of(ServiceId service) const {
    if (service.runtime_id != runtime_id || service.device_index >= devices.size()) {
        return nullptr;
    }
    return devices[service.device_index].get();
}

std::byte* Engine::host_of(ServiceId owner, std::uint64_t address) const {
    if (const SimDevice* device = device_of(owner)) [[likely]] {
        return device->storage().host(address);
    }
    return imported.host(address);
}

bool Engine::other_work_waiting(const Operation& operation) const {
    for (const auto& device : devices) {
        for (const SimStream& stream : device->streams()) {
            if (!stream.queue.empty() && stream.global_index != operation.stream_global) {
                return true;
            }
        }
    }
    return false;
}

std::shared_ptr<Operation> Engine::new_operation(Operation::Kind kind) {
    std::shared_ptr<Operation> operation = spare_operations_.take([] { return make_operation(); });
    operation->kind = kind;
    return operation;
}

void Engine::recycle(std::shared_ptr<Operation>&& operation) {
    spare_operations_.give_back(std::move(operation));
}

void Engine::settle_ready() {
    pipeline.settle_ready(
        [this](std::shared_ptr<Work>&& work) { spare_operations_.give_back(std::move(work)); });
}

void Engine::settle_known() {
    pipeline.settle_known(
        [this](std::shared_ptr<Work>&& work) { spare_operations_.give_back(std::move(work)); });
}

void Engine::forget_events() {
    while (events.size() > max_recorded_events && oldest_remembered_event < next_event) {
        auto found = events.find(oldest_remembered_event);
        if (found != events.end()) {
            if (!found->second.completed) {
                return;  // Still to come: everything newer stays too.
            }
            merge_into(forgotten_events_clock, found->second.clock);
            events.erase(found);
        }
        ++oldest_remembered_event;
    }
}

void Engine::mix_trace(std::uint64_t value) {
    trace_hash = (trace_hash ^ value) * 0x100000001b3ULL;
}

void Engine::notify() { changed.notify_all(); }

void Engine::record(const Operation& operation, TraceRecord::Phase phase, std::string outcome) {
    if (!options.record_trace || trace.size() >= TraceRecord::max_records) {
        return;
    }
    const SimStream& stream = devices[operation.device]->streams()[operation.stream_local];
    trace.push_back(TraceRecord{steps, operation.device, stream.id, operation.stream_sequence,
                                operation.label, phase, std::move(outcome)});
}

namespace {

bool runnable(const Engine& engine, const SimStream& stream) {
    if (stream.queue.empty() || stream.delay_steps > 0) {
        return false;
    }
    Operation& head = *stream.queue.front();
    if (head.state == Operation::State::Queued) {
        if (head.remote_event) [[unlikely]] {
            return engine.remote_wait_over(head);
        }
        return head.kind != Operation::Kind::Wait || engine.event_completed(head.event);
    }
    // A running kernel: runnable unless it waits on something still false. In threads mode a
    // running kernel belongs to its worker.
    return engine.options.mode == SchedulerMode::Deterministic && head.fiber &&
           (!head.blocked || head.blocked());
}

/// The `nth` runnable stream (from 0) in the order of devices and their streams.
std::pair<SimDevice*, SimStream*> nth_runnable(const Engine& engine, std::size_t nth) {
    for (const auto& device : engine.devices) {
        for (SimStream& stream : device->streams()) {
            if (runnable(engine, stream) && nth-- == 0) {
                return {device.get(), &stream};
            }
        }
    }
    return {nullptr, nullptr};
}

}  // namespace

bool Engine::step_deterministic(Status& deadlock) {
    // Counted, then the drawn one found by a second walk before the delays count down: no list
    // built every step, and both walks see the same runnable streams.
    std::size_t candidates = 0;
    bool delayed = false;
    bool pending = false;
    for (const auto& device : devices) {
        for (SimStream& stream : device->streams()) {
            pending = pending || !stream.queue.empty();
            delayed = delayed || (!stream.queue.empty() && stream.delay_steps > 0);
            candidates += runnable(*this, stream) ? 1 : 0;
        }
    }
    const auto [device, stream] = candidates == 0 ? std::pair<SimDevice*, SimStream*>{}
                                                  : nth_runnable(*this, rng() % candidates);
    // A held-back stream loses one step of its delay for every step the scheduler takes.
    for (const auto& each_device : devices) {
        for (SimStream& each : each_device->streams()) {
            if (each.delay_steps > 0) {
                --each.delay_steps;
            }
        }
    }
    ++steps;
    if (candidates == 0) {
        if (delayed) {
            return true;
        }
        if (pending && waits_on_other_process()) {
            remote_pause_();  // Another process's device moves its counter, not this one.
            return true;
        }
        if (pending) {
            Status resolved = resolve_deadlock();
            if (deadlock.ok()) {
                deadlock = resolved;
            }
            return true;
        }
        return false;
    }
    remote_pause_ = CounterPause{};
    mix_trace(stream->global_index);
    std::shared_ptr<Operation> head = stream->queue.front();
    if (head->state == Operation::State::Queued) {
        start(*device, *stream, head);
    } else {
        resume(*device, *stream, head);
    }
    if (head->state == Operation::State::Done) {
        recycle(std::move(head));
    }
    return true;
}

Status Engine::resolve_deadlock() {
    // Every stream with work waits on something no runnable work can bring about. Fail the
    // waiters, naming them, so the run goes on and the caller hears why.
    std::string waiters;
    std::vector<std::pair<SimDevice*, SimStream*>> blocked;
    for (const auto& device : devices) {
        for (SimStream& stream : device->streams()) {
            if (stream.queue.empty() || stream.queue.front()->remote_event) {
                continue;  // A wait on another process ends by its owner, its loss or its limit.
            }
            const Operation& head = *stream.queue.front();
            waiters += (waiters.empty() ? "" : "; ") + head.label + " on device " +
                       std::to_string(device->index()) + " " +
                       stream_name(device->service(), stream.id) +
                       (head.blocked_on.empty() ? std::string(" waits for an event")
                                                : " " + head.blocked_on);
            blocked.emplace_back(device.get(), &stream);
        }
    }
    Error error = Error::torn_down("deadlock: " + waiters);
    for (const auto& [device, stream] : blocked) {
        const std::shared_ptr<Operation> head = stream->queue.front();
        head->abandoned = true;
        if (head->state == Operation::State::Queued) {
            head->state = Operation::State::Running;
            head->error = error;
            finish(*device, *stream, head);
        } else if (options.mode == SchedulerMode::Deterministic) {
            resume(*device, *stream, head);  // The wait throws; the kernel ends torn down.
        }
    }
    mix_trace(0xdead10c);
    return error;
}

namespace {

/// The engine's lock as a threads-mode wait lets go of it: every level its caller holds. The
/// workers need the lock to run work, so a wait that kept a level of it would wait for itself
/// (until the stall limit called it a deadlock).
class WholeLock {
public:
    explicit WholeLock(detail::EngineMutex& mutex) : mutex_(mutex), depth_(mutex.depth()) {}
    void unlock() {
        for (int level = 0; level < depth_; ++level) {
            mutex_.unlock();
        }
    }
    void lock() {
        for (int level = 0; level < depth_; ++level) {
            mutex_.lock();
        }
    }

private:
    detail::EngineMutex& mutex_;
    int depth_;
};

/// The operation whose work the calling thread runs, if any (`RunningHere`).
thread_local const Operation* running_here = nullptr;

}  // namespace

RunningHere::RunningHere(const Operation& operation) : previous_(running_here) {
    running_here = &operation;
}

RunningHere::~RunningHere() { running_here = previous_; }

const Operation* RunningHere::operation() { return running_here; }

Status Engine::run_until(const std::function<bool()>& done) {
    if (const Operation* inside = RunningHere::operation(); inside != nullptr) [[unlikely]] {
        // Scheduling from here would run other work inside this work's body (on its fiber, or
        // its stream's worker), and what the call waits for may be queued behind it.
        if (done()) {
            return {};
        }
        return Error::invalid_argument(
            where(*inside) +
            " called tandem from inside its own run, and the call would have to wait for work "
            "not done yet; work a device runs cannot wait for the device's work: make the call "
            "before enqueueing the work, or after it ends");
    }
    if (options.mode == SchedulerMode::Deterministic) {
        Status deadlock;
        while (!done() && step_deterministic(deadlock)) {
        }
        if (!exported_.empty()) [[unlikely]] {
            reach_exported();  // What settled while `done` was asked.
        }
        return deadlock;
    }
    // Threads mode: the caller holds the engine lock; waiting lets go of all of it.
    WholeLock lock(mutex);
    Status deadlock;
    auto last_progress = std::chrono::steady_clock::now();
    std::uint64_t last_steps = steps;
    // A run that makes no progress for this long while work waits is a deadlock.
    constexpr auto stall_limit = std::chrono::seconds(10);
    while (!done()) {
        changed.wait_for(lock, std::chrono::milliseconds(5));
        if (steps != last_steps) {
            last_steps = steps;
            last_progress = std::chrono::steady_clock::now();
            continue;
        }
        bool pending = false;
        for (const auto& device : devices) {
            for (const SimStream& stream : device->streams()) {
                pending = pending || !stream.queue.empty();
            }
        }
        if (!pending) {
            break;
        }
        if (waits_on_other_process()) {
            last_progress = std::chrono::steady_clock::now();  // Waiting on another process.
            continue;
        }
        if (std::chrono::steady_clock::now() - last_progress > stall_limit) {
            Status resolved = resolve_deadlock();
            if (deadlock.ok()) {
                deadlock = resolved;
            }
            last_progress = std::chrono::steady_clock::now();
        }
    }
    return deadlock;
}

void Engine::start_workers() {
    // One worker per stream, started once: streams created later on any device get theirs
    // here. Counting per device matters, since a new stream of device 0 comes before device 1's
    // streams in any flat enumeration.
    std::lock_guard lock(mutex);
    workers_per_device_.resize(devices.size(), 0);
    for (const auto& device : devices) {
        std::size_t& started = workers_per_device_[device->index()];
        for (; started < device->streams().size(); ++started) {
            workers_.emplace_back(&Engine::worker, this, device->index(),
                                  static_cast<std::uint32_t>(started));
        }
    }
}

void Engine::stop_workers() {
    {
        std::lock_guard lock(mutex);
        stopping_ = true;
    }
    changed.notify_all();
    for (std::thread& worker : workers_) {
        worker.join();
    }
    workers_.clear();
}

void Engine::hold_back(SimDevice& device, std::uint32_t stream_local,
                       std::unique_lock<detail::EngineMutex>& lock) {
    // The delay stays on the stream while it is waited out, so that nothing runs it meanwhile;
    // a delay injected during the wait is waited out after it. The streams may move while the
    // lock is let go (a new stream is created): the stream is found again after the wait.
    const std::uint64_t waited = device.streams()[stream_local].delay_steps;
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::microseconds(waited);
    while (!stopping_ && std::chrono::steady_clock::now() < until) {
        changed.wait_until(lock, until);
    }
    std::uint64_t& left = device.streams()[stream_local].delay_steps;
    left -= std::min(waited, left);
    ++steps;  // Progress, for a waiter watching for a stall.
}

void Engine::worker(std::uint32_t device_index, std::uint32_t stream_local) {
    std::unique_lock lock(mutex);
    SimDevice& device = *devices[device_index];
    while (!stopping_) {
        SimStream& stream = device.streams()[stream_local];
        if (!stream.queue.empty() && stream.delay_steps > 0) {
            hold_back(device, stream_local, lock);
            continue;
        }
        if (!runnable(*this, stream)) {
            changed.wait_for(lock, std::chrono::milliseconds(5));
            continue;
        }
        std::shared_ptr<Operation> head = stream.queue.front();
        ++steps;
        start(device, stream, head);
        if (head->state != Operation::State::Done && head->body) {
            const std::function<void()> body = head->body;
            lock.unlock();
            {
                const RunningHere running(*head);
                body();
            }
            lock.lock();
            ++steps;
            finish(device, device.streams()[stream_local], head);
        }
        if (head->state == Operation::State::Done) {
            recycle(std::move(head));
        }
    }
}

}  // namespace tandem::sim
