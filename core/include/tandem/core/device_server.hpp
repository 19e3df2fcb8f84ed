#pragma once

// What every backend's device keeps and answers the same way, whatever runs its work: its service
// id, its claim store, whether it is lost (D1), which peers it granted access to its shared
// memory, and the faults injected into it. A backend derives from it and implements the calls
// that touch its streams and memory; the calls here take the lock of the backend's engine, which
// serialises a device's state.

#include "tandem/core/claim_store.hpp"
#include "tandem/core/fault_plan.hpp"
#include "tandem/core/memory_manager.hpp"
#include "tandem/core/server.hpp"
#include "tandem/core/work.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tandem {

/// The part of every backend's device that behaves the same whatever runs its work: its service id,
/// its claim store, whether it is lost (D1), the peers it granted access to its shared memory and
/// the faults injected into it. A backend derives from it and implements the `do_` hooks.
class DeviceServer : public Server, public std::enable_shared_from_this<DeviceServer> {
public:
    [[nodiscard]] ServiceId service() const final { return service_; }
    /// DeviceLost once lost (D1), otherwise the first claim on `keys` (C9).
    [[nodiscard]] Status check(std::span<const ClaimKey> keys) const final;
    /// The memory of `binding` as peers bind it, pinned while a peer binding holds it. Refused
    /// when the device is lost or the binding is another device's (P1).
    Result<PeerMemory> share(const BufferBinding& binding) final;
    [[nodiscard]] std::optional<Error> lost() const final;
    /// Arms `fault` (`FaultPlan::arm`: `InvalidArgument` for a probability outside [0, 1] or an
    /// allocation counted from 0); a loss with no delay loses the device now (D1); a stream delay
    /// is checked against its bound and applied by the backend (`do_delay`). The same on every
    /// backend.
    Status inject(const Fault& fault) final;
    /// Lets kernels on `accessor` bind this device's shared memory (P7) once the backend admits
    /// the pair (`do_admit_peer`: `PeerUnreachable` for a device of no runtime of this process, or
    /// GPUs that cannot reach each other).
    Status grant_peer_access(ServiceId accessor) final;
    /// Whether kernels on `accessor` may bind this device's shared memory: always for the device
    /// itself, otherwise once granted (or when the backend grants every peer).
    [[nodiscard]] bool peer_access_granted(ServiceId accessor) const final;
    /// `peer_access_granted` for a caller that holds the engine's lock.
    [[nodiscard]] bool granted_locked(ServiceId accessor) const {
        return accessor == service_ || granted_.contains(accessor) || do_grants_all_peers();
    }

    /// The device's claims and failure graph.
    [[nodiscard]] ClaimStore& claims() { return claims_; }
    /// The device's claims and failure graph, read only.
    [[nodiscard]] const ClaimStore& claims() const { return claims_; }
    /// Whether the device is lost; under the engine's lock.
    [[nodiscard]] bool is_lost() const { return lost_.has_value(); }

protected:
    [[nodiscard]] bool maybe_lost() const final {
        return lost_flag_.load(std::memory_order_acquire);
    }
    /// Stream ids run from 1 and streams are never destroyed: an id is valid iff it is at most
    /// the count, which a backend sets (`set_stream_count`) as it creates them.
    [[nodiscard]] bool has_stream(StreamId stream) const final {
        return stream.value != 0 && stream.value <= stream_count_.load(std::memory_order_acquire);
    }
    /// Sets how many streams exist; a backend calls it as it creates them.
    void set_stream_count(std::uint64_t count) {
        stream_count_.store(count, std::memory_order_release);
    }

protected:
    /// A device `service` whose state the backend's engine serialises with `engine_mutex`.
    DeviceServer(ServiceId service, std::recursive_mutex& engine_mutex)
        : service_(service), claims_(service), engine_mutex_(engine_mutex) {}

    // Hooks: what differs between backends, called under the engine's lock.
    /// An injected loss with no delay: learn what can be learned of pending work, then lose the
    /// device.
    virtual void do_lose_now() = 0;
    /// Holds `stream` back `steps` more, or says why not (no such stream, past the bound).
    virtual Status do_delay(StreamId stream, std::uint64_t steps) = 0;
    /// A fault was armed (a backend that skips its lock while none is armed looks again).
    virtual void do_fault_armed() {}
    /// Whether `accessor`'s kernels can reach this device's memory at all; enables the pair.
    virtual Status do_admit_peer(ServiceId accessor) = 0;
    /// Whether every device may bind this device's shared memory without a grant.
    [[nodiscard]] virtual bool do_grants_all_peers() const { return false; }

    /// What a backend shows to build handles and capture graphs.
    static RuntimeKey key() { return RuntimeKey{}; }
    /// The device's loss, for a call that must not run on a lost device; success otherwise.
    /// Under the engine's lock.
    [[nodiscard]] Status refuse_if_lost() const;
    /// Marks the device lost with `reason` (D1); true if this call lost it, false if it already
    /// was. Under the engine's lock.
    bool mark_lost(const std::string& reason);
    /// The stream `id` among `streams`, or InvalidArgument naming it and this device.
    template <typename Stream>
    Result<Stream*> find_stream(std::vector<Stream>& streams, StreamId id) const {
        for (Stream& candidate : streams) {
            if (candidate.id == id) {
                return &candidate;
            }
        }
        return Error::invalid_argument(to_string(id) + " does not exist on " + to_string(service_));
    }
    /// The injected allocation failure due for an allocation of `size_bytes`, if one is (drawn
    /// here, after the Server's checks, so only an allocation that passed them counts). Under the
    /// engine's lock.
    [[nodiscard]] std::optional<Error> allocation_fault(std::uint64_t size_bytes,
                                                        const MemoryManager& memory) {
        return faults_.allocation_fault_due(size_bytes, memory);
    }
    /// Opens the capture window `window` of `stream` (C14); InvalidArgument if one is open.
    static Status open_capture(std::shared_ptr<CaptureWindow>& window, StreamId stream);
    /// Ends `window`, whose work is all settled: a doomed window is refused, and what it recorded
    /// is claimed with the refusal (C14). None when the window may become a graph.
    std::optional<Error> close_capture(CaptureWindow& window);

    /// The device's id.
    const ServiceId service_;
    /// The device's claims and failure graph.
    ClaimStore claims_;
    /// The devices whose kernels may read this device's shared memory.
    std::set<ServiceId> granted_;
    /// Why the device is lost, once it is (D1); under the engine's lock.
    std::optional<Error> lost_;
    /// The faults injected into this device, and when each is due.
    FaultPlan faults_;

private:
    std::recursive_mutex& engine_mutex_;
    /// `lost_` is set, readable without the lock.
    std::atomic<bool> lost_flag_{false};
    std::atomic<std::uint64_t> stream_count_{0};
};

}  // namespace tandem
