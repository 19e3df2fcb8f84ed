// Property: the same client programs the simulator suite runs (client_program_model.hpp states
// the oracle) agree with the byte-level model on real GPUs, and drain at the end. Without two
// GPUs the test skips, naming why.

#include "client_program_model.hpp"

#include "tandem/cuda/runtime.hpp"

#include <gtest/gtest.h>

namespace tandem::cuda {
namespace {

using namespace tandem::model;

TEST(CudaClientProperties, programs_agree_with_the_byte_model_and_drain) {
    {
        auto probe = CudaRuntime::create();
        if (!probe) {
            GTEST_SKIP() << "skipped: " << probe.error().message();
        }
        if ((*probe)->device_count() < 2) {
            GTEST_SKIP() << "skipped: needs two GPUs, " << (*probe)->device_count() << " visible";
        }
    }
    const bool held = rc::check("programs agree with the byte model and drain", [] {
        // A runtime per case: injected faults a case leaves unconsumed must not reach the next.
        auto runtime = CudaRuntime::create(CudaOptions{.devices = 2});
        RC_ASSERT(runtime.ok());
        ClientSut sut;
        for (std::uint32_t device = 0; device < 2; ++device) {
            sut.clients.push_back((*runtime)->client(device));
        }
        RC_ASSERT(sut.clients[0].grant_peer_access(sut.clients[1].service()).ok());
        RC_ASSERT(sut.clients[1].grant_peer_access(sut.clients[0].service()).ok());
        ClientModel initial;
        initial.devices = 2;
        rc::state::check(initial, sut, client_program());
        sut.handles.clear();
        RC_ASSERT((*runtime)->sync_all().ok());
        RC_ASSERT((*runtime)->drained());
    });
    EXPECT_TRUE(held);
}

}  // namespace
}  // namespace tandem::cuda
