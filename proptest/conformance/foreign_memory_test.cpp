// Memory from elsewhere and to elsewhere: memory another allocator owns, adopted as a handle with
// claims like any other, released back through its callback; the raw pointer and stream of a
// handle for another library; tensors in and out through DLPack, without a copy.

#include "support.hpp"
#include "foreign.hpp"
#include "user_kernels.hpp"

#include "tandem/core/dlpack.hpp"

#include <cstring>
#include <memory>
#include <stdexcept>

namespace tandem::conformance {
namespace {

/// The bytes at `view`, read as the native library would.
std::vector<std::byte> native_bytes(const NativeView& view) {
    std::vector<std::byte> bytes(view.size_bytes);
#if TANDEM_HAS_CUDA_KERNELS
    if (view.on_gpu) {
        device_to_host(bytes.data(), view.pointer, view.size_bytes);
        return bytes;
    }
#endif
    std::memcpy(bytes.data(), view.pointer, view.size_bytes);
    return bytes;
}

template <typename Backend>
class ForeignMemory : public Conformance<Backend> {};
TYPED_TEST_SUITE(ForeignMemory, Backends, BackendNames);

TYPED_TEST(ForeignMemory, adopted_memory_has_claims_like_any_and_is_released_once) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    std::atomic<int> releases = 0;
    {
        Foreign memory = foreign_memory(*runtime, 256, &releases);
        ASSERT_NE(memory.pointer, nullptr);
        Result<Handle> adopted = client.adopt({memory.pointer, 256, memory.release});
        ASSERT_TRUE(adopted) << adopted.error().report();
        this->fill(client, *adopted, 12);
        EXPECT_EQ(this->read_bytes(client, *adopted), filled(256, 12));
        this->fail(client, *adopted, 31);  // C8 on adopted bytes, as on any.
        std::optional<Error> error = this->read_error(client, *adopted);
        ASSERT_TRUE(error);
        EXPECT_EQ(root_code(*error), 31u) << error->report();
        ASSERT_TRUE(client.write(*adopted, filled(256, 3)));  // Rewritten: readable again.
        EXPECT_EQ(this->read_bytes(client, *adopted), filled(256, 3));
        EXPECT_EQ(releases, 0);
    }
    ASSERT_TRUE(client.sync());
    EXPECT_EQ(releases, 1);
    EXPECT_TRUE(runtime->drained());
}

// C4: adopted memory is a live allocation like any: a runtime that holds one is not drained, and
// once its last handle goes (its failure with it), the runtime is.
TYPED_TEST(ForeignMemory, c4_adopted_memory_is_live_until_its_last_handle_goes) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    std::atomic<int> releases = 0;
    {
        Foreign memory = foreign_memory(*runtime, 256, &releases);
        ASSERT_NE(memory.pointer, nullptr);
        Result<Handle> adopted = client.adopt({memory.pointer, 256, memory.release});
        ASSERT_TRUE(adopted) << adopted.error().report();
        ASSERT_TRUE(runtime->sync_all());
        EXPECT_FALSE(runtime->drained()) << "a runtime holding adopted memory says it is drained";
        this->fail(client, *adopted, 4);
        ASSERT_TRUE(runtime->sync_all());
        EXPECT_FALSE(runtime->drained());
    }
    ASSERT_TRUE(runtime->sync_all());
    EXPECT_EQ(releases, 1);
    EXPECT_TRUE(runtime->drained());
}

// A release callback that throws is called once, and its exception goes no further: the last
// reference went away in a destructor, where nothing can take it.
TYPED_TEST(ForeignMemory, a_release_callback_that_throws_ends_nothing) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    std::atomic<int> releases = 0;
    {
        Foreign memory = foreign_memory(*runtime, 64, &releases);
        ASSERT_NE(memory.pointer, nullptr);
        const auto release_and_throw = [release = memory.release] {
            release();
            throw std::runtime_error("the allocator's free failed");
        };
        Result<Handle> adopted = client.adopt({memory.pointer, 64, release_and_throw});
        ASSERT_TRUE(adopted) << adopted.error().report();
        this->fill(client, *adopted, 1);
    }
    ASSERT_TRUE(client.sync());
    EXPECT_EQ(releases, 1);
    EXPECT_TRUE(runtime->drained());
}

