// `tandem selfcheck`: a short program on the reference backend (host memory, work run on the
// caller's thread) that exercises the core rules end to end through the client and prints each
// check as it passes or fails (or, under --json, one document with every check).

#include "commands.hpp"
#include "help_footer.hpp"
#include "json.hpp"

#include "tandem/core/reference_runtime.hpp"

#include <cstdio>
#include <string>

namespace tandem::tool {
namespace {

/// Prints each check as it is made, or keeps it for the JSON document printed at the end.
class Checker {
public:
    explicit Checker(bool json) : json_(json) {}

    void check(const char* rule, const std::string& what, bool passed) {
        if (!json_) {
            std::printf("  %-4s %-66s %s\n", rule, what.c_str(), passed ? "ok" : "FAILED");
        }
        checks_.push_back({{"rule", rule}, {"check", what}, {"passed", passed}});
        failures_ += passed ? 0 : 1;
    }
    [[nodiscard]] int finish() const {
        if (json_) {
            Json document = json_document("selfcheck");
            document["checks"] = checks_;
            document["total"] = checks_.size();
            document["failed"] = failures_;
            std::printf("%s\n", json_text(document, 2).c_str());
        } else {
            std::printf("%zu checks, %zu failed\n", checks_.size(), failures_);
        }
        return failures_ == 0 ? 0 : 1;
    }

private:
    bool json_;
    Json checks_ = Json::array();
    std::size_t failures_ = 0;
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

int run_selfcheck(bool json) {
    if (!json) {
        std::printf("tandem selfcheck: core rules on the reference backend\n");
    }
    Result<std::shared_ptr<reference::ReferenceRuntime>> runtime =
        reference::ReferenceRuntime::create(reference::ReferenceOptions{.devices = 1});
    if (!runtime) {
        std::fprintf(stderr, "tandem: the reference backend cannot start:\n%s\n",
                     runtime.error().report().c_str());
        return 1;
    }
    Client client = (*runtime)->client(0);
    Checker checker(json);
    check_rules(client, checker);
    (void)(*runtime)->sync_all();
    checker.check("C4", "once every handle is dropped and swept, the graph is empty",
                  (*runtime)->drained());
    return checker.finish();
}

}  // namespace

Run add_selfcheck(CLI::App& app) {
    auto* command =
        app.add_subcommand("selfcheck", "Exercise the core rules in process and print each check");
    auto json = std::make_shared<bool>(false);
    command->add_flag("--json", *json, "Print one JSON document on stdout instead of lines");
    set_help_footer(*command,
                    "{schema, command: \"selfcheck\", checks: [{rule, check, passed}], total, "
                    "failed}. rule names the rule of docs/DESIGN.md the check exercises.",
                    {{0, "every check passed"},
                     {1, "a check failed, or the reference backend could not start"},
                     {2, "usage error: an unknown option"}});
    return [json] { return run_selfcheck(*json); };
}

}  // namespace tandem::tool
