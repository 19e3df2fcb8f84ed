// How an operation runs on the simulator: its input check before it runs (C9, P3, D1), its body,
// and the report of its outcome, which the settle pipeline turns into claims in enqueue order
// (C3, C8, C13, P4).

#include "engine.hpp"
#include "tandem/sim/kernel_registry.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tandem::sim {
namespace {

/// Thrown into a kernel whose wait a deadlock resolution gave up on.
struct Abandoned {};

class OperationHost final : public KernelHost {
public:
    OperationHost(Engine& engine, SimDevice& device, Operation& operation)
        : engine_(engine), device_(&device), operation_(operation) {}
    /// Serves the next launch of its operation, on `device`.
    void serve(SimDevice& device) { device_ = &device; }

    void yield() override {
        // A stop only matters when other work could run in it; alone, the scheduler would pick
        // this kernel again, so the two context switches are skipped. The decision depends only
        // on the schedule so far, so runs stay reproducible.
        if (!threaded() && Fiber::current() != nullptr && engine_.other_work_waiting(operation_)) {
            Fiber::yield();
        }
    }
    void block_until(const std::function<bool()>& ready, const std::string& what) override {
        while (!ready()) {
            if (operation_.abandoned.load()) {
                throw Abandoned{};
            }
            if (threaded() || Fiber::current() == nullptr) {
                std::this_thread::yield();
                continue;
            }
            operation_.blocked = ready;
            operation_.blocked_on = what;
            Fiber::yield();
        }
        operation_.blocked = nullptr;
        if (operation_.abandoned.load()) {
            throw Abandoned{};
        }
    }
    void on_release(std::uint64_t address) override {
        std::lock_guard lock(engine_.mutex);
        engine_.races.release(address, operation_.clock);
    }
    void on_acquire(std::uint64_t address) override {
        std::lock_guard lock(engine_.mutex);
        engine_.races.acquire(address, operation_.clock);
    }
    [[nodiscard]] std::string describe_address(std::uint64_t address) const override {
        return device_->describe_address(address);
    }
    [[nodiscard]] bool threaded() const override {
        return engine_.options.mode == SchedulerMode::Threads;
    }

private:
    Engine& engine_;
    SimDevice* device_;
    Operation& operation_;
};

}  // namespace

// ---------------------------------------------------------------- claims of an outcome

namespace {

void record_accesses(Engine& engine, const Operation& operation) {
    if (operation.inputs.empty() && operation.outputs.empty()) {
        return;  // Nothing to record, and the label is not free to build.
    }
    // One access, its storage reused from operation to operation: recording allocates nothing
    // once warm (C12).
    thread_local RaceDetector::Access access;
    where_into(operation, access.label);
    access.stream_global = operation.stream_global;
    access.epoch = operation.epoch;
    access.clock = operation.clock;
    for (const Target& input : operation.inputs) {
        access.range = input.key.range;
        access.write = false;
        engine.races.record(input.key.memory, access);
    }
    for (const Target& output : operation.outputs) {
        access.range = output.key.range;
        access.write = true;
        engine.races.record(output.key.memory, access);
    }
}

// ---------------------------------------------------------------- bodies

/// Fills `bound` (kept by the operation from launch to launch, so that a warm one allocates
/// nothing) with the resources of `request` as its kernel binds them.
void bind_resources(Engine& engine, SimDevice& device, const LaunchRequest& request,
                    std::vector<BoundResource>& bound) {
    bound.clear();
    for (const KernelResource& resource : request.resources) {
        const BufferBinding& binding = resource.buffer_binding();
        BoundResource entry;
        entry.access = resource.access();
        entry.size_bytes = binding.size_in_use();
        if (const PeerBinding* peer = resource.peer_binding()) {
            entry.owner = peer->memory().owner_service();
            entry.address = peer->address();
            entry.host = engine.host_of(entry.owner, entry.address);
            entry.granted = engine.directory.peer_access_granted(entry.owner, device.service());
        } else {
            entry.address = binding.start_address();
            entry.host = device.storage().host(entry.address);
            entry.owner = device.service();
        }
        if (const auto* map = std::get_if<TensorMapBinding>(&resource.binding())) {
            entry.tensor_map = map->descriptor();
        }
        bound.push_back(std::move(entry));
    }
}

/// Runs one launch's kernel on `context`; records the kernel's failure, fault or throw.
void run_kernel(Operation& operation, SimKernelContext& context, const LaunchRequest& request) {
    try {
        if (request.external) {
            context.set_thread(0);
            if (Status ran = request.external->host(context); !ran) {
                operation.error = ran.error();
            }
        } else {
            request.entry->host(context, request.config);
        }
        if (context.failure_code() && !operation.failure_code) {
            operation.failure_code = context.failure_code();
            operation.failed_kernel = request.kernel;
        }
    } catch (const SimFault& fault) {
        operation.fault = fault.report;
    } catch (const Abandoned&) {
        operation.error = Error::torn_down("deadlock: " + where(operation) + " " +
                                           operation.blocked_on + ", which can never happen");
    } catch (...) {
        operation.error = Error::thrown_by(where(operation));
    }
}

void copy_bytes(Engine& engine, SimDevice& device, const Operation& operation) {
    const BufferBinding& target = operation.held[1];
    const BufferBinding& source = operation.held[0];
    std::byte* to = device.storage().host(target.start_address());
    const std::byte* from = nullptr;
    if (const PeerBinding* peer = operation.copy_source->peer_binding()) {
        from = engine.host_of(peer->memory().owner_service(), peer->address());
    } else {
        from = device.storage().host(source.start_address());
    }
    if (target.size_in_use() != 0) {  // An empty binding may have no host bytes behind it.
        std::memmove(to, from, target.size_in_use());
    }
}

void write_bytes(SimDevice& device, const Operation& operation) {
    const BufferBinding& target = operation.held[0];
    if (!operation.bytes.empty()) {  // A write of no bytes has no source to copy from.
        std::memcpy(device.storage().host(target.start_address()), operation.bytes.data(),
                    operation.bytes.size());
    }
}

}  // namespace