TYPED_TEST(ForeignMemory, adoption_that_cannot_be_is_refused_and_takes_nothing) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    std::atomic<int> releases = 0;
    const auto count = [&releases] { ++releases; };
    EXPECT_EQ(client.adopt({nullptr, 64, count}).error().kind(), ErrorKind::InvalidArgument);
    std::byte host[64];
    EXPECT_EQ(client.adopt({host, 0, count}).error().kind(), ErrorKind::InvalidArgument);
    EXPECT_EQ(client.adopt({host, UINT64_MAX, count}).error().kind(),
              ErrorKind::InvalidArgument);
    if (runtime->backend() == "cuda") {
        // Host memory is not this GPU's.
        EXPECT_EQ(client.adopt({host, 64, count}).error().kind(), ErrorKind::InvalidArgument);
    }
    // Memory tandem already holds: its own allocation's bytes, and memory adopted once already.
    Handle own = this->allocate(client, 256);
    void* inside = static_cast<std::byte*>(client.native(own)->pointer) + 16;
    Result<Handle> aliased = client.adopt({inside, 32, count});
    ASSERT_FALSE(aliased);
    EXPECT_EQ(aliased.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(aliased.error().message().find("overlaps"), std::string::npos);
    std::atomic<int> foreign_releases = 0;
    Foreign memory = foreign_memory(*runtime, 128, &foreign_releases);
    {
        Result<Handle> first = client.adopt({memory.pointer, 128, memory.release});
        ASSERT_TRUE(first) << first.error().report();
        void* middle = static_cast<std::byte*>(memory.pointer) + 64;
        EXPECT_EQ(client.adopt({middle, 8, count}).error().kind(), ErrorKind::InvalidArgument);
    }
    EXPECT_EQ(foreign_releases, 1);
    EXPECT_EQ(releases, 0);
}

// One byte never has two owners: memory one device adopted, or holds in its own pools, is refused
// by every other device, as memory it holds itself is.
TYPED_TEST(ForeignMemory, memory_another_device_holds_is_not_adopted) {
    TANDEM_RUNTIME(runtime, 2);
    Client zero = runtime->client(0);
    Client one = runtime->client(1);
    std::atomic<int> releases = 0;
    Foreign memory = foreign_memory(*runtime, 128, &releases);
    Handle own = this->allocate(one, 256);
    {
        Result<Handle> adopted = zero.adopt({memory.pointer, 128, memory.release});
        ASSERT_TRUE(adopted) << adopted.error().report();
        Result<Handle> again = one.adopt({memory.pointer, 128, [] {}});
        ASSERT_FALSE(again);
        EXPECT_EQ(again.error().kind(), ErrorKind::InvalidArgument);
        EXPECT_NE(again.error().message().find("overlaps"), std::string::npos)
            << again.error().report();
        // Device 1's own allocation, through device 0 (a GPU refuses another GPU's pointer
        // before it looks: InvalidArgument either way).
        void* inside = static_cast<std::byte*>(one.native(own)->pointer) + 8;
        EXPECT_EQ(zero.adopt({inside, 16, [] {}}).error().kind(), ErrorKind::InvalidArgument);
        this->fill(zero, *adopted, 3);
        EXPECT_EQ(this->read_bytes(zero, *adopted), filled(128, 3));
    }
    ASSERT_TRUE(zero.sync());
    EXPECT_EQ(releases, 1);
}

