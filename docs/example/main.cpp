// Uses the installed package, with the reference backend of tandem::core: a failed kernel claims
// its output, a launch reading it is skipped, and the read of the skipped launch's output reports
// the chain back to the root.
#include <tandem/core/reference_runtime.hpp>

#include <cstdio>

int main() {
    using namespace tandem;
    auto runtime = reference::ReferenceRuntime::create({.devices = 1});
    if (!runtime) {
        std::printf("%s\n", runtime.error().report().c_str());
        return 1;
    }
    Client client = (*runtime)->client(0);
    Handle produced = *client.allocate(256);
    Handle consumed = *client.allocate(256);
    (void)client.launch("fail", LaunchConfig::linear(1),
                        {{produced, AccessMode::Write, std::nullopt}}, KernelArgs().u64(7));
    (void)client.launch(
        "copy", LaunchConfig::linear(256),
        {{produced, AccessMode::Read, std::nullopt}, {consumed, AccessMode::Write, std::nullopt}});
    Result<std::vector<std::byte>> read = client.read(consumed);
    if (read.ok()) {
        std::puts("expected the read to fail");
        return 1;
    }
    std::printf("%s", read.error().report().c_str());
    return 0;
}
