#pragma once

// A directory over bare claim stores, for tests of core that drive outcomes and the pipeline
// without a backend: every owner is alive and grants every peer.

#include "tandem/backend/device_directory.hpp"

namespace tandem::testing {

class StoreDirectory : public DeviceDirectory {
public:
    /// The store of `owner`, which the test made.
    [[nodiscard]] virtual ClaimStore& store_of(ServiceId owner) const = 0;

    void count_work(std::uint32_t) override {}  // No faults are armed on bare stores.
    std::optional<Error> lost(ServiceId) const override { return std::nullopt; }
    bool peer_access_granted(ServiceId, ServiceId) const override { return true; }
    bool nothing_claimed(ServiceId owner) const override {
        return store_of(owner).nothing_claimed();
    }
    Status check(ServiceId owner, std::span<const ClaimKey> keys) const override {
        return store_of(owner).check(keys);
    }
    std::optional<FoundClaim> first_claimed(ServiceId owner,
                                            std::span<const ClaimKey> keys) const override {
        const ClaimStore& store = store_of(owner);
        const auto claimed = store.first_claimed(keys);
        if (!claimed) {
            return std::nullopt;
        }
        return FoundClaim{claimed->first, claimed->second,
                          store.report(claimed->second, claimed->first)};
    }
    std::optional<Error> report(ServiceId owner, FailureId failure,
                                const ClaimKey& needed) const override {
        return store_of(owner).report_if_alive(failure, needed);
    }
    void claim_failed(ServiceId owner, std::span<const ClaimKey> keys,
                      const Error& error) override {
        (void)store_of(owner).fail(keys, error);
    }
    void claim_skipped(ServiceId owner, std::span<const ClaimKey> keys,
                       std::optional<FailureId> join, const Error& error,
                       SkipRecord skip) override {
        store_of(owner).claim_skipped(keys, join, error, std::move(skip));
    }
    void release(ServiceId owner, const ClaimKey& key) override { store_of(owner).release(key); }
    std::optional<std::string> check_invariants(ServiceId owner) const override {
        return store_of(owner).check_invariants();
    }
    std::size_t claims_size(ServiceId owner) const override {
        return store_of(owner).failure_count() + store_of(owner).claimed_allocation_count();
    }
};

}  // namespace tandem::testing
