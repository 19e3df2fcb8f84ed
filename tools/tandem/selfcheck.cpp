// `tandem selfcheck`: a short program over one in-process device (host storage, one claim store)
// that exercises the core rules end to end and prints each check as it passes or fails.

#include "commands.hpp"

#include "tandem/core/claim_store.hpp"
#include "tandem/core/memory_manager.hpp"

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

int run_selfcheck() {
    constexpr ServiceId device{0x5e1f, 0};
    constexpr StreamId stream{1};
    HostStorage storage(64 << 20);
    ManualStreamOrder order;
    MemoryManager memory(storage, order);
    ClaimStore claims(device);
    memory.set_freed_listener([&claims](const AllocationInfo& info) { claims.forget(info.id); });

    auto allocate = [&](std::uint64_t size) {
        auto allocated = memory.allocate(size, stream);
        return Handle(std::move(*allocated), device, stream, size);
    };
    std::printf("tandem selfcheck: core rules on one in-process device\n");
    Checker checker;
    {
        Handle input = allocate(1024);
        Handle output = allocate(1024);
        Handle batch = allocate(2048);
        Handle left = *batch.slice(0, 1024);
        Handle right = *batch.slice(1024, 1024);
        const ClaimKey in[] = {input.binding().claim_key()};
        const ClaimKey out[] = {output.binding().claim_key()};
        const ClaimKey sibling[] = {left.binding().claim_key()};
        const ClaimKey other_sibling[] = {right.binding().claim_key()};

        WriteScope producer = claims.enter_launch("producer", {}, in);
        FailureId failure = producer.fail(Error::kernel_failed({"producer", device, stream, 7}));
        checker.check("C8", "a failed launch claims its write set", !claims.check(in).ok());

        WriteScope consumer = claims.enter_launch("consumer", in, out);
        checker.check("C9", "a launch reading claimed bytes is skipped",
                      consumer.skipped() && consumer.failure() == failure);
        Status read = claims.check(out);
        const auto* details = read.ok() ? nullptr : read.error().details_as<UnwrittenDetails>();
        checker.check("C7", "the read's report walks back to the root error",
                      details != nullptr && details->chain.size() == 1 &&
                          details->chain[0].kernel == "consumer" &&
                          details->root->details_as<KernelFailedDetails>()->code == 7);

        WriteScope rewrite = claims.enter_launch("fill", {}, in);
        rewrite.succeed();
        checker.check("C3", "writing a stale buffer again repairs it", claims.check(in).ok());

        (void)claims.begin_write("half", sibling).fail(Error::torn_down("half"));
        checker.check("C6", "a sibling of a claimed slice reads clean",
                      claims.check(other_sibling).ok() && !claims.check(sibling).ok());
    }
    memory.sweep();
    checker.check("C4", "once every handle is dropped and swept, the graph is empty",
                  claims.drained() && memory.live_count() == 0);
    return checker.finish();
}

}  // namespace

Run add_selfcheck(CLI::App& app) {
    app.add_subcommand("selfcheck", "Exercise the core rules in process and print each check");
    return run_selfcheck;
}

}  // namespace tandem::tool
