#pragma once

// Proof that the code building a handle, an event, a pending read, a peer memory or a capture
// graph is a backend. Their constructors take one, and only the backend contract makes it
// (`Server`, the base of every backend's device, and `MemoryManager`, which hands out the
// references a handle holds); both live under `tandem/backend/`, which no user header includes.
// A program written against the user API cannot build a handle over an address and size of its
// choosing, nor an event of work nobody enqueued.

namespace tandem {

class Server;
class MemoryManager;

/// A token only the backend contract makes; the constructors of `Handle`, `Event`,
/// `PendingRead`, `PeerMemory` and `CaptureGraph` require one, so only a backend builds them.
class RuntimeKey {
private:
    constexpr RuntimeKey() = default;
    friend class Server;
    friend class MemoryManager;
};

}  // namespace tandem
