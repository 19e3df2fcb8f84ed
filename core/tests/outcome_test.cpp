#include "store_directory.hpp"

#include "tandem/backend/outcome.hpp"

#include <gtest/gtest.h>

namespace tandem {
namespace {

/// Two devices' claim stores, as a runtime would hand them to outcomes.
class TwoDevices final : public testing::StoreDirectory {
public:
    mutable ClaimStore zero{ServiceId{5, 0}};
    mutable ClaimStore one{ServiceId{5, 1}};
    ClaimStore& store_of(ServiceId owner) const override {
        return owner.device_index == 0 ? zero : one;
    }
    ServiceId service_of(std::uint32_t device) const override { return ServiceId{5, device}; }
    bool reaches(ServiceId service) const override {
        return service.runtime_id == 5 && service.device_index < 2;
    }
};

constexpr ServiceId device0{5, 0};
constexpr ServiceId device1{5, 1};

TEST(Outcome, a_skip_applied_after_its_failure_was_dropped_still_names_the_root) {
    TwoDevices devices;
    const MemoryId source = MemoryId::next();
    const ClaimKey source_key{source, {0, 16}};
    const ClaimKey failed[] = {source_key};
    (void)devices.zero.fail(failed,
                            Error::kernel_failed({"producer", ServiceId{5, 0}, StreamId{1}, 77}));
    const Target inputs[] = {Target{device0, source_key}};
    std::optional<Cause> cause = first_claimed_input(devices, inputs);
    ASSERT_TRUE(cause.has_value());
    // The source is freed before the skip is applied (a later sync): its failure is dropped.
    devices.zero.forget(source);
    ASSERT_TRUE(devices.zero.drained());
    const Target outputs[] = {Target{device0, ClaimKey{MemoryId::next(), {0, 8}}},
                              Target{device1, ClaimKey{MemoryId::next(), {0, 8}}}};
    claim_skipped(devices, ServiceId{5, 1}, "consumer", outputs, *cause);
    for (const Target& output : outputs) {
        const ClaimKey key[] = {output.key};
        Status read = devices.store_of(output.owner).check(key);
        ASSERT_FALSE(read);
        const auto* details = read.error().details_as<UnwrittenDetails>();
        ASSERT_NE(details, nullptr);
        // The root itself, not the owner's report of it (a hop carries the root and its hops).
        const auto* root = details->root->details_as<KernelFailedDetails>();
        ASSERT_NE(root, nullptr) << read.error().report();
        EXPECT_EQ(root->code, 77u);
    }
}

TEST(Outcome, a_skip_on_the_failures_own_device_reuses_the_failure) {
    TwoDevices devices;
    const ClaimKey source_key{MemoryId::next(), {0, 16}};
    const ClaimKey failed[] = {source_key};
    const FailureId failure = devices.zero.fail(failed, Error::torn_down("root"));
    const Target inputs[] = {Target{device0, source_key}};
    std::optional<Cause> cause = first_claimed_input(devices, inputs);
    const Target outputs[] = {Target{device0, ClaimKey{MemoryId::next(), {0, 8}}}};
    claim_skipped(devices, ServiceId{5, 1}, "consumer", outputs, *cause);
    EXPECT_EQ(devices.zero.failure_count(), 1u);
    EXPECT_EQ(devices.zero.allocations_carrying(failure), 2u);
}

/// `TwoDevices` with device 1 lost.
class DeviceOneLost final : public testing::StoreDirectory {
public:
    mutable ClaimStore zero{device0};
    mutable ClaimStore one{device1};
    ClaimStore& store_of(ServiceId owner) const override {
        return owner.device_index == 0 ? zero : one;
    }
    ServiceId service_of(std::uint32_t device) const override { return ServiceId{5, device}; }
    bool reaches(ServiceId service) const override {
        return service.runtime_id == 5 && service.device_index < 2;
    }
    std::optional<Error> lost(ServiceId owner) const override {
        return owner == device1 ? std::optional(Error::device_lost(device1, "a test lost it"))
                                : std::nullopt;
    }
};

TEST(Outcome, work_writing_a_lost_devices_memory_is_skipped_with_the_loss_claiming_the_rest) {
    DeviceOneLost devices;
    const Target outputs[] = {Target{device0, ClaimKey{MemoryId::next(), {0, 8}}},
                              Target{device1, ClaimKey{MemoryId::next(), {0, 8}}}};
    std::optional<Cause> cause = first_lost_output(devices, device0, outputs);
    ASSERT_TRUE(cause.has_value());
    EXPECT_EQ(cause->owner, device1);
    EXPECT_EQ(cause->needed, outputs[1].key);
    claim_skipped(devices, device0, "writer", outputs, *cause);
    const ClaimKey key[] = {outputs[0].key};
    Status read = devices.zero.check(key);
    ASSERT_FALSE(read);
    const auto* details = read.error().details_as<UnwrittenDetails>();
    ASSERT_NE(details, nullptr);
    EXPECT_EQ(details->root->kind(), ErrorKind::DeviceLost) << read.error().report();
    EXPECT_NE(read.error().report().find("a test lost it"), std::string::npos);
    const Target living[] = {outputs[0]};
    EXPECT_FALSE(first_lost_output(devices, device0, living).has_value());
    // The running device's own loss is not asked here: the work fails where it runs.
    EXPECT_FALSE(first_lost_output(devices, device1, outputs).has_value());
}

}  // namespace
}  // namespace tandem
