// Uses the installed package: a failed kernel claims its output, a launch reading it is skipped,
// and the read of the skipped launch's output reports the chain back to the root.
#include <tandem/core/claim_store.hpp>

#include <cstdio>

int main() {
    using namespace tandem;
    ClaimStore store(ServiceId{1, 0});
    const ClaimKey produced[] = {{MemoryId::next(), {0, 256}}};
    const ClaimKey consumed[] = {{MemoryId::next(), {0, 256}}};

    WriteScope producer = store.enter_launch("producer", {}, produced);
    producer.fail(Error::kernel_failed({"producer", store.device(), StreamId{1}, 7}));
    WriteScope consumer = store.enter_launch("consumer", produced, consumed);

    Status read = store.check(consumed);
    if (read.ok() || !consumer.skipped()) {
        std::puts("expected the read to fail");
        return 1;
    }
    std::printf("%s", read.error().report().c_str());
    return 0;
}
