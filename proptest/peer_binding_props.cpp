// Properties of peer bindings, for random sizes and hostile offsets, on the backends of the
// conformance list: the binding's bounds on every backend with one device, a peer kernel's
// writes on the host backends with two (the kernel is registered at run time, which a GPU backend
// cannot do yet).
//
// Oracle: a peer binding can never address a byte outside its pinned allocation.
// `PeerBinding::make` gives nothing for memory that was never shared or that is dressed in
// another allocation's shared memory; otherwise its range [address, address + size) lies inside
// [peer address, peer address + allocation size). A kernel on another device bound to it changes
// the bytes of that range only: an index past it faults, and every byte outside stays as it was.

#include "conformance/backends.hpp"
#include "tandem/core/host_kernels.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <limits>

namespace tandem::conformance {
namespace {

constexpr std::byte pattern{0xa5};
constexpr std::uint8_t poked = 0x3c;

/// Stores `poked` at the index its first argument names, from thread 0 only.
struct PokeAt {
    static constexpr const char* name = "proptest_poke_at";
    template <typename Context>
    void operator()(Context& ctx) const {
        if (ctx.thread_index() == 0) {
            ctx.template buffer<std::uint8_t>(0).store(ctx.u64(0), poked);
        }
    }
};

/// A runtime of `devices` devices of `Backend`, each granted the others' memory.
/// Registers the test's kernel once for the process, whichever backend asks first.
bool poke_registered() {
    static const bool registered = register_kernel<PokeAt>().ok();
    return registered;
}

template <typename Backend>
std::shared_ptr<Runtime> runtime_of(std::uint32_t devices) {
    RC_ASSERT(poke_registered());
    Made made = Backend::make(devices);
    RC_ASSERT(made.runtime != nullptr);
    for (std::uint32_t owner = 0; owner < devices; ++owner) {
        for (std::uint32_t accessor = 0; accessor < devices; ++accessor) {
            RC_ASSERT(made.runtime->client(owner)
                          .grant_peer_access(made.runtime->client(accessor).service())
                          .ok());
        }
    }
    return made.runtime;
}

template <typename Backend>
void binding_lies_inside();
template <typename Backend>
void peer_kernel_stays_inside();

template <typename Backend>
class PeerBindingProperties : public ::testing::Test {};
TYPED_TEST_SUITE(PeerBindingProperties, Backends, BackendNames);

/// The backends a kernel of the test's own runs on: those that run kernels on the host.
#ifdef TANDEM_HAVE_SIM
using HostBackends = ::testing::Types<ReferenceBackend, SimBackend>;
#else
using HostBackends = ::testing::Types<ReferenceBackend>;
#endif
template <typename Backend>
class PeerKernelProperties : public ::testing::Test {};
TYPED_TEST_SUITE(PeerKernelProperties, HostBackends, BackendNames);

/// An offset or length a hostile caller passes: in range, at its edges, or far past it.
std::uint64_t hostile(std::uint64_t near) {
    constexpr std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
    const std::vector<std::uint64_t> edges = {near, near + 1, max, max - near,
                                              (std::uint64_t{1} << 62) + 1};
    return *rc::gen::oneOf(rc::gen::inRange<std::uint64_t>(0, near + 2), rc::gen::elementOf(edges));
}

/// `handle` after a few random offsets and slices; each refused one is `InvalidArgument`.
Handle hostile_view(Handle handle) {
    const auto steps = *rc::gen::inRange(0, 5);
    for (int step = 0; step < steps; ++step) {
        const std::uint64_t value = hostile(handle.size_in_use());
        Result<Handle> next = [&]() -> Result<Handle> {
            switch (*rc::gen::inRange(0, 3)) {
                case 0:
                    return handle.add_offset_start(value);
                case 1:
                    return handle.add_offset_end(value);
                default:
                    return handle.slice(value, hostile(handle.size_in_use()));
            }
        }();
        if (next) {
            handle = *next;
        } else {
            RC_ASSERT(next.error().kind() == ErrorKind::InvalidArgument);
        }
    }
    return handle;
}

TYPED_TEST(PeerBindingProperties, a_peer_binding_lies_inside_its_pinned_allocation) {
    if (TypeParam::devices_available() == 0) {
        GTEST_SKIP() << TypeParam::make(1).why_not;
    }
    EXPECT_TRUE(rc::check("a peer binding lies inside its pinned allocation",
                          [] { binding_lies_inside<TypeParam>(); }));
}

template <typename Backend>
void binding_lies_inside() {
    auto runtime = runtime_of<Backend>(1);
    Client owner = runtime->client(0);
    const auto size = *rc::gen::inRange<std::uint64_t>(1, std::uint64_t{1} << 20);
    Result<Handle> allocated = owner.allocate(size);
    RC_ASSERT(allocated.ok());
    Result<Handle> shared = owner.share_with_peers(*allocated);
    RC_ASSERT(shared.ok());

    const Handle view = hostile_view(*shared);
    std::optional<PeerBinding> peer = PeerBinding::make(view.binding());
    RC_ASSERT(peer.has_value());
    const std::uint64_t begin = peer->memory().address();
    const std::uint64_t end = begin + size;
    RC_ASSERT(end > begin);
    RC_ASSERT(peer->address() >= begin);
    RC_ASSERT(peer->address() <= end);
    RC_ASSERT(peer->size() <= end - peer->address());
    RC_ASSERT(peer->address() == begin + view.offset_start());
    RC_ASSERT(peer->size() == view.size_in_use());

    // Never shared, or dressed in another allocation's shared memory: no binding at all.
    Result<Handle> other = owner.allocate(size);
    RC_ASSERT(other.ok());
    const Handle other_view = hostile_view(*other);
    RC_ASSERT(!PeerBinding::make(other_view.binding()).has_value());
    RC_ASSERT(!PeerBinding::make(other_view.with_peer(*shared->peer()).binding()).has_value());
}

TYPED_TEST(PeerKernelProperties, a_peer_kernel_touches_only_the_bytes_of_its_binding) {
    EXPECT_TRUE(rc::check("a peer kernel touches only the bytes of its binding",
                          [] { peer_kernel_stays_inside<TypeParam>(); }));
}

template <typename Backend>
void peer_kernel_stays_inside() {
    auto runtime = runtime_of<Backend>(2);
    Client owner = runtime->client(0);
    Client peer = runtime->client(1);
    const auto size = *rc::gen::inRange<std::uint64_t>(1, 512);
    Result<Handle> allocated = owner.allocate(size);
    RC_ASSERT(allocated.ok());
    RC_ASSERT(owner.write(*allocated, std::vector<std::byte>(size, pattern)).ok());
    RC_ASSERT(owner.sync().ok());
    Result<Handle> shared = owner.share_with_peers(*allocated);
    RC_ASSERT(shared.ok());

    const Handle view = hostile_view(*shared);
    const std::uint64_t index = hostile(view.size_in_use());
    const bool inside = index < view.size_in_use();
    RC_ASSERT(peer.launch("proptest_poke_at", LaunchConfig::linear(1),
                          {LaunchArgument{view, AccessMode::Write, std::nullopt}},
                          KernelArgs().u64(index))
                  .ok());
    (void)runtime->sync_all();
    RC_ASSERT(peer.lost().has_value() == !inside);

    // The bytes before and after the view: readable on the owner, exactly as written.
    Result<Handle> before = shared->slice(0, view.offset_start());
    Result<Handle> after = shared->add_offset_start(view.range().end);
    RC_ASSERT(before.ok() && after.ok());
    for (const Handle& outside : {*before, *after}) {
        auto bytes = owner.read(outside);
        RC_ASSERT(bytes.ok());
        RC_ASSERT(*bytes == std::vector<std::byte>(outside.size_in_use(), pattern));
    }
    // The view itself: the one poked byte, or (after the fault) nothing new at all.
    auto bytes = owner.read(view);
    std::vector<std::byte> expected(view.size_in_use(), pattern);
    if (inside) {
        expected[index] = std::byte{poked};
        RC_ASSERT(bytes.ok());
    }
    if (bytes) {
        RC_ASSERT(*bytes == expected);
    }
}

}  // namespace
}  // namespace tandem::conformance
