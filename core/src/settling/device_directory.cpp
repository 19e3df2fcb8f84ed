#include "tandem/backend/device_directory.hpp"

#include "tandem/backend/server.hpp"

#include <cassert>

namespace tandem {

ServiceId LocalDirectory::service_of(std::uint32_t device) const {
    assert(device < devices_.size() && "work runs on a device of the runtime");
    return devices_[device]->service();
}

void LocalDirectory::count_work(std::uint32_t device) {
    assert(device < devices_.size() && "work runs on a device of the runtime");
    devices_[device]->count_work();
}

Server& LocalDirectory::owner_of(ServiceId owner) const {
    Server* device = find(owner);
    assert(device != nullptr && "the pipeline asks only about owners it reaches");
    return *device;
}

std::optional<Error> LocalDirectory::lost(ServiceId owner) const {
    if (const DeviceDirectory* remote = remote_for(owner)) {
        return remote->lost(owner);
    }
    return owner_of(owner).lost();  // Safe without the owner's lock.
}

bool LocalDirectory::peer_access_granted(ServiceId owner, ServiceId accessor) const {
    if (const DeviceDirectory* remote = remote_for(owner)) {
        return remote->peer_access_granted(owner, accessor);
    }
    return owner_of(owner).granted_locked(accessor);
}

bool LocalDirectory::nothing_claimed(ServiceId owner) const {
    if (const DeviceDirectory* remote = remote_for(owner)) {
        return remote->nothing_claimed(owner);
    }
    return owner_of(owner).claims().nothing_claimed();
}

Status LocalDirectory::check(ServiceId owner, std::span<const ClaimKey> keys) const {
    if (const DeviceDirectory* remote = remote_for(owner)) {
        return remote->check(owner, keys);
    }
    return owner_of(owner).claims().check(keys);
}

std::optional<FoundClaim> LocalDirectory::first_claimed(ServiceId owner,
                                                        std::span<const ClaimKey> keys) const {
    if (const DeviceDirectory* remote = remote_for(owner)) {
        return remote->first_claimed(owner, keys);
    }
    const ClaimStore& claims = owner_of(owner).claims();
    const auto claimed = claims.first_claimed(keys);
    if (!claimed) {
        return std::nullopt;
    }
    return FoundClaim{claimed->first, claimed->second,
                      claims.report(claimed->second, claimed->first)};
}

std::optional<Error> LocalDirectory::report(ServiceId owner, FailureId failure,
                                            const ClaimKey& needed) const {
    if (const DeviceDirectory* remote = remote_for(owner)) {
        return remote->report(owner, failure, needed);
    }
    return owner_of(owner).claims().report_if_alive(failure, needed);
}

void LocalDirectory::claim_failed(ServiceId owner, std::span<const ClaimKey> keys,
                                  const Error& error) {
    if (DeviceDirectory* remote = remote_for(owner)) {
        remote->claim_failed(owner, keys, error);
        return;
    }
    (void)owner_of(owner).claims().fail(keys, error);
}

void LocalDirectory::claim_skipped(ServiceId owner, std::span<const ClaimKey> keys,
                                   std::optional<FailureId> join, const Error& error,
                                   SkipRecord skip) {
    if (DeviceDirectory* remote = remote_for(owner)) {
        remote->claim_skipped(owner, keys, join, error, std::move(skip));
        return;
    }
    owner_of(owner).claims().claim_skipped(keys, join, error, std::move(skip));
}

void LocalDirectory::release(ServiceId owner, const ClaimKey& key) {
    if (DeviceDirectory* remote = remote_for(owner)) {
        remote->release(owner, key);
        return;
    }
    owner_of(owner).claims().release(key);
}

std::optional<std::string> LocalDirectory::check_invariants(ServiceId owner) const {
    if (const DeviceDirectory* remote = remote_for(owner)) {
        return remote->check_invariants(owner);
    }
    return owner_of(owner).claims().check_invariants();
}

std::size_t LocalDirectory::claims_size(ServiceId owner) const {
    if (const DeviceDirectory* remote = remote_for(owner)) {
        return remote->claims_size(owner);
    }
    const ClaimStore& claims = owner_of(owner).claims();
    return claims.failure_count() + claims.claimed_allocation_count();
}

}  // namespace tandem
