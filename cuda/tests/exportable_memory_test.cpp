// Exportable memory on a real GPU: regions reserved with virtual memory management, exported to a
// descriptor once, kept while another process may map them, and mapped again elsewhere reading
// the same bytes; a rank's runtime as a job reaches it (its regions and its events). Without a
// GPU, or on one without virtual memory management, every test skips, naming why. Two processes
// meeting through a job are the peer rules' (`PeerRules/processes_cuda`) and the two-rank
// example's.

#include "cuda_storage.hpp"
#include "imported_memory.hpp"
#include "job_member.hpp"

#include "tandem/cuda/runtime.hpp"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <numeric>
#include <vector>

namespace tandem::cuda {
namespace {

constexpr std::uint64_t mib = 1 << 20;

class ExportableMemory : public ::testing::Test {
protected:
    void SetUp() override {
        const GpuReport gpus = probe_gpus();
        if (!gpus.problem.empty()) {
            GTEST_SKIP() << "no usable GPU here: " << gpus.problem;
        }
        storage.emplace(0, 256 * mib, true, std::vector<int>{});
        if (!storage->exportable()) {
            GTEST_SKIP() << "GPU 0's memory is not exportable here: "
                         << storage->why_not_exportable();
        }
    }
    std::optional<CudaStorage> storage;
};

TEST_F(ExportableMemory, a_region_is_mapped_at_the_granularity_and_exported_once) {
    Result<StorageRegion> region = storage->reserve(3 * mib);
    ASSERT_TRUE(region) << region.error().report();
    EXPECT_EQ(region->size_bytes, 3 * mib);
    const std::uint64_t mapped = *round_up_to_granularity(3 * mib, storage->granularity_bytes());
    EXPECT_EQ(storage->reserved_bytes(), mapped);
    Result<ExportedRegion> first = storage->export_region(region->address + 100, 10);
    ASSERT_TRUE(first) << first.error().report();
    Result<ExportedRegion> again = storage->export_region(region->address, 3 * mib);
    ASSERT_TRUE(again) << again.error().report();
    EXPECT_EQ(first->descriptor, again->descriptor);  // Once a region, kept open.
    EXPECT_EQ(first->base_address, region->address);
    EXPECT_EQ(first->size_bytes, mapped);
    const Result<ExportedRegion> outside = storage->export_region(region->address + mapped, 1);
    ASSERT_FALSE(outside);
    EXPECT_EQ(outside.error().kind(), ErrorKind::InvalidArgument);
    storage->release(*region);
}

TEST_F(ExportableMemory, a_region_another_process_may_map_is_kept_and_serves_its_size_again) {
    Result<StorageRegion> region = storage->reserve(8 * mib);
    ASSERT_TRUE(region) << region.error().report();
    ASSERT_TRUE(storage->export_region(region->address, 8 * mib));
    const std::uint64_t reserved = storage->reserved_bytes();
    storage->release(*region);
    EXPECT_EQ(storage->reserved_bytes(), reserved);  // Kept: its address keeps its memory.
    Result<StorageRegion> other_size = storage->reserve(4 * mib);
    ASSERT_TRUE(other_size) << other_size.error().report();
    EXPECT_NE(other_size->address, region->address);
    Result<StorageRegion> same_size = storage->reserve(8 * mib);
    ASSERT_TRUE(same_size) << same_size.error().report();
    EXPECT_EQ(same_size->address, region->address);
    storage->release(*other_size);
    storage->release(*same_size);
}

TEST_F(ExportableMemory, a_region_never_exported_goes_back_to_the_driver) {
    Result<StorageRegion> region = storage->reserve(2 * mib);
    ASSERT_TRUE(region) << region.error().report();
    storage->release(*region);
    EXPECT_EQ(storage->reserved_bytes(), 0u);
}

TEST_F(ExportableMemory, a_region_imported_elsewhere_maps_the_same_bytes_at_addresses_of_its_own) {
    Result<StorageRegion> region = storage->reserve(2 * mib);
    ASSERT_TRUE(region) << region.error().report();
    Result<ExportedRegion> exported = storage->export_region(region->address, 2 * mib);
    ASSERT_TRUE(exported) << exported.error().report();
    std::vector<std::uint8_t> bytes(4096);
    std::iota(bytes.begin(), bytes.end(), std::uint8_t{3});
    ASSERT_EQ(cudaMemcpy(reinterpret_cast<void*>(region->address + 4096), bytes.data(),
                         bytes.size(), cudaMemcpyHostToDevice),
              cudaSuccess);

    ImportedMemory imported;
    ExportedRegion passed = *exported;
    passed.descriptor = ::dup(exported->descriptor);  // Taken by the import; the storage keeps its.
    passed.owner = ServiceId{0x5eed, 0, 1, 1};
    const int gpus[] = {0};
    ASSERT_TRUE(imported.import(passed, gpus));
    std::uint8_t* local = imported.local(passed.owner, region->address + 4096, bytes.size());
    ASSERT_NE(local, nullptr);
    EXPECT_NE(reinterpret_cast<std::uint64_t>(local), region->address + 4096);
    std::vector<std::uint8_t> read(bytes.size());
    ASSERT_EQ(cudaMemcpy(read.data(), local, read.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(read, bytes);
    // The owner's address in this process's own memory is not the owner's memory.
    EXPECT_EQ(imported.local(ServiceId{0x7777, 0, 1, 2}, region->address + 4096, 1), nullptr);

    passed.descriptor = ::dup(exported->descriptor);
    ASSERT_TRUE(imported.import(passed, gpus));  // Mapped already: kept, the descriptor closed.
    EXPECT_EQ(imported.regions(), 1u);
}

/// What the job keeps of a stream whose events another process waits on.
struct Counter final : ExportedStream {
    std::uint64_t reached = 0;
    std::optional<Error> failed_wait;
    void reach(std::uint64_t sequence, const std::optional<Error>& failed) override {
        reached = std::max(reached, sequence);
        failed_wait = failed;
    }
};

class RankRuntime : public ::testing::Test {
protected:
    void SetUp() override {
        Result<std::shared_ptr<CudaRuntime>> created =
            CudaRuntime::create(CudaOptions{.devices = 1, .rank = 0});
        if (!created) {
            GTEST_SKIP() << "skipped: " << created.error().message();
        }
        runtime = *created;
        member = job_member(runtime);
        ASSERT_NE(member, nullptr);
    }
    std::shared_ptr<CudaRuntime> runtime;
    std::shared_ptr<JobMember> member;
};

TEST_F(RankRuntime, a_handles_region_is_exported_naming_its_device) {
    Client device = runtime->client(0);
    Result<Handle> handle = device.allocate(1000);
    ASSERT_TRUE(handle) << handle.error().report();
    Result<ExportedRegion> region = member->export_region(*handle);
    if (!region) {
        GTEST_SKIP() << "not exportable here: " << region.error().message();
    }
    EXPECT_EQ(region->owner, device.service());
    EXPECT_GE(region->descriptor, 0);
    const std::uint64_t address = handle->memory().allocation().address;
    EXPECT_LE(region->base_address, address);
    EXPECT_LT(address - region->base_address, region->size_bytes);
}

TEST_F(RankRuntime, an_event_is_reached_for_other_processes_once_the_work_before_it_settled) {
    Client device = runtime->client(0);
    Result<Handle> buffer = device.allocate(1 << 20);
    ASSERT_TRUE(buffer) << buffer.error().report();
    ASSERT_TRUE(device.launch("fill", LaunchConfig::linear(1 << 20),
                              {{*buffer, AccessMode::Write, std::nullopt}}, KernelArgs().u64(1)));
    Result<Event> event = device.record_event(device.default_stream());
    ASSERT_TRUE(event) << event.error().report();
    Counter counter;
    ASSERT_TRUE(member->export_event(*event, counter));
    ASSERT_TRUE(device.sync());
    EXPECT_EQ(counter.reached, event->sequence());
    EXPECT_FALSE(counter.failed_wait);
}

TEST_F(RankRuntime, a_runtime_serving_no_rank_reserves_memory_no_process_maps_by_default) {
    // Exportable memory is the default of a rank's runtime only: the others never publish, and a
    // launch binding it costs more (docs/PERFORMANCE.md).
    Result<std::shared_ptr<CudaRuntime>> other = CudaRuntime::create(CudaOptions{.devices = 1});
    ASSERT_TRUE(other) << other.error().report();
    std::shared_ptr<JobMember> outside = job_member(*other);
    ASSERT_NE(outside, nullptr);
    Result<Handle> handle = (*other)->client(0).allocate(1000);
    ASSERT_TRUE(handle) << handle.error().report();
    Result<ExportedRegion> region = outside->export_region(*handle);
    ASSERT_FALSE(region);
    EXPECT_EQ(region.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(region.error().message().find("CudaOptions::exportable_memory is off (set false, or "
                                            "unset on a runtime that serves no rank of a job)"),
              std::string::npos)
        << region.error().message();
}

TEST_F(RankRuntime, an_event_of_another_runtime_is_not_exported) {
    Result<std::shared_ptr<CudaRuntime>> other = CudaRuntime::create(CudaOptions{.devices = 1});
    ASSERT_TRUE(other) << other.error().report();
    Client device = (*other)->client(0);
    Result<Event> event = device.record_event(device.default_stream());
    ASSERT_TRUE(event) << event.error().report();
    Counter counter;
    const Status exported = member->export_event(*event, counter);
    ASSERT_FALSE(exported);
    EXPECT_EQ(exported.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_EQ(counter.reached, 0u);
}

}  // namespace
}  // namespace tandem::cuda
