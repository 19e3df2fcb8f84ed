// Property: random client programs agree with the byte-level model after every step
// (client_program_model.hpp states the oracle) and drain at the end, on every backend of the
// conformance list, with as many devices as the backend has here, up to three: one-device
// programs on a machine with one GPU, two- and three-device programs where there are more.

#include "client_program_model.hpp"
#include "conformance/backends.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>

namespace tandem::conformance {
namespace {

using namespace tandem::model;

template <typename Backend>
class ClientProperties : public ::testing::Test {};
TYPED_TEST_SUITE(ClientProperties, Backends, BackendNames);

/// Runs one case and prints the message of the first case that fails, as it failed. A failure on
/// a GPU can depend on timing, so the shrunk case rapidcheck runs again to report it may pass and
/// say only "no exceptions thrown"; this keeps the original message.
template <typename Case>
void printing_the_first_failure(const Case& one_case) {
    static bool printed = false;
    try {
        one_case();
    } catch (const rc::detail::CaseResult& result) {
        if (result.type == rc::detail::CaseResult::Type::Failure && !printed) {
            printed = true;
            std::fprintf(stderr, "first failure, before shrinking:\n%s\n",
                         result.description.c_str());
        }
        throw;
    }
}

/// Backend-specific checks of a drained runtime: the simulator also reports no race.
template <typename Backend>
void check_drained_extras(Runtime& runtime) {
#ifdef TANDEM_HAVE_SIM
    if constexpr (std::is_same_v<Backend, SimBackend> ||
                  std::is_same_v<Backend, SimThreadsBackend>) {
        RC_ASSERT(static_cast<sim::SimRuntime&>(runtime).races().empty());
    }
#endif
    (void)runtime;
}

TYPED_TEST(ClientProperties, programs_agree_with_the_byte_model_and_drain) {
    const std::uint32_t devices_max = std::min<std::uint32_t>(3, TypeParam::devices_available());
    if (devices_max == 0) {
        GTEST_SKIP() << TypeParam::make(1).why_not;
    }
    std::printf("%s: programs of 1 to %u devices\n", TypeParam::name, devices_max);
    const bool held = rc::check("programs agree with the byte model and drain", [devices_max] {
        printing_the_first_failure([devices_max] {
            ClientModel initial;
            initial.devices = *rc::gen::inRange<std::uint32_t>(1, devices_max + 1);
            const auto seed = *rc::gen::inRange<std::uint64_t>(1, 1u << 20);
            std::atomic<int> releases = 0;  // Of adopted buffers; it outlives the runtime.
            // A runtime per case: injected faults a case leaves unconsumed must not reach the next.
            Made made = TypeParam::make(initial.devices, seed);
            RC_ASSERT(made.runtime != nullptr);
            ClientSut sut = ClientSut::of(*made.runtime, initial.devices, &releases);
            rc::state::check(initial, sut, client_program());
            // Drain: drop every handle; nothing may be left behind, and every adopted buffer went
            // back to its allocator once. Reads never waited for hold nothing once synced.
            sut.handles.clear();
            RC_ASSERT(made.runtime->sync_all().ok());
            RC_ASSERT(made.runtime->drained());
            RC_ASSERT(releases == sut.adopted);
            check_drained_extras<TypeParam>(*made.runtime);
        });
    });
    EXPECT_TRUE(held);
}

// A weak binding never upgrades to a later occupant of the same bytes, however allocations and
// frees interleave, on each backend's own pools.
TYPED_TEST(ClientProperties, a_weak_upgrade_never_resolves_to_a_later_occupant) {
    if (TypeParam::devices_available() == 0) {
        GTEST_SKIP() << TypeParam::make(1).why_not;
    }
    const bool held = rc::check("a weak upgrade never resolves to a later occupant", [] {
        Made made = TypeParam::make(1);
        RC_ASSERT(made.runtime != nullptr);
        Client client = made.runtime->client(0);
        const auto sizes = *rc::gen::container<std::vector<std::uint64_t>>(
            *rc::gen::inRange<std::size_t>(1, 16), rc::gen::inRange<std::uint64_t>(1, 1 << 19));
        std::vector<WeakBufferBinding> dropped;
        std::vector<Handle> live;
        for (std::uint64_t size : sizes) {
            Result<Handle> handle = client.allocate(size);
            RC_ASSERT(handle.ok());
            if (*rc::gen::arbitrary<bool>()) {
                dropped.push_back(handle->binding().downgrade());
            } else {
                live.push_back(*handle);
            }
            RC_ASSERT(client.sync().ok());  // Sweeps: dropped bytes go back to the pool.
        }
        for (const WeakBufferBinding& weak : dropped) {
            RC_ASSERT(!weak.upgrade().has_value());
        }
        for (const Handle& handle : live) {
            RC_ASSERT(handle.binding().downgrade().upgrade().has_value());
        }
    });
    EXPECT_TRUE(held);
}

}  // namespace
}  // namespace tandem::conformance
