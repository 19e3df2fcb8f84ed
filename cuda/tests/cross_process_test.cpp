// The CUDA backend's memory and waits across processes (a job's ranks), as far as they are rules
// of their own: the books of regions exported and mapped (region_book.hpp), the chain of a
// stream's waits on other processes' events (remote_wait.hpp), and the refusals that need no GPU.
// None of these tests needs a GPU; the driver's side runs on GPU machines
// (cuda_backend_test.cpp, the peer rules as processes, and the two-rank example).

#include "cuda_storage.hpp"
#include "imported_memory.hpp"
#include "job_member.hpp"
#include "region_book.hpp"
#include "remote_wait.hpp"

#include "runtime_key_for_tests.hpp"

#include "tandem/core/reference_runtime.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <memory>

namespace tandem::cuda {
namespace {

constexpr std::uint64_t mib = 1 << 20;

// ---------------------------------------------------------------- rounding

TEST(GranularityRounding, a_size_rounds_up_to_the_next_multiple_and_a_multiple_stays) {
    EXPECT_EQ(round_up_to_granularity(1, 2 * mib), 2 * mib);
    EXPECT_EQ(round_up_to_granularity(2 * mib, 2 * mib), 2 * mib);
    EXPECT_EQ(round_up_to_granularity(2 * mib + 1, 2 * mib), 4 * mib);
    EXPECT_EQ(round_up_to_granularity(8 * mib, 2 * mib), 8 * mib);
    EXPECT_EQ(round_up_to_granularity(300, 256), 512u);
}

TEST(GranularityRounding, no_size_comes_of_a_zero_size_a_zero_granularity_or_a_wrap) {
    EXPECT_FALSE(round_up_to_granularity(0, 2 * mib));
    EXPECT_FALSE(round_up_to_granularity(5, 0));
    EXPECT_FALSE(round_up_to_granularity(UINT64_MAX - 10, 2 * mib));
    EXPECT_EQ(round_up_to_granularity(UINT64_MAX - (UINT64_MAX % 4096), 4096),
              UINT64_MAX - (UINT64_MAX % 4096));
}

// ---------------------------------------------------------------- RegionBook

OwnedRegion region_at(std::uint64_t address, std::uint64_t requested, std::uint64_t mapped) {
    return OwnedRegion{address, requested, mapped, 1, -1, false};
}

TEST(RegionBook, a_range_is_held_by_the_region_holding_all_of_it_and_by_no_other) {
    RegionBook book;
    book.add(region_at(0x10000000, 3 * mib, 4 * mib));
    book.add(region_at(0x20000000, 2 * mib, 2 * mib));
    EXPECT_EQ(book.holding(0x10000000, 1)->address, 0x10000000u);
    EXPECT_EQ(book.holding(0x10000000 + mib, 3 * mib)->address, 0x10000000u);  // Its slack too.
    EXPECT_EQ(book.holding(0x10000000 + 4 * mib - 1, 1)->address, 0x10000000u);
    EXPECT_EQ(book.holding(0x10000000 + mib, 3 * mib + 1), nullptr);  // Runs past its end.
    EXPECT_EQ(book.holding(0x10000000 + 4 * mib, 1), nullptr);        // Between the regions.
    EXPECT_EQ(book.holding(0x0fffffff, 2), nullptr);                  // Starts before it.
    EXPECT_EQ(book.holding(0x20000000 + mib, mib)->address, 0x20000000u);
    EXPECT_EQ(book.mapped_bytes(), 6 * mib);
}

TEST(RegionBook, a_kept_region_serves_again_only_a_request_of_exactly_its_size) {
    RegionBook book;
    book.add(region_at(0x10000000, 8 * mib, 8 * mib));
    book.add(region_at(0x20000000, 3 * mib, 4 * mib));
    book.at(0x10000000)->kept = true;
    book.at(0x20000000)->kept = true;
    EXPECT_EQ(book.kept_bytes(), 12 * mib);
    EXPECT_EQ(book.take_kept(4 * mib), nullptr);  // What was asked, not what was mapped.
    OwnedRegion* taken = book.take_kept(3 * mib);
    ASSERT_NE(taken, nullptr);
    EXPECT_EQ(taken->address, 0x20000000u);
    EXPECT_FALSE(taken->kept);
    EXPECT_EQ(book.take_kept(3 * mib), nullptr);  // Taken once.
    EXPECT_EQ(book.kept_bytes(), 8 * mib);
}

TEST(RegionBook, a_removed_region_leaves_the_book_and_its_bytes) {
    RegionBook book;
    book.add(region_at(0x10000000, mib, 2 * mib));
    const std::optional<OwnedRegion> removed = book.remove(0x10000000);
    ASSERT_TRUE(removed);
    EXPECT_EQ(removed->mapped_bytes, 2 * mib);
    EXPECT_EQ(book.mapped_bytes(), 0u);
    EXPECT_EQ(book.holding(0x10000000, 1), nullptr);
    EXPECT_FALSE(book.remove(0x10000000));
}

// ---------------------------------------------------------------- ImportedMappings

constexpr std::uint64_t owner_a = 0xa;
constexpr std::uint64_t owner_b = 0xb;

TEST(ImportedMappings, an_owner_address_resolves_to_its_mapping_here_offset_and_all) {
    ImportedMappings mappings;
    ASSERT_TRUE(mappings.add({owner_a, 0x7f0000000000, 8 * mib, 0x7e0000000000}));
    EXPECT_EQ(mappings.local(owner_a, 0x7f0000000000, 64), 0x7e0000000000u);
    EXPECT_EQ(mappings.local(owner_a, 0x7f0000000000 + 4096, 4096), 0x7e0000000000u + 4096);
    EXPECT_EQ(mappings.local(owner_a, 0x7f0000000000 + 8 * mib - 8, 8),
              0x7e0000000000u + 8 * mib - 8);
    EXPECT_FALSE(mappings.local(owner_a, 0x7f0000000000 + 8 * mib - 8, 9));  // Past its end.
    EXPECT_FALSE(mappings.local(owner_a, 0x7f0000000000 - 1, 1));
}

// Two processes on one GPU address their own memory from the same place: the same address of
// two owners, or of an owner and of this process, is two different memories.
TEST(ImportedMappings, the_same_address_of_two_owners_names_two_mappings_and_never_another_owners) {
    ImportedMappings mappings;
    ASSERT_TRUE(mappings.add({owner_a, 0x7f0000000000, 8 * mib, 0x7e0000000000}));
    ASSERT_TRUE(mappings.add({owner_b, 0x7f0000000000, 8 * mib, 0x7d0000000000}));
    EXPECT_EQ(mappings.local(owner_a, 0x7f0000000100, 1), 0x7e0000000100u);
    EXPECT_EQ(mappings.local(owner_b, 0x7f0000000100, 1), 0x7d0000000100u);
    constexpr std::uint64_t this_runtime = 0xc;
    EXPECT_FALSE(mappings.local(this_runtime, 0x7f0000000100, 1));
    EXPECT_EQ(mappings.size(), 2u);
}

TEST(ImportedMappings, a_region_mapped_already_is_found_the_same_and_an_overlap_is_refused) {
    ImportedMappings mappings;
    ASSERT_TRUE(mappings.add({owner_a, 0x10000000, 4 * mib, 0x50000000}));
    EXPECT_EQ(mappings.find(owner_a, 0x10000000, 4 * mib), ImportedMappings::Found::same);
    EXPECT_EQ(mappings.find(owner_a, 0x10000000, 2 * mib), ImportedMappings::Found::conflict);
    EXPECT_EQ(mappings.find(owner_a, 0x10000000 + mib, mib), ImportedMappings::Found::conflict);
    EXPECT_EQ(mappings.find(owner_a, 0x10000000 - mib, 2 * mib), ImportedMappings::Found::conflict);
    EXPECT_EQ(mappings.find(owner_a, 0x10000000 + 4 * mib, mib), ImportedMappings::Found::none);
    EXPECT_EQ(mappings.find(owner_b, 0x10000000 + mib, mib), ImportedMappings::Found::none);

    const Status again = mappings.add({owner_a, 0x10000000 + mib, mib, 0x60000000});
    ASSERT_FALSE(again);
    EXPECT_EQ(again.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(again.error().message().find("overlaps"), std::string::npos);
    EXPECT_EQ(mappings.size(), 1u);  // Nothing changed.
}

TEST(ImportedMappings, an_empty_or_wrapping_region_and_one_past_the_bound_are_refused) {
    ImportedMappings mappings;
    EXPECT_EQ(mappings.add({owner_a, 0x1000, 0, 0x2000}).error().kind(),
              ErrorKind::InvalidArgument);
    EXPECT_EQ(mappings.add({owner_a, UINT64_MAX - 10, 4096, 0x2000}).error().kind(),
              ErrorKind::InvalidArgument);
    for (std::size_t index = 0; index < ImportedMappings::max_regions; ++index) {
        ASSERT_TRUE(mappings.add({owner_a, (index + 1) * 4096, 4096, 0x1000}));
    }
    const Status full = mappings.add({owner_b, 4096, 4096, 0x1000});
    ASSERT_FALSE(full);
    EXPECT_NE(full.error().message().find("at most"), std::string::npos);
    EXPECT_EQ(mappings.take_all().size(), ImportedMappings::max_regions);
    EXPECT_EQ(mappings.size(), 0u);
}

// ---------------------------------------------------------------- refusals

TEST(ExportRefusals, a_storage_without_exportable_memory_refuses_to_export_saying_why) {
    CudaStorage storage(0, 64 * mib, false, {});
    EXPECT_FALSE(storage.exportable());
    EXPECT_EQ(storage.granularity_bytes(), 0u);
    const Result<ExportedRegion> exported = storage.export_region(0x10000000, 64);
    ASSERT_FALSE(exported);
    EXPECT_EQ(exported.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(exported.error().message().find("cudaMalloc"), std::string::npos)
        << exported.error().message();
    EXPECT_NE(exported.error().message().find("exportable_memory"), std::string::npos)
        << exported.error().message();
    EXPECT_EQ(storage.reserved_bytes(), 0u);  // Nothing changed.
}

/// An open descriptor of 2 MiB of host memory: not a region any GPU exported.
int host_memory_descriptor() {
    const int descriptor = ::memfd_create("tandem-not-a-gpu-region", MFD_CLOEXEC);
    EXPECT_GE(descriptor, 0);
    EXPECT_EQ(::ftruncate(descriptor, 2 * mib), 0);
    return descriptor;
}

bool still_open(int descriptor) { return ::fcntl(descriptor, F_GETFD) != -1; }

TEST(ImportRefusals, a_region_without_a_descriptor_no_bytes_or_no_gpu_is_refused_and_maps_nothing) {
    ImportedMemory imported;
    const int gpus[] = {0};
    ExportedRegion none{-1, 0x10000000, 2 * mib, ServiceId{owner_a, 0, 1, 1}};
    const Status without = imported.import(none, gpus);
    ASSERT_FALSE(without);
    EXPECT_EQ(without.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(without.error().message().find("no descriptor"), std::string::npos);

    ExportedRegion empty{host_memory_descriptor(), 0x10000000, 0, ServiceId{owner_a, 0, 1, 1}};
    EXPECT_EQ(imported.import(empty, gpus).error().kind(), ErrorKind::InvalidArgument);
    EXPECT_FALSE(still_open(empty.descriptor));  // Taken, whatever happened.

    ExportedRegion no_gpu{host_memory_descriptor(), 0x10000000, 2 * mib,
                          ServiceId{owner_a, 0, 1, 1}};
    const Status refused = imported.import(no_gpu, {});
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().message().find("no GPU"), std::string::npos);
    EXPECT_FALSE(still_open(no_gpu.descriptor));
    EXPECT_EQ(imported.regions(), 0u);
}

// Without a GPU the driver has no memory to import; with one, the descriptor of host memory is
// no GPU's region. Either way: refused, the descriptor closed, nothing mapped.
TEST(ImportRefusals, a_descriptor_of_no_gpu_region_is_refused_closed_and_maps_nothing) {
    ImportedMemory imported;
    const int gpus[] = {0};
    ExportedRegion foreign{host_memory_descriptor(), 0x10000000, 2 * mib,
                           ServiceId{owner_a, 0, 1, 1}};
    const Status refused = imported.import(foreign, gpus);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(refused.error().message().find(to_string(foreign.owner)), std::string::npos)
        << refused.error().message();
    EXPECT_FALSE(still_open(foreign.descriptor));
    EXPECT_EQ(imported.regions(), 0u);
    EXPECT_EQ(imported.local(foreign.owner, 0x10000000, 1), nullptr);
}

TEST(JobMembers, only_a_cuda_runtime_serving_a_rank_has_a_job_member) {
    EXPECT_EQ(job_member(nullptr), nullptr);
    Result<std::shared_ptr<reference::ReferenceRuntime>> reference =
        reference::ReferenceRuntime::create({.devices = 1});
    ASSERT_TRUE(reference) << reference.error().report();
    EXPECT_EQ(job_member(*reference), nullptr);
}

}  // namespace
}  // namespace tandem::cuda
