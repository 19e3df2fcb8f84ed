#pragma once

// The reference backend's internals. A new backend starts from a copy of these two files: a
// device derives from `DeviceServer` (service, claims, loss, grants, faults), records each unit of
// work as a `Work` for the runtime's `SettlePipeline`, runs it its own way, reports how it ended,
// and lets the pipeline settle. Everything a rule decides is decided there, not here.

#include "tandem/core/device_server.hpp"
#include "tandem/core/host_kernel_context.hpp"
#include "tandem/core/reference_runtime.hpp"
#include "tandem/core/settle_pipeline.hpp"
#include "tandem/core/storage.hpp"
#include "tandem/core/stream_order.hpp"

#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <vector>

namespace tandem::reference {

class ReferenceEngine;

/// Work on the reference backend: it keeps its bindings until it is settled, which is at once.
struct ReferenceWork final : Work {
    std::vector<BufferBinding> held;
    void on_settled() override { held.clear(); }
};

struct ReferenceStream {
    StreamId id;
    /// The open recording window (C14), if any.
    std::shared_ptr<CaptureWindow> capture;
};

class ReferenceDevice final : public DeviceServer {
public:
    ReferenceDevice(ReferenceEngine& engine, std::uint32_t index, std::uint64_t capacity_bytes,
                    PoolOptions pools);

    Result<StreamId> do_create_stream() override;
    Result<Handle> do_allocate(std::uint64_t size_bytes, StreamId stream) override;
    Status do_write(const BufferBinding& target, std::span<const std::byte> bytes,
                    StreamId stream) override;
    Result<std::vector<std::byte>> do_read(const BufferBinding& source) override;
    Result<std::vector<std::byte>> do_read_strided(const CopyDescriptor& source) override;
    Status do_copy(const KernelResource& source, const BufferBinding& target,
                   StreamId stream) override;
    Status do_launch(LaunchRequest&& request) override;
    Result<Event> do_record_event(StreamId stream) override;
    Status do_wait_event(StreamId stream, const Event& event) override;
    Status do_sync() override;
    Status do_sync(std::span<const ClaimKey> keys) override;
    Status do_begin_capture(StreamId stream) override;
    Result<CaptureGraph> do_end_capture(StreamId stream) override;
    Status do_replay(const CaptureGraph& graph, StreamId stream) override;
    [[nodiscard]] MemoryUsage do_memory_usage() const override;

    [[nodiscard]] std::uint32_t index() const { return index_; }
    [[nodiscard]] MemoryManager& memory() { return memory_; }
    [[nodiscard]] const MemoryManager& memory() const { return memory_; }

private:
    void do_lose_now() override { mark_lost("injected device loss"); }
    /// Work runs when it is enqueued: a delay holds nothing back, but is checked the same way.
    Status do_delay(StreamId stream, std::uint64_t steps) override;
    Status do_admit_peer(ServiceId accessor) override;
    /// Enqueues `work` on the pipeline and, unless it was refused or an input is known claimed,
    /// runs it at once with `run`, which reports how it ended; then settles.
    Status submit(const std::shared_ptr<ReferenceWork>& work, const std::function<void()>& run);
    /// Runs the kernels of `launches` one after the other into `work`'s report; the first that
    /// fails ends it. `injected` holds one drawn fault per launch.
    void run_launches(const std::vector<const LaunchRequest*>& launches,
                      const std::vector<std::optional<std::uint32_t>>& injected,
                      ReferenceWork& work);
    void run_kernel(const LaunchRequest& request, ReferenceWork& work);
    [[nodiscard]] std::vector<BoundResource> bind(const LaunchRequest& request) const;

    ReferenceEngine& engine_;
    std::uint32_t index_;
    HostStorage storage_;
    CompletedStreamOrder order_;  // Work is done when it is enqueued.
    MemoryManager memory_;
    std::vector<ReferenceStream> streams_;
};

class ReferenceEngine final : public DeviceDirectory {
public:
    explicit ReferenceEngine(ReferenceOptions options);

    [[nodiscard]] ClaimStore& claims_of(std::uint32_t device) const override {
        return devices[device]->claims();
    }
    [[nodiscard]] std::optional<Error> lost(std::uint32_t device) const override {
        return devices[device]->lost();
    }
    [[nodiscard]] ServiceId service_of(std::uint32_t device) const override {
        return devices[device]->service();
    }
    [[nodiscard]] bool peer_access_granted(std::uint32_t owner, ServiceId accessor) const override {
        return devices[owner]->granted_locked(accessor);
    }
    [[nodiscard]] std::optional<std::uint32_t> index_of(ServiceId service) const override {
        return device_of(service) != nullptr ? std::optional<std::uint32_t>(service.device_index)
                                             : std::nullopt;
    }
    [[nodiscard]] ReferenceDevice* device_of(ServiceId service) const {
        if (service.runtime_id != runtime_id || service.device_index >= devices.size()) {
            return nullptr;
        }
        return devices[service.device_index].get();
    }

    ReferenceOptions options;
    std::uint64_t runtime_id;
    std::mt19937_64 rng;
    std::recursive_mutex mutex;
    std::vector<std::shared_ptr<ReferenceDevice>> devices;
    SettlePipeline pipeline{*this};
    std::uint64_t next_event = 1;
};

}  // namespace tandem::reference
