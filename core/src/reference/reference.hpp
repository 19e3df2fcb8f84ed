#pragma once

// The reference backend's internals. A new backend starts from a copy of these two files: a
// device derives from `Server` (service, claims, loss, grants, faults), implements its hooks,
// records each unit of
// work as a `Work` for its group's `SettlePipeline`, runs it its own way, reports how it ended,
// and lets the pipeline settle. Everything a rule decides is decided there, not here. Devices
// start apart, each in a group with a lock of its own (device_groups.hpp): threads driving
// devices that share nothing never wait for each other.

#include "tandem/backend/device_groups.hpp"
#include "tandem/backend/server.hpp"
#include "tandem/backend/held_bindings.hpp"
#include "tandem/backend/settle_pipeline.hpp"
#include "tandem/backend/storage.hpp"
#include "tandem/backend/stream_order.hpp"
#include "tandem/core/host_kernel_context.hpp"
#include "tandem/core/reference_runtime.hpp"

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <vector>

namespace tandem::reference {

class ReferenceEngine;

/// Work on the reference backend: it keeps its bindings until it is settled, which is at once.
struct ReferenceWork final : Work {
    HeldBindings held;
    void on_settled() override { held.clear(); }
};

/// A stream: work on it runs when it is enqueued, so it needs nothing more.
struct ReferenceStream : DeviceStream {};

class ReferenceDevice final : public Server {
public:
    ReferenceDevice(ReferenceEngine& engine, std::uint32_t index, std::uint64_t capacity_bytes,
                    PoolOptions pools);

    [[nodiscard]] std::uint32_t index() const { return index_; }
    [[nodiscard]] MemoryManager& memory() { return memory_; }
    [[nodiscard]] const MemoryManager& memory() const { return memory_; }

private:
    // The backend contract (server.hpp).
    Result<StreamId> do_create_stream() override;
    DeviceStream* do_find_stream(StreamId id) override { return stream_in(streams_, id); }
    Result<Handle> do_allocate(std::uint64_t size_bytes, StreamId stream) override;
    Result<NativeView> do_native(const BufferBinding* binding, StreamId stream) override;
    Status do_write(const BufferBinding& target, std::span<const std::byte> bytes,
                    StreamId stream) override;
    Result<std::vector<std::byte>> do_read(const BufferBinding& source) override;
    Result<std::vector<std::byte>> do_read_strided(const CopyDescriptor& source) override;
    Result<Event> do_read_async(const BufferBinding& source, std::span<std::byte> into,
                                StreamId stream, std::shared_ptr<ReadBack> state) override;
    Status do_copy(const KernelResource& source, const BufferBinding& target,
                   StreamId stream) override;
    Status do_launch(LaunchRequest&& request) override;
    [[nodiscard]] bool do_can_run(const LaunchRequest& request) const override {
        return host_runnable(request);
    }
    Status do_replay(const CaptureGraph& graph, StreamId stream,
                     std::span<const std::optional<InjectedFault>> injected) override;
    Result<Event> do_record_event(StreamId stream) override;
    Status do_wait_event(StreamId stream, const Event& event) override;
    Result<bool> do_event_done(const Event& event, bool block) override;
    Status do_settle(const SyncScope& scope) override;
    /// Work settles when it is enqueued: a window is settled when it ends.
    Status do_settle_window(StreamId, const CaptureWindow&) override { return {}; }
    void do_lose_now() override { mark_lost("injected device loss"); }
    /// Work runs when it is enqueued: a delay holds nothing back, but is checked the same way.
    void do_delay(DeviceStream& stream, std::uint64_t) override { stream.delay_steps = 0; }
    /// Enqueues `work` on the pipeline and runs it at once in the pipeline's scope (`run_now`):
    /// `run` runs it and returns how it ended; then settles.
    Status submit(const std::shared_ptr<ReferenceWork>& work, const std::function<Status()>& run);
    /// Runs the kernels of `launches` one after the other on `work`'s stream; the first that
    /// fails ends it, and is how it ended. `injected` holds one drawn fault per launch, or none
    /// when no fault was armed.
    Status run_launches(const std::vector<const LaunchRequest*>& launches,
                        std::span<const std::optional<InjectedFault>> injected,
                        const ReferenceWork& work);
    /// Runs one kernel on the host; how it ended (a fault, a deadlock or a throw included).
    Status run_kernel(const LaunchRequest& request, const ReferenceWork& work);
    /// The pipeline of the device's group; under the group's lock.
    [[nodiscard]] SettlePipeline& pipeline() const;
    [[nodiscard]] std::vector<BoundResource> bind(const LaunchRequest& request) const;

    ReferenceEngine& engine_;
    std::uint32_t index_;
    HostStorage storage_;
    CompletedStreamOrder order_;  // Work is done when it is enqueued.
    MemoryManager memory_;
    std::deque<ReferenceStream> streams_;
};

class ReferenceEngine final {
public:
    explicit ReferenceEngine(ReferenceOptions options);

    [[nodiscard]] ReferenceDevice* device_of(ServiceId service) const {
        if (service.runtime_id != runtime_id || service.device_index >= devices.size()) {
            return nullptr;
        }
        return devices[service.device_index].get();
    }

    ReferenceOptions options;
    std::uint64_t runtime_id;
    /// How messages name the runtime (`ServiceId::runtime_number`).
    std::uint32_t runtime_number = next_runtime_number();
    std::vector<std::shared_ptr<ReferenceDevice>> devices;
    /// The devices as the pipelines reach them.
    LocalDirectory directory{runtime_id};
    /// Each device's group: its lock and its pipeline (work settles as it is enqueued, so a join
    /// finds nothing unsettled to move).
    DeviceGroups groups{DeviceGroups::Placement::Apart,
                        [this] { return std::make_unique<DeviceGroup>(directory); }};
    /// The sequence of a new event, complete at once as all work is.
    std::uint64_t new_event_sequence() {
        return next_event_.fetch_add(1, std::memory_order_relaxed);
    }
    /// The sequence the next event gets: every event recorded so far has a lower one.
    [[nodiscard]] std::uint64_t next_event_sequence() const {
        return next_event_.load(std::memory_order_relaxed);
    }

private:
    std::atomic<std::uint64_t> next_event_{1};
};

}  // namespace tandem::reference
