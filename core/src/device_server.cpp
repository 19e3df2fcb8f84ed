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
    return PeerMemory(RuntimeKey{}, binding.memory(), binding.memory().allocation().address, service_,
                      weak_from_this());
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
    Error refusal = Error::launch_refused("capture", "the recording window was doomed: " +
                                                         window.doomed->message())
                        .caused_by(*window.doomed);
    (void)claims_.fail(window.write_set, refusal);
    return refusal;
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
    return true;
}

}  // namespace tandem
