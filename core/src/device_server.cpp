#include "tandem/core/device_server.hpp"

namespace tandem {

Status DeviceServer::check(std::span<const ClaimKey> keys) const {
    std::lock_guard lock(engine_mutex_);
    if (Status alive = refuse_if_lost(); !alive) {
        return alive;
    }
    return claims_.check(keys);
}

Result<PeerMemory> DeviceServer::share(const BufferBinding& binding) {
    std::lock_guard lock(engine_mutex_);
    if (Status alive = refuse_if_lost(); !alive) {
        return alive.error();
    }
    if (binding.service() != service_) {
        return Error::wrong_service(service_, binding.service());
    }
    return PeerMemory(RuntimeKey{}, binding.memory(), binding.memory().allocation().address,
                      service_, weak_from_this());
}

Status DeviceServer::open_capture(std::shared_ptr<CaptureWindow>& window, StreamId stream) {
    if (window) {
        return Error::invalid_argument(to_string(stream) + " is already capturing");
    }
    window = std::make_shared<CaptureWindow>();
    return {};
}

std::optional<Error> DeviceServer::close_capture(CaptureWindow& window) {
    if (!window.doomed) {
        return std::nullopt;
    }
    Error refusal = Error::launch_refused(
                        "capture", "the recording window was doomed: " + window.doomed->message())
                        .caused_by(*window.doomed);
    (void)claims_.fail(window.write_set, refusal);
    return refusal;
}

Status DeviceServer::inject(const Fault& fault) {
    std::lock_guard lock(engine_mutex_);
    if (Status armed = faults_.arm(fault); !armed) {
        return armed;
    }
    do_fault_armed();
    if (const auto* loss = std::get_if<DeviceLossFault>(&fault)) {
        if (loss->after_operations == 0) {
            do_lose_now();
        }
    } else if (const auto* delay = std::get_if<StreamDelay>(&fault)) {
        return do_delay(delay->stream, delay->steps);
    }
    return {};
}

Status DeviceServer::grant_peer_access(ServiceId accessor) {
    std::lock_guard lock(engine_mutex_);
    if (accessor == service_) {
        return {};
    }
    if (Status admitted = do_admit_peer(accessor); !admitted) {
        return admitted;
    }
    granted_.insert(accessor);
    return {};
}

bool DeviceServer::peer_access_granted(ServiceId accessor) const {
    std::lock_guard lock(engine_mutex_);
    return granted_locked(accessor);
}

std::optional<Error> DeviceServer::lost() const {
    std::lock_guard lock(engine_mutex_);
    return lost_;
}

Status DeviceServer::refuse_if_lost() const {
    if (lost_) {
        return *lost_;
    }
    return {};
}

bool DeviceServer::mark_lost(const std::string& reason) {
    if (lost_) {
        return false;
    }
    lost_ = Error::device_lost(service_, reason);
    lost_flag_.store(true, std::memory_order_release);
    return true;
}

}  // namespace tandem