// Nor does a byte have two owners across runtimes of one process; once the adopter lets go of
// memory (its release was called), it may be adopted again.
TYPED_TEST(ForeignMemory, memory_another_runtime_holds_is_not_adopted_until_it_is_released) {
    TANDEM_RUNTIME(runtime, 1);
    TANDEM_RUNTIME(other, 1);
    Client first = runtime->client(0);
    Client second = other->client(0);
    std::atomic<int> releases = 0;
    Foreign memory = foreign_memory(*runtime, 64, &releases);
    void* const pointer = memory.pointer;
    std::atomic<bool> freed = false;
    {
        // The release lets go of the memory only after this test adopted it a second time.
        Result<Handle> adopted = first.adopt({pointer, 64, [&freed] { freed = true; }});
        ASSERT_TRUE(adopted) << adopted.error().report();
        Result<Handle> again = second.adopt({pointer, 64, [] {}});
        ASSERT_FALSE(again);
        EXPECT_EQ(again.error().kind(), ErrorKind::InvalidArgument) << again.error().report();
    }
    ASSERT_TRUE(first.sync());
    ASSERT_TRUE(freed);
    Result<Handle> later = second.adopt({pointer, 64, memory.release});
    ASSERT_TRUE(later) << later.error().report();
    this->fill(second, *later, 4);
    EXPECT_EQ(this->read_bytes(second, *later), filled(64, 4));
}

TYPED_TEST(ForeignMemory, the_native_view_of_a_handle_holds_its_bytes) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle handle = this->allocate(client, 128);
    this->fill(client, handle, 77);
    ASSERT_TRUE(client.sync());
    Result<NativeView> view = client.native(handle);
    ASSERT_TRUE(view) << view.error().report();
    EXPECT_EQ(view->size_bytes, 128u);
    EXPECT_EQ(view->on_gpu, runtime->backend() == "cuda");
    EXPECT_EQ(view->stream != nullptr, runtime->backend() == "cuda");
    EXPECT_EQ(native_bytes(*view), filled(128, 77));
    EXPECT_EQ(client.native(handle, StreamId{999}).error().kind(), ErrorKind::InvalidArgument);
}

TYPED_TEST(ForeignMemory, a_tensor_goes_out_and_comes_back_through_dlpack_without_a_copy) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle handle = this->allocate(client, 4 * 16 * sizeof(float));
    this->fill(client, handle, 5);
    ASSERT_TRUE(client.sync());
    const std::int64_t shape[] = {4, 16};
    Result<DLManagedTensor*> out = to_dlpack(client, handle, DLDataType{kDLFloat, 32, 1}, shape);
    ASSERT_TRUE(out) << out.error().report();
    EXPECT_EQ((*out)->dl_tensor.data, client.native(handle)->pointer);  // Shared, not copied.
    EXPECT_EQ(to_dlpack(client, handle, DLDataType{kDLFloat, 64, 1}, shape).error().kind(),
              ErrorKind::InvalidArgument);
    {
        Result<Handle> back = from_dlpack(client, *out);  // Takes the tensor: its deleter runs.
        ASSERT_TRUE(back) << back.error().report();
        EXPECT_EQ(this->read_bytes(client, *back), filled(4 * 16 * sizeof(float), 5));
    }
    ASSERT_TRUE(client.sync());
    DLManagedTensor elsewhere{};
    std::byte bytes[16];
    elsewhere.dl_tensor.data = bytes;
    elsewhere.dl_tensor.device = DLDevice{kDLROCM, 0};
    std::int64_t extent = 16;
    elsewhere.dl_tensor.ndim = 1;
    elsewhere.dl_tensor.shape = &extent;
    elsewhere.dl_tensor.dtype = DLDataType{kDLUInt, 8, 1};
    EXPECT_EQ(from_dlpack(client, &elsewhere).error().kind(), ErrorKind::InvalidArgument);
    // On this client's device, but every other byte: not a single range.
    elsewhere.dl_tensor.device = client.native(client.default_stream())->on_gpu
                                     ? DLDevice{kDLCUDA, client.native(handle)->ordinal}
                                     : DLDevice{kDLCPU, 0};
    std::int64_t every_other = 2;
    extent = 8;
    elsewhere.dl_tensor.strides = &every_other;
    Result<Handle> strided = from_dlpack(client, &elsewhere);
    ASSERT_FALSE(strided);
    EXPECT_EQ(strided.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(strided.error().message().find("compact"), std::string::npos);
}

