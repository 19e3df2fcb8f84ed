// Rule C12: the success path of the settle pipeline every backend calls, one claim of one range
// per written buffer, allocates nothing on the heap once warm. This executable replaces the global
// operator new to count.

#include "heap_counter.hpp"
#include "one_device.hpp"

#include <gtest/gtest.h>

using tandem::testing::heap_allocations;

namespace tandem {
namespace {

/// One launch as a backend records it, reusing a settled record as the CUDA device does.
void launch(SettlePipeline& pipeline, std::vector<std::shared_ptr<Work>>& spare,
            std::span<const ClaimKey> inputs, std::span<const ClaimKey> outputs) {
    std::shared_ptr<Work> work = std::move(spare.back());
    spare.pop_back();
    work->reset_work();
    work->label.assign("axpy");
    for (const ClaimKey& key : inputs) {
        work->inputs.push_back(Target{ServiceId{1, 0}, key});
    }
    for (const ClaimKey& key : outputs) {
        work->outputs.push_back(Target{ServiceId{1, 0}, key});
    }
    (void)pipeline.examine(*work, [](const Work&) { return true; });
    pipeline.enqueue(std::move(work));
}

TEST(HeapAllocations, the_success_path_of_the_settle_pipeline_allocates_nothing) {
    testing::OneDevice device(ServiceId{1, 0});
    SettlePipeline pipeline(device);
    const MemoryId input = MemoryId::next();
    const MemoryId output = MemoryId::next();
    const ClaimKey inputs[] = {{input, {0, 4096}}};
    const ClaimKey outputs[] = {{output, {0, 4096}}, {output, {4096, 8192}}};
    std::vector<std::shared_ptr<Work>> spare;
    for (int index = 0; index < 128; ++index) {
        spare.push_back(std::make_shared<Work>());
    }
    spare.reserve(256);
    const auto settle_all = [&] {
        pipeline.for_each_pending([](Work& work) { work.ran(Status{}); });
        pipeline.settle_ready(
            [&](std::shared_ptr<Work>&& work) { spare.push_back(std::move(work)); });
    };
    // Warm up: the ring, the writer table and each record's vectors reach their sizes.
    for (int round = 0; round < 2; ++round) {
        for (int index = 0; index < 100; ++index) {
            launch(pipeline, spare, inputs, outputs);
        }
        settle_all();
    }
    const long before = heap_allocations.load();
    for (int batch = 0; batch < 10; ++batch) {
        for (int index = 0; index < 100; ++index) {
            launch(pipeline, spare, inputs, outputs);
        }
        settle_all();
    }
    const long after = heap_allocations.load();
    EXPECT_EQ(after - before, 0) << "heap allocations on 1000 successful launches";
    std::printf("heap allocations on 1000 successful launches through the pipeline: %ld\n",
                after - before);
    EXPECT_TRUE(device.store.drained());
}

TEST(HeapAllocations, a_write_over_an_exactly_claimed_range_releases_without_allocating) {
    ClaimStore store(ServiceId{1, 0});
    MemoryId output = MemoryId::next();
    ClaimKey outputs[] = {{output, {0, 4096}}};
    (void)store.fail(outputs, Error::torn_down("earlier failure"));
    const long before = heap_allocations.load();
    store.release(outputs[0]);
    const long after = heap_allocations.load();
    EXPECT_EQ(after - before, 0);
    EXPECT_TRUE(store.drained());
}

TEST(HeapAllocations, the_counter_sees_allocations) {
    // Guards the two tests above against a counter that never counts.
    const long before = heap_allocations.load();
    void* memory = ::operator new(16);
    ::operator delete(memory);
    EXPECT_EQ(heap_allocations.load() - before, 1);
}

}  // namespace
}  // namespace tandem
