#include "runtime_key_for_tests.hpp"
#include "tandem/core/kernel_resource.hpp"
#include "tandem/core/peer_binding.hpp"

#include <gtest/gtest.h>

namespace tandem {
namespace {

constexpr ServiceId owner{9, 0};

Handle fresh_handle(std::uint64_t size_bytes) {
    const AllocationInfo allocation{.id = MemoryId::next(), .size_bytes = size_bytes};
    return Handle(
        detail::RuntimeKeyForTests::key(),
        ManagedMemoryHandle::create(detail::RuntimeKeyForTests::key(), allocation, nullptr), owner,
        StreamId{1}, size_bytes);
}

PeerMemory share(const Handle& handle, std::uint64_t address) {
    return PeerMemory(detail::RuntimeKeyForTests::key(), handle.memory().binding(), address, owner,
                      {});
}

TEST(PeerBinding, is_nothing_for_memory_never_shared) {
    EXPECT_FALSE(PeerBinding::make(fresh_handle(64).binding()).has_value());
}

TEST(PeerBinding, is_nothing_when_the_shared_memory_is_another_allocation) {
    Handle shared = fresh_handle(64);
    Handle other = fresh_handle(64);
    Handle mismatched = other.with_peer(share(shared, 0x1000));
    EXPECT_FALSE(PeerBinding::make(mismatched.binding()).has_value());
}

TEST(PeerBinding, addresses_the_shared_address_plus_offset_start_and_the_bytes_left) {
    Handle handle = fresh_handle(256);
    Handle shared = handle.with_peer(share(handle, 0x10000));
    Handle sliced = *shared.slice(64, 32);
    std::optional<PeerBinding> peer = PeerBinding::make(sliced.binding());
    ASSERT_TRUE(peer.has_value());
    EXPECT_EQ(peer->address(), 0x10000u + 64u);
    EXPECT_EQ(peer->size(), 32u);
    KernelResource resource = KernelResource::peer(*peer, AccessMode::Read);
    EXPECT_EQ(resource.local_binding(), nullptr);
    EXPECT_EQ(&resource.buffer_binding().memory(), &resource.peer_binding()->binding().memory());
}

TEST(PeerMemory, starts_with_no_failure_and_knows_its_size) {
    Handle handle = fresh_handle(64);
    PeerMemory memory = share(handle, 0x2000);
    EXPECT_FALSE(memory.failure().has_value());
    EXPECT_EQ(memory.size_bytes(), 64u);
}

TEST(PeerMemory, pins_its_allocation_while_a_clone_lives) {
    Handle handle = fresh_handle(64);
    WeakBufferBinding weak = handle.binding().downgrade();
    std::optional<PeerMemory> pinned = share(handle, 0x3000);
    { Handle gone = std::move(handle); }
    EXPECT_TRUE(weak.upgrade().has_value());
    pinned.reset();
    EXPECT_FALSE(weak.upgrade().has_value());
}

}  // namespace
}  // namespace tandem
