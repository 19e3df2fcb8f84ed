// Uses the installed package, with tandem::core alone: open_runtime gives its reference backend
// (the simulator and CUDA are other targets). A failed kernel claims its output, a launch reading
// it is skipped, and the read of the skipped launch's output reports the chain back to the root.
#include <tandem/open_runtime.hpp>

#include <cstdio>

int main() {
    using namespace tandem;
    auto runtime = open_runtime();
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