// ---------------------------------------------------------------- Engine

namespace {

/// Whether `op` may run now: false when an input is known to end up claimed (C9, C13), in which
/// case it is held back and writes nothing. An input whose producer is not known yet (unordered
/// work) runs provisionally; its settlement decides.
bool may_run(const Engine& engine, Operation& op) {
    const SettlePipeline::Inputs inputs =
        engine.pipeline.examine(op, [](const Work&) { return true; });
    if (inputs == SettlePipeline::Inputs::Claimed) {
        op.held_back = true;
        return false;
    }
    op.set_provisional(inputs != SettlePipeline::Inputs::Clean);
    return true;
}

}  // namespace

void Engine::start(SimDevice& device, SimStream& stream,
                   const std::shared_ptr<Operation>& operation) {
    Operation& op = *operation;
    op.state = Operation::State::Running;
    op.clock = stream.clock;
    merge_into(op.clock, op.host_clock);
    if (op.clock.size() <= op.stream_global) {
        op.clock.resize(op.stream_global + 1, 0);
    }
    op.epoch = ++op.clock[op.stream_global];
    record(op, TraceRecord::Phase::Begin);
    mix_trace((std::uint64_t{op.device} << 48) ^ (std::uint64_t{op.stream_global} << 32) ^
              op.stream_sequence);

    if (op.kind == Operation::Kind::Record) {
        // Ends on a lost device too: the work before it ended (failed), and a peer's stream
        // waiting on it goes on, as on a GPU (D1: other devices keep working).
        EventState& event = events[op.event];
        event.completed = true;
        event.clock = op.clock;
        event.after_failed_wait = stream.after_failed_wait;
        if (!exported_.empty()) [[unlikely]] {
            note_exported_record(op.event, stream.after_failed_wait);
        }
        forget_events();
    }
    if (std::optional<Error> lost = device.lost()) {
        op.error = *lost;  // D1: every later operation fails with DeviceLost.
        finish(device, stream, operation);
        return;
    }
    if (stream.after_failed_wait && op.is_work()) [[unlikely]] {
        // Ordered after what will never happen: skipped with why, writing nothing.
        op.follow_failed_wait(*stream.after_failed_wait);
        op.held_back = true;
        finish(device, stream, operation);
        return;
    }
    switch (op.kind) {
        case Operation::Kind::Record:
            finish(device, stream, operation);
            return;
        case Operation::Kind::Wait:
            wait_for_event(stream, op);
            finish(device, stream, operation);
            return;
        case Operation::Kind::Write:
            write_bytes(device, op);
            finish(device, stream, operation);
            return;
        case Operation::Kind::Copy:
            if (may_run(*this, op)) {
                copy_bytes(*this, device, op);
            }
            finish(device, stream, operation);
            return;
        case Operation::Kind::ReadBack:
            if (may_run(*this, op) && !op.read_into.empty()) {
                std::memcpy(op.read_into.data(), device.storage().host(op.held[0].start_address()),
                            op.read_into.size());
            }
            finish(device, stream, operation);
            return;
        case Operation::Kind::Launch:
            // Refused (C10) or skipped (C9): nothing runs.
            if (op.refusal() || !may_run(*this, op)) {
                finish(device, stream, operation);
                return;
            }
            break;
        case Operation::Kind::Replay:
            break;  // C14: a replay does not check inputs; the caller wrote fresh ones.
    }
    run_launches(device, stream, operation);
}

