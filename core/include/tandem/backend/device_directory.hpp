#pragma once

// How work on one device reaches the devices whose bytes it reads and writes. Every effect the
// rules have across devices goes through here, asked of the owner by its `ServiceId`: whether it
// is lost (D1), whether it granted the running device (P7), which of its bytes are claimed (C9,
// P3), and the claims that failed, skipped or landed work leaves on it (C8, C9, C3, P4).
//
// No caller holds another device's claim store or lock. Each call is one question to one owner or
// one effect on it, with values in and values out, so that an owner living in another process can
// answer it by message (phase 2 of docs/DESIGN.md). `LocalDirectory` answers for the devices of
// one process.

#include "tandem/backend/claim_store.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/event.hpp"
#include "tandem/core/ids.hpp"
#include "tandem/core/result.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace tandem {

class Server;

/// A claimed byte range found on an owner: the failure claiming it, and its report as a read of
/// that range would see it now (taken at once: the failure may be dropped later, C4).
struct FoundClaim {
    /// The key, of those asked about, with a claimed byte.
    ClaimKey key;
    /// The failure claiming it.
    FailureId failure;
    /// The failure's report for a read of `key`.
    Error report;
};

/// The devices a runtime's work can reach, each asked by its `ServiceId`.
class DeviceDirectory {
public:
    virtual ~DeviceDirectory() = default;

    /// The service of the runtime's device number `device` (the one running the work).
    [[nodiscard]] virtual ServiceId service_of(std::uint32_t device) const = 0;
    /// Whether `service` names a device this directory reaches.
    [[nodiscard]] virtual bool reaches(ServiceId service) const = 0;

    // The device that runs the work.
    /// A unit of work of the runtime's device number `device` is about to be enqueued, in program
    /// order, under its group's lock: the device counts it against an injected loss
    /// (`DeviceLossFault{n}`), and is lost first when the loss is due at it (D1), so that this
    /// unit and every later one fail with the loss.
    virtual void count_work(std::uint32_t device) = 0;

    // Questions to an owner.
    /// The owner's loss (D1), if it is lost.
    [[nodiscard]] virtual std::optional<Error> lost(ServiceId owner) const = 0;
    /// Whether kernels on `accessor` may bind the owner's shared memory (P7).
    [[nodiscard]] virtual bool peer_access_granted(ServiceId owner, ServiceId accessor) const = 0;
    /// Whether no byte at all is claimed on the owner: the common case, answered without a lock.
    [[nodiscard]] virtual bool nothing_claimed(ServiceId owner) const = 0;
    /// The first of `keys`, in order, with a claimed byte on the owner (C6, C9).
    [[nodiscard]] virtual std::optional<FoundClaim> first_claimed(
        ServiceId owner, std::span<const ClaimKey> keys) const = 0;
    /// Whether `keys` of the owner read as written: success, or the error a read of them gets
    /// (C6: `Unwritten` or `Several`, with the root and the skipped work).
    [[nodiscard]] virtual Status check(ServiceId owner, std::span<const ClaimKey> keys) const = 0;
    /// The report of the owner's `failure` for a read of `needed`, while the failure is alive.
    [[nodiscard]] virtual std::optional<Error> report(ServiceId owner, FailureId failure,
                                                      const ClaimKey& needed) const = 0;

    // Effects on an owner.
    /// C8, C10, D1: one new failure carrying `error` claims `keys`.
    virtual void claim_failed(ServiceId owner, std::span<const ClaimKey> keys,
                              const Error& error) = 0;
    /// The first broken invariant of the owner's claims and failure graph (C1, C4), if any:
    /// what the pipeline checks after settling, where it checks (`SettlePipeline::checks`).
    [[nodiscard]] virtual std::optional<std::string> check_invariants(ServiceId owner) const = 0;
    /// Failures and claimed allocations the owner holds: what a walk of its claims costs.
    [[nodiscard]] virtual std::size_t claims_size(ServiceId owner) const = 0;
    /// C9: `keys` take the owner's failure `join` while it is alive, otherwise one new failure
    /// carrying `error`; either way the failure records `skip`.
    virtual void claim_skipped(ServiceId owner, std::span<const ClaimKey> keys,
                               std::optional<FailureId> join, const Error& error,
                               SkipRecord skip) = 0;
    /// C3: the claims on exactly `key`'s bytes are released.
    virtual void release(ServiceId owner, const ClaimKey& key) = 0;
    /// The owner, a device of this process, granted `accessor`, a device of another process
    /// (P7): a directory reaching other processes publishes it there. None by default.
    virtual void granted_remote(ServiceId /*owner*/, ServiceId /*accessor*/) {}
    /// `device`, of this process, was just lost (D1): a directory reaching other processes
    /// publishes it there, so their work reading its memory fails with the loss. None by
    /// default.
    virtual void lost_here(ServiceId /*device*/) {}

    // Events of devices of other processes (a job's other ranks).
    /// Whether `event`, recorded on a device of another process, is reached there: the work
    /// enqueued before it on its stream has run and is settled, so the owner's claims say what
    /// it did (P5 across processes). `InvalidArgument` for an event that was not published to
    /// this process, `DeviceLost` (naming the owner's rank and why) once the owner is lost,
    /// `TornDown` once this process leaves the job it shares with the owner. None but a
    /// directory of other processes knows such events.
    [[nodiscard]] virtual Result<bool> event_reached(const Event& /*event*/) const {
        return Error::invalid_argument("the event does not belong to this runtime");
    }
    /// For `event` of another process, reached: why a wait its stream's work before it was
    /// ordered after failed on the owner, when one did (`ExportedStream::reach`), naming the
    /// event and the owner; none otherwise. A stream's wait on it then skips the stream's later
    /// work with that error (`Work::follow_failed_wait`); a host wait is over all the same, as
    /// for a local event recorded after a failed wait.
    [[nodiscard]] virtual std::optional<Error> failed_wait_before(const Event& /*event*/) const {
        return std::nullopt;
    }
    /// How long a wait for an event of another process holds before it gives up with
    /// `PeerUnreachable`: the host's (`Server::wait`) and a stream's alike.
    [[nodiscard]] virtual std::chrono::milliseconds event_wait_limit() const {
        return std::chrono::seconds(60);
    }
};

