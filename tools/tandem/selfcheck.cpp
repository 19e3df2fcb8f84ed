// `tandem selfcheck`: a short program on the reference backend (host memory, work run on the
// caller's thread) that exercises the core rules end to end through the client and prints each
// check as it passes or fails.

#include "commands.hpp"

#include "tandem/core/reference_runtime.hpp"

#include <cstdio>
#include <string>

namespace tandem::tool {
namespace {

class Checker {
public:
    void check(const char* rule, const std::string& what, bool passed) {
        std::printf("  %-4s %-66s %s\n", rule, what.c_str(), passed ? "ok" : "FAILED");
        failures_ += passed ? 0 : 1;
        ++checks_;
    }
    [[nodiscard]] int finish() const {
        std::printf("%d checks, %d failed\n", checks_, failures_);
        return failures_ == 0 ? 0 : 1;
    }

private:
    int checks_ = 0;
    int failures_ = 0;
};

LaunchArgument in(const Handle& handle) { return {handle, AccessMode::Read, std::nullopt}; }
LaunchArgument out(const Handle& handle) { return {handle, AccessMode::Write, std::nullopt}; }

void check_rules(Client& client, Checker& checker) {
    Handle input = *client.allocate(1024);
    Handle output = *client.allocate(1024);
    Handle batch = *client.allocate(2048);
    Handle left = *batch.slice(0, 1024);
    Handle right = *batch.slice(1024, 1024);

    (void)client.launch("fail", LaunchConfig::linear(1), {out(input)}, KernelArgs().u64(7));
    checker.check("C8", "a failed launch claims its write set", !client.read(input).ok());

    (void)client.launch("copy", LaunchConfig::linear(1024), {in(input), out(output)});
    Result<std::vector<std::byte>> read = client.read(output);
    const auto* details = read.ok() ? nullptr : read.error().details_as<UnwrittenDetails>();
    checker.check("C9", "a launch reading claimed bytes is skipped", details != nullptr);
    checker.check("C7", "the read's report walks back to the root error",
                  details != nullptr && details->chain.size() == 1 &&
                      details->chain[0].kernel == "copy" &&
                      details->root->details_as<KernelFailedDetails>()->code == 7);

    (void)client.launch("fill", LaunchConfig::linear(1024), {out(input)}, KernelArgs().u64(1));
    checker.check("C3", "writing a stale buffer again repairs it", client.read(input).ok());

    (void)client.launch("fail", LaunchConfig::linear(1), {out(left)}, KernelArgs().u64(8));
    (void)client.write(right, std::vector<std::byte>(1024, std::byte{2}));
    checker.check("C6", "a sibling of a claimed slice reads clean",
                  client.read(right).ok() && !client.read(left).ok());
}

int run_selfcheck() {
    std::printf("tandem selfcheck: core rules on the reference backend\n");
    Result<std::shared_ptr<reference::ReferenceRuntime>> runtime =
        reference::ReferenceRuntime::create(reference::ReferenceOptions{.devices = 1});
    if (!runtime) {
        std::fprintf(stderr, "tandem: the reference backend cannot start:\n%s\n",
                     runtime.error().report().c_str());
        return 1;
    }
    Client client = (*runtime)->client(0);
    Checker checker;
    check_rules(client, checker);
    (void)(*runtime)->sync_all();
    checker.check("C4", "once every handle is dropped and swept, the graph is empty",
                  (*runtime)->drained());
    return checker.finish();
}

}  // namespace

Run add_selfcheck(CLI::App& app) {
    app.add_subcommand("selfcheck", "Exercise the core rules in process and print each check");
    return run_selfcheck;
}

}  // namespace tandem::tool
