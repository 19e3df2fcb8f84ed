#pragma once

// Proof that the code building a handle, a peer memory or a capture graph is a backend. Their
// constructors take one, and only `DeviceServer` (the base of every backend's device) makes it:
// a program cannot build a handle over an address and size of its choosing, so no sequence of
// public calls makes a backend touch memory outside what it allocated.

namespace tandem {

class DeviceServer;

namespace detail {
struct RuntimeKeyForTests;
}  // namespace detail

/// A token only `DeviceServer` can make; the constructors of `Handle`, `PeerMemory` and
/// `CaptureGraph` require one, so only a backend builds them.
class RuntimeKey {
private:
    constexpr RuntimeKey() = default;
    friend class DeviceServer;
    /// For core's own unit tests, which build handles without a backend.
    friend struct detail::RuntimeKeyForTests;
};

}  // namespace tandem