/// The devices of one runtime in this process. Each answer comes from the owner's own state: its
/// claim store, under that store's lock; its grants, changed under the lock of the owner's group,
/// which every caller of the group's pipeline holds (work names only owners of its own group,
/// device_groups.hpp); and its loss, set once and readable without a lock. A runtime that serves
/// a rank of a job also reaches the devices of the other ranks (`reach_remote`): what it asks of
/// them goes to the job's directory of those devices.
class LocalDirectory final : public DeviceDirectory {
public:
    /// The directory of the runtime `runtime_id`, with no device yet.
    explicit LocalDirectory(std::uint64_t runtime_id) : runtime_id_(runtime_id) {}

    /// Adds the runtime's next device (device numbers follow the order of `add`).
    void add(Server& device) { devices_.push_back(&device); }
    /// Answers for the devices of other processes through `remote`, kept while this directory
    /// lives (work naming them may outlive the job); set once, before any work names them.
    void reach_remote(std::shared_ptr<DeviceDirectory> remote) {
        remote_kept_ = std::move(remote);
        remote_.store(remote_kept_.get(), std::memory_order_release);
    }
    /// The directory of other processes' devices (`reach_remote`), or null: what a wait that may
    /// outlive this directory (a GPU stream's host function) holds on to.
    [[nodiscard]] std::shared_ptr<DeviceDirectory> remote() const { return remote_kept_; }
    /// Whether `service` is a device of this runtime (not one reached through `reach_remote`).
    [[nodiscard]] bool local(ServiceId service) const { return find(service) != nullptr; }

    [[nodiscard]] ServiceId service_of(std::uint32_t device) const override;
    [[nodiscard]] bool reaches(ServiceId service) const override {
        if (find(service) != nullptr) {
            return true;
        }
        const DeviceDirectory* remote = remote_.load(std::memory_order_acquire);
        return remote != nullptr && remote->reaches(service);
    }
    void count_work(std::uint32_t device) override;
    [[nodiscard]] std::optional<Error> lost(ServiceId owner) const override;
    [[nodiscard]] bool peer_access_granted(ServiceId owner, ServiceId accessor) const override;
    [[nodiscard]] bool nothing_claimed(ServiceId owner) const override;
    [[nodiscard]] Status check(ServiceId owner, std::span<const ClaimKey> keys) const override;
    [[nodiscard]] std::optional<FoundClaim> first_claimed(
        ServiceId owner, std::span<const ClaimKey> keys) const override;
    [[nodiscard]] std::optional<Error> report(ServiceId owner, FailureId failure,
                                              const ClaimKey& needed) const override;
    void claim_failed(ServiceId owner, std::span<const ClaimKey> keys,
                      const Error& error) override;
    void claim_skipped(ServiceId owner, std::span<const ClaimKey> keys,
                       std::optional<FailureId> join, const Error& error,
                       SkipRecord skip) override;
    void release(ServiceId owner, const ClaimKey& key) override;
    void granted_remote(ServiceId owner, ServiceId accessor) override {
        if (DeviceDirectory* remote = remote_.load(std::memory_order_acquire)) {
            remote->granted_remote(owner, accessor);
        }
    }
    void lost_here(ServiceId device) override {
        if (DeviceDirectory* remote = remote_.load(std::memory_order_acquire)) {
            remote->lost_here(device);
        }
    }
    [[nodiscard]] Result<bool> event_reached(const Event& event) const override {
        if (const DeviceDirectory* remote = remote_for(event.device())) {
            return remote->event_reached(event);
        }
        return DeviceDirectory::event_reached(event);
    }
    [[nodiscard]] std::optional<Error> failed_wait_before(const Event& event) const override {
        if (const DeviceDirectory* remote = remote_for(event.device())) {
            return remote->failed_wait_before(event);
        }
        return std::nullopt;
    }
    [[nodiscard]] std::chrono::milliseconds event_wait_limit() const override {
        const DeviceDirectory* remote = remote_.load(std::memory_order_acquire);
        return remote != nullptr ? remote->event_wait_limit() : DeviceDirectory::event_wait_limit();
    }
    [[nodiscard]] std::optional<std::string> check_invariants(ServiceId owner) const override;
    [[nodiscard]] std::size_t claims_size(ServiceId owner) const override;

private:
    /// The device `service` names, or null when it is none of this runtime's.
    [[nodiscard]] Server* find(ServiceId service) const {
        return service.runtime_id == runtime_id_ && service.device_index < devices_.size()
                   ? devices_[service.device_index]
                   : nullptr;
    }
    /// The directory of the devices of other processes, when `owner` is one of those (and the
    /// runtime reaches them); null for a device of this runtime.
    [[nodiscard]] DeviceDirectory* remote_for(ServiceId owner) const {
        return find(owner) != nullptr ? nullptr : remote_.load(std::memory_order_acquire);
    }
    /// The device `owner` names; the pipeline only asks about owners it reached (`reaches`).
    [[nodiscard]] Server& owner_of(ServiceId owner) const;

    std::uint64_t runtime_id_;
    std::vector<Server*> devices_;
    std::shared_ptr<DeviceDirectory> remote_kept_;
    std::atomic<DeviceDirectory*> remote_{nullptr};
};

}  // namespace tandem
