// How an operation runs on the simulator: its input check (C9, P3, D1), its body, and the claims
// its outcome leaves (C3, C8, C10, P4), including outcomes that arrive late (C13).

#include "engine.hpp"
#include "tandem/sim/kernel_registry.hpp"

#include <cstring>

namespace tandem::sim {
namespace {

/// Thrown into a kernel whose wait a deadlock resolution gave up on.
struct Abandoned {};

class OperationHost final : public KernelHost {
public:
    OperationHost(Engine& engine, SimDevice& device, Operation& operation)
        : engine_(engine), device_(device), operation_(operation) {}

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
        return device_.describe_address(address);
    }
    [[nodiscard]] bool threaded() const override {
        return engine_.options.mode == SchedulerMode::Threads;
    }

private:
    Engine& engine_;
    SimDevice& device_;
    Operation& operation_;
};

std::string where(const Operation& operation) {
    return "'" + operation.label + "' (device " + std::to_string(operation.device) + ", stream " +
           std::to_string(operation.stream_local + 1) + ", #" + std::to_string(operation.sequence) +
           ")";
}

}  // namespace

// ---------------------------------------------------------------- claims of an outcome

namespace {

void remove_unresolved(Engine& engine, const Operation& operation) {
    std::erase_if(engine.unresolved,
                  [&operation](const auto& pending) { return pending.get() == &operation; });
}

/// C13: every operation that consumed `operation`'s outputs before its failure was known is
/// treated as skipped, transitively.
void fail_dependents(Engine& engine, Operation& operation) {
    std::vector<std::shared_ptr<Operation>> dependents = std::move(operation.dependents);
    operation.dependents.clear();
    remove_unresolved(engine, operation);
    for (const std::shared_ptr<Operation>& dependent : dependents) {
        std::optional<Cause> cause = first_claimed_input(engine, dependent->inputs);
        if (!cause) {
            continue;
        }
        if (dependent->state != Operation::State::Done) {
            if (!dependent->doom) {
                dependent->doom = cause;
            }
            continue;
        }
        claim_skipped(engine, dependent->label, dependent->outputs, *cause);
        dependent->succeeded = false;
        engine.mix_trace(0xc13);
        fail_dependents(engine, *dependent);
    }
}

/// C13: `operation` and its inputs' producers all landed: its outcome is final.
void resolve(Engine& engine, Operation& operation) {
    std::vector<std::shared_ptr<Operation>> dependents = std::move(operation.dependents);
    operation.dependents.clear();
    remove_unresolved(engine, operation);
    for (const std::shared_ptr<Operation>& dependent : dependents) {
        if (--dependent->unresolved_producers == 0 && dependent->state == Operation::State::Done &&
            dependent->succeeded) {
            resolve(engine, *dependent);
        }
    }
}

/// Registers `operation` as a consumer of every unresolved operation whose outputs it reads.
void link_producers(Engine& engine, const std::shared_ptr<Operation>& operation) {
    for (const std::shared_ptr<Operation>& producer : engine.unresolved) {
        bool reads_it = false;
        for (const Target& input : operation->inputs) {
            for (const Target& output : producer->outputs) {
                reads_it = reads_it || (input.device == output.device &&
                                        overlap(input.key, output.key) != Overlap::Disjoint);
            }
        }
        if (reads_it) {
            producer->dependents.push_back(operation);
            ++operation->unresolved_producers;
        }
    }
}

void record_accesses(Engine& engine, const Operation& operation) {
    const std::string label = where(operation);
    for (const Target& input : operation.inputs) {
        engine.races.record(input.key.memory,
                            RaceDetector::Access{input.key.range, false, operation.stream_global,
                                                 operation.epoch, label, operation.clock});
    }
    for (const Target& output : operation.outputs) {
        engine.races.record(output.key.memory,
                            RaceDetector::Access{output.key.range, true, operation.stream_global,
                                                 operation.epoch, label, operation.clock});
    }
}

// ---------------------------------------------------------------- bodies

Result<std::vector<BoundResource>> bind_resources(Engine& engine, SimDevice& device,
                                                  const LaunchRequest& request) {
    std::vector<BoundResource> bound;
    bound.reserve(request.resources.size());
    for (const KernelResource& resource : request.resources) {
        const BufferBinding& binding = resource.buffer_binding();
        BoundResource entry;
        entry.access = resource.access();
        entry.size_bytes = binding.size_in_use();
        if (const PeerBinding* peer = resource.peer_binding()) {
            SimDevice* owner = engine.device_of(peer->memory().owner_service());
            entry.address = peer->address();
            entry.host = owner->storage().host(entry.address);
            entry.owner_device = owner->index();
            entry.granted = owner->peer_access_granted(device.service());
        } else {
            entry.address = binding.start_address();
            entry.host = device.storage().host(entry.address);
            entry.owner_device = device.index();
        }
        if (const auto* map = std::get_if<TensorMapBinding>(&resource.binding())) {
            entry.tensor_map = map->descriptor();
        }
        bound.push_back(std::move(entry));
    }
    return bound;
}

/// Why a launch is refused before it runs (C10), if it is.
std::optional<Error> refusal(const LaunchRequest& request) {
    if (find_kernel(request.kernel) == nullptr) {
        return Error::launch_refused(request.kernel, "no kernel of that name is registered");
    }
    if (!launchable(request.config)) {
        return config_refusal(request.kernel, request.config);
    }
    return std::nullopt;
}

/// Runs one launch's kernel on `context`; records the kernel's failure, fault or throw.
void run_kernel(Operation& operation, SimKernelContext& context, const LaunchRequest& request) {
    try {
        find_kernel(request.kernel)(context, request.config);
        if (context.failure_code() && !operation.failure_code) {
            operation.failure_code = context.failure_code();
        }
    } catch (const SimFault& fault) {
        operation.fault = fault.report;
    } catch (const Abandoned&) {
        operation.error = Error::torn_down("deadlock: " + where(operation) + " " +
                                           operation.blocked_on + ", which can never happen");
    } catch (const std::exception& thrown) {
        operation.error = Error::torn_down(where(operation) + " threw: " + thrown.what());
    }
}

void copy_bytes(Engine& engine, SimDevice& device, const Operation& operation) {
    const BufferBinding& target = operation.held[1];
    const BufferBinding& source = operation.held[0];
    std::byte* to = device.storage().host(target.start_address());
    const std::byte* from = nullptr;
    if (const PeerBinding* peer = operation.copy_source->peer_binding()) {
        from = engine.device_of(peer->memory().owner_service())->storage().host(peer->address());
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
              op.sequence);

    if (device.loss_due()) {
        device.lose("injected device loss");
    }
    if (std::optional<Error> lost = device.lost()) {
        op.error = *lost;  // D1: every later operation fails with DeviceLost.
        finish(device, stream, operation);
        return;
    }
    switch (op.kind) {
        case Operation::Kind::Record:
            events[op.event].completed = true;
            events[op.event].clock = op.clock;
            finish(device, stream, operation);
            return;
        case Operation::Kind::Wait:
            merge_into(op.clock, events[op.event].clock);
            finish(device, stream, operation);
            return;
        case Operation::Kind::Write:
            write_bytes(device, op);
            finish(device, stream, operation);
            return;
        case Operation::Kind::Copy:
            if (std::optional<Cause> cause = first_claimed_input(*this, op.inputs)) {
                op.doom = cause;
            } else {
                link_producers(*this, operation);
                copy_bytes(*this, device, op);
            }
            finish(device, stream, operation);
            return;
        case Operation::Kind::Launch:
        case Operation::Kind::Replay:
            break;
    }

    std::vector<const LaunchRequest*> launches;
    if (op.kind == Operation::Kind::Launch) {
        const LaunchRequest& request = *op.launch;
        // An empty grid is a launch of nothing; blocks of no threads are refused below.
        if (request.config.runs_nothing() && find_kernel(request.kernel) != nullptr) {
            op.touches_nothing = true;  // C10: a launch with zero threads changes no claim.
            finish(device, stream, operation);
            return;
        }
        if (std::optional<Error> refused = refusal(request)) {
            op.inputs.clear();  // C10: refused before it runs, only its outputs are claimed.
            op.error = *refused;
            finish(device, stream, operation);
            return;
        }
        if (std::optional<Cause> cause = first_claimed_input(*this, op.inputs)) {
            op.doom = cause;
            finish(device, stream, operation);
            return;
        }
        launches.push_back(&request);
    } else {
        // C14: a replay does not check inputs; the caller wrote fresh ones.
        for (const LaunchRequest& request : op.graph->launches()) {
            launches.push_back(&request);
        }
    }

    link_producers(*this, operation);
    unresolved.push_back(operation);
    op.host = std::make_unique<OperationHost>(*this, device, op);
    op.body = [this, &device, &op, launches] {
        for (const LaunchRequest* const& request : launches) {
            const std::size_t launch_index = static_cast<std::size_t>(&request - launches.data());
            if (launch_index < op.injected.size() && op.injected[launch_index]) {
                op.failure_code = op.injected[launch_index];  // Reported without running.
                return;
            }
            Result<std::vector<BoundResource>> bound = [&] {
                std::lock_guard lock(mutex);
                return bind_resources(*this, device, *request);
            }();
            if (!bound) {
                op.error = bound.error();
                return;
            }
            SimKernelContext context(request->kernel, std::move(*bound), request->args,
                                     request->config.thread_count(), *op.host);
            run_kernel(op, context, *request);
            if (op.failure_code || op.fault || op.error) {
                return;
            }
        }
    };
    if (options.mode == SchedulerMode::Deterministic) {
        op.fiber = std::make_unique<Fiber>(op.body);
        resume(device, stream, operation);
    }
}

void Engine::resume(SimDevice& device, SimStream& stream,
                    const std::shared_ptr<Operation>& operation) {
    operation->fiber->resume();
    mix_trace(0x5e5e ^ operation->sequence);
    if (operation->fiber->finished()) {
        finish(device, stream, operation);
    }
}

void Engine::finish(SimDevice& device, SimStream& stream,
                    const std::shared_ptr<Operation>& operation) {
    Operation& op = *operation;
    bool failed = true;
    std::string outcome = "ok";
    if (op.touches_nothing) {
        failed = false;
    } else if (op.doom) {
        claim_skipped(*this, op.label, op.outputs, *op.doom);
        outcome = "skipped: " + cause_error(*this, *op.doom).message();
    } else if (op.fault) {
        device.lose(*op.fault);  // D1: a sticky fault loses the device.
        claim_failed(*this, op.outputs, *device.lost());
        outcome = "lost: " + *op.fault;
    } else if (op.failure_code) {
        Error error = Error::kernel_failed(
            KernelFailedDetails{op.label, device.service(), stream.id, *op.failure_code});
        claim_failed(*this, op.outputs, error);
        outcome = "failed: " + error.message();
    } else if (op.error) {
        claim_failed(*this, op.outputs, *op.error);
        outcome = "failed: " + op.error->message();
    } else {
        failed = false;
        release_outputs(*this, op.outputs);
        if (op.kind != Operation::Kind::Record && op.kind != Operation::Kind::Wait) {
            record_accesses(*this, op);
        }
    }
    op.succeeded = !failed;
    if (stream.capture && op.captured) {
        if (failed && !stream.capture->doomed) {
            // C14: a failed or skipped scope dooms the window.
            stream.capture->doomed = Error::torn_down(where(op) + " failed or was skipped");
        } else if (!failed) {
            for (const Target& output : op.outputs) {
                auto& keys = stream.capture->write_set;
                if (std::find(keys.begin(), keys.end(), output.key) == keys.end()) {
                    keys.push_back(output.key);  // Deduplicated by claim key, nothing coarser.
                }
            }
        }
    }
    merge_into(stream.clock, op.clock);
    op.state = Operation::State::Done;
    if (failed) {
        fail_dependents(*this, op);
    } else if (op.unresolved_producers == 0) {
        resolve(*this, op);
    } else if (std::find(unresolved.begin(), unresolved.end(), operation) == unresolved.end()) {
        unresolved.push_back(operation);
    }
    mix_trace(failed ? 0xfa11 : 0x900d);
    record(op, TraceRecord::Phase::End, std::move(outcome));
    op.held.clear();
    op.context.reset();
    if (!stream.queue.empty() && stream.queue.front() == operation) {
        stream.queue.pop_front();
    }
    changed.notify_all();
}

}  // namespace tandem::sim
