// Two devices: device 0 shares a buffer, a kernel on device 1 writes it and fails, and a read on
// device 0 fails on that cause instead of returning stale bytes. On the simulator, or on the
// backend TANDEM_BACKEND names (reference, cuda).
#include <tandem/open_runtime.hpp>

#include <cstdio>
#include <cstdlib>

using namespace tandem;

void check(const Status& status) {
    if (!status) {
        std::fprintf(stderr, "%s", status.error().report().c_str());
        std::exit(1);
    }
}

int main() {
    auto runtime = open_runtime({.devices = 2, .seed = 7});
    if (!runtime) {
        std::fprintf(stderr, "%s", runtime.error().report().c_str());
        return 1;
    }
    Client owner = (*runtime)->client(0);
    Client peer = (*runtime)->client(1);
    check(owner.grant_peer_access(peer.service()));

    // Device 0 allocates a buffer, fills it and shares it with its peers.
    Handle buffer = *owner.share_with_peers(*owner.allocate(1024));
    check(owner.launch("fill", LaunchConfig::linear(1024), {{buffer, AccessMode::Write}},
                       KernelArgs().u64(1)));
    check(owner.sync());

    // A kernel on device 1 writes the shared buffer and reports failure code 7 from inside.
    check(peer.launch("fail", LaunchConfig::linear(1), {{buffer, AccessMode::Write}},
                      KernelArgs().u64(7)));
    check(peer.sync());

    // The owner's read fails on the cause: the peer's kernel, its device and its code.
    auto read = owner.read(buffer);
    if (read) {
        std::puts("the read returned bytes a failed kernel should have written");
        return 1;
    }
    std::printf("%s", read.error().report().c_str());
    return 0;
}