namespace {

/// How many launches `op` runs: one, or a replay's graph.
std::size_t launch_count(const Operation& op) {
    return op.kind == Operation::Kind::Launch ? 1 : op.graph->work().launches.size();
}

const LaunchRequest& launch_at(const Operation& op, std::size_t index) {
    return op.kind == Operation::Kind::Launch ? *op.launch : op.graph->work().launches[index];
}

/// The body of a launch or replay: each launch's kernel in turn, until one fails.
void run_body(Engine& engine, Operation& op) {
    SimDevice& device = *engine.devices[op.device];
    for (std::size_t index = 0; index < launch_count(op); ++index) {
        const LaunchRequest& request = launch_at(op, index);
        if (index < op.injected.size() && op.injected[index]) {
            op.failure_code = op.injected[index]->code;  // Reported without running.
            op.failed_kernel = request.kernel;
            op.failure_injected = op.injected[index];
            return;
        }
        {
            std::lock_guard lock(engine.mutex);
            bind_resources(engine, device, request, op.bound);
        }
        SimKernelContext context(request.kernel, op.bound, request.args,
                                 request.config.thread_count(), *op.host);
        run_kernel(op, context, request);
        if (op.failure_code || op.fault || op.error) {
            return;
        }
    }
}

}  // namespace

void Engine::run_launches(SimDevice& device, SimStream& stream,
                          const std::shared_ptr<Operation>& operation) {
    Operation& op = *operation;
    // The host of a reused operation is kept: it serves the device the launch runs on.
    if (auto* host = static_cast<OperationHost*>(op.host.get())) {
        host->serve(device);
    } else {
        op.host = std::make_unique<OperationHost>(*this, device, op);
    }
    // Two pointers, which std::function keeps inline: a launch allocates no body.
    op.body = [this, &op] { run_body(*this, op); };
    if (options.mode == SchedulerMode::Deterministic) {
        op.fiber = Fiber::make(op.body);
        resume(device, stream, operation);
    }
}

void Engine::resume(SimDevice& device, SimStream& stream,
                    const std::shared_ptr<Operation>& operation) {
    {
        const RunningHere running(*operation);
        operation->fiber->resume();
    }
    mix_trace(0x5e5e ^ operation->stream_sequence);
    if (operation->fiber->finished()) {
        finish(device, stream, operation);
    }
}

/// What `op` reports when it ends, and the trace's outcome line for it.
std::string Engine::report(SimDevice& device, SimStream& stream, Operation& op) {
    if (!op.is_work()) {
        return op.error ? "failed: " + op.error->message() : "ok";
    }
    if (op.refusal()) {
        return "failed: " + op.refusal()->message();  // Settled as refused; nothing ran.
    }
    if (op.held_back) {
        op.did_not_run();
        return "skipped: an input is unwritten";
    }
    if (op.fault) {
        device.lose(*op.fault);  // D1: a sticky fault loses the device.
        op.ran(*device.lost());
        return "lost: " + *op.fault;
    }
    if (op.failure_code) {
        std::string kernel = op.failed_kernel.empty() ? op.label : op.failed_kernel;
        op.ran(op.failure_injected
                   ? op.failure_injected->failure(std::move(kernel), device.service(), stream.id)
                   : Error::kernel_failed(KernelFailedDetails{std::move(kernel), device.service(),
                                                              stream.id, *op.failure_code}));
        return "failed: " + op.failure()->message();
    }
    if (op.error) {
        op.ran(*op.error);
        return "failed: " + op.error->message();
    }
    op.ran(Status{});
    record_accesses(*this, op);
    return "ok";
}

void Engine::wait_for_event(SimStream& stream, Operation& op) {
    if (op.remote_event) [[unlikely]] {
        // Another process's event: nothing of its clock is here (races are found per process).
        if (Status outcome = remote_wait_outcome(op); !outcome) {
            op.error = outcome.error();
            stream.after_failed_wait = outcome.error();
        } else if (std::optional<Error> failed = directory.failed_wait_before(*op.remote_event);
                   failed && !stream.after_failed_wait) {
            stream.after_failed_wait = std::move(failed);  // Ordered after the owner's, too.
        }
        return;
    }
    merge_into(op.clock, event_clock(op.event));
    if (auto found = events.find(op.event);
        found != events.end() && found->second.after_failed_wait && !stream.after_failed_wait) {
        stream.after_failed_wait = found->second.after_failed_wait;  // Ordered after it too.
    }
}

void Engine::finish(SimDevice& device, SimStream& stream,
                    const std::shared_ptr<Operation>& operation) {
    Operation& op = *operation;
    std::string outcome = report(device, stream, op);
    const bool failed = !outcome.starts_with("ok");
    merge_into(stream.clock, op.clock);
    op.state = Operation::State::Done;
    settle_ready();  // The deterministic mode checks the books after every settle (engine.cpp).
    if (!exported_.empty()) [[unlikely]] {
        reach_exported();  // Another process may wait for what just settled.
    }
    mix_trace(failed ? 0xfa11 : 0x900d);
    record(op, TraceRecord::Phase::End, std::move(outcome));
    if (!op.is_work()) {
        op.held.clear();  // Work keeps its memory reserved until it is settled.
    }
    if (!stream.queue.empty() && stream.queue.front() == operation) {
        stream.queue.pop_front();
    }
    changed.notify_all();
}

}  // namespace tandem::sim