// A tensor whose coordinates cannot be taken is refused, and its deleter is not called: fewer
// than no dimensions, no shape, no bytes, more than 2^64 of them, or a byte offset that wraps.
TYPED_TEST(ForeignMemory, a_malformed_dlpack_tensor_is_refused_and_stays_the_callers) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    const NativeView device = *client.native(client.default_stream());
    std::byte bytes[64];
    std::int64_t shape[] = {4, 16};
    int deleted = 0;
    const auto tensor = [&] {
        DLManagedTensor made{};
        made.dl_tensor.data = bytes;
        made.dl_tensor.device =
            device.on_gpu ? DLDevice{kDLCUDA, device.ordinal} : DLDevice{kDLCPU, 0};
        made.dl_tensor.ndim = 2;
        made.dl_tensor.shape = shape;
        made.dl_tensor.dtype = DLDataType{kDLUInt, 8, 1};
        made.manager_ctx = &deleted;
        made.deleter = [](DLManagedTensor* self) { ++*static_cast<int*>(self->manager_ctx); };
        return made;
    };
    const auto refused = [&](DLManagedTensor made, const char* what) {
        Result<Handle> taken = from_dlpack(client, &made);
        ASSERT_FALSE(taken) << what;
        EXPECT_EQ(taken.error().kind(), ErrorKind::InvalidArgument) << what;
    };
    DLManagedTensor negative = tensor();
    negative.dl_tensor.ndim = -1;
    refused(negative, "ndim -1");
    DLManagedTensor shapeless = tensor();
    shapeless.dl_tensor.shape = nullptr;
    refused(shapeless, "no shape");
    DLManagedTensor empty = tensor();
    empty.dl_tensor.dtype = DLDataType{kDLUInt, 8, 0};
    refused(empty, "no lanes: no bytes");
    std::int64_t huge[] = {0, std::int64_t{1} << 62, std::int64_t{1} << 62};
    DLManagedTensor zero_extent = tensor();
    zero_extent.dl_tensor.ndim = 3;
    zero_extent.dl_tensor.shape = huge;
    std::int64_t huge_strides[] = {1, 1, 1};
    zero_extent.dl_tensor.strides = huge_strides;
    refused(zero_extent, "a zero extent: no bytes");
    std::int64_t past[] = {std::int64_t{1} << 40, std::int64_t{1} << 40};
    DLManagedTensor too_big = tensor();
    too_big.dl_tensor.shape = past;
    refused(too_big, "2^80 bytes");
    DLManagedTensor wrapping = tensor();
    wrapping.dl_tensor.byte_offset = UINT64_MAX - 8;
    refused(wrapping, "an offset that wraps");
    EXPECT_EQ(deleted, 0);
}

// A tensor of one device's handle is that device's bytes: another device does not adopt them.
TYPED_TEST(ForeignMemory, a_dlpack_tensor_of_another_devices_handle_is_not_adopted) {
    TANDEM_RUNTIME(runtime, 2);
    Client zero = runtime->client(0);
    Client one = runtime->client(1);
    Handle handle = this->allocate(zero, 64);
    const std::int64_t shape[] = {64};
    Result<DLManagedTensor*> out = to_dlpack(zero, handle, DLDataType{kDLUInt, 8, 1}, shape);
    ASSERT_TRUE(out) << out.error().report();
    Result<Handle> taken = from_dlpack(one, *out);
    ASSERT_FALSE(taken);
    EXPECT_EQ(taken.error().kind(), ErrorKind::InvalidArgument) << taken.error().report();
    (*out)->deleter(*out);  // Still the caller's.
}

}  // namespace
}  // namespace tandem::conformance
