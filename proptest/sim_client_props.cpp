// Property: programs over the client API of two or three simulated devices agree with the
// byte-level model after every step (client_program_model.hpp states the oracle), and drain at
// the end: with faults off and every handle dropped, no claim, no failure, no allocation, no race,
// and no segment of the run left in /dev/shm.

#include "client_program_model.hpp"

#include "tandem/sim/runtime.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <sys/stat.h>

namespace tandem::sim {
namespace {

using namespace tandem::model;

bool segment_exists(const std::string& name) {
    struct stat status{};
    return ::stat(("/dev/shm/" + name).c_str(), &status) == 0;
}

RC_GTEST_PROP(SimClientProperties, programs_agree_with_the_byte_model_and_drain, ()) {
    ClientModel initial;
    initial.devices = *rc::gen::inRange<std::uint32_t>(2, 4);
    const auto seed = *rc::gen::inRange<std::uint64_t>(1, 1u << 20);
    std::vector<std::string> segments;
    {
        ClientSut sut;
        auto runtime = SimRuntime::create(SimOptions{.devices = initial.devices, .seed = seed,
                                                     .capacity_bytes = 8 << 20,
                                                     .grant_all_peers = true});
        RC_ASSERT(runtime.ok());
        for (std::uint32_t device = 0; device < initial.devices; ++device) {
            sut.clients.push_back((*runtime)->client(device));
        }
        segments = (*runtime)->segment_names();
        rc::state::check(initial, sut, client_program());
        // Drain: drop every handle with faults off; nothing may be left behind.
        sut.handles.clear();
        RC_ASSERT((*runtime)->sync_all().ok());
        RC_ASSERT((*runtime)->drained());
        RC_ASSERT((*runtime)->races().empty());
    }
    for (const std::string& name : segments) {
        RC_ASSERT(!segment_exists(name));
    }
}

// The core property instantiated on the simulator's own pools and segments: a weak binding
// never upgrades to a later occupant of the same bytes, however allocations and frees interleave.
RC_GTEST_PROP(SimClientProperties, a_weak_upgrade_never_resolves_to_a_later_occupant, ()) {
    auto runtime = SimRuntime::create(SimOptions{.devices = 1, .capacity_bytes = 16 << 20});
    RC_ASSERT(runtime.ok());
    Client client = (*runtime)->client(0);
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
}

}  // namespace
}  // namespace tandem::sim
