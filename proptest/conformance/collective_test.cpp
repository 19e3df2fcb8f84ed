// Collectives across the devices of one runtime, on every backend: an all-reduce combines every
// device's buffer into each, and a claimed byte anywhere is never reduced (phase 3).

#include "support.hpp"

#include "tandem/core/collectives.hpp"

#include <cstring>

namespace tandem::conformance {
namespace {

template <typename Backend>
class Collectives : public Conformance<Backend> {};
TYPED_TEST_SUITE(Collectives, Backends, BackendNames);

template <typename Element>
std::vector<std::byte> bytes_of(const std::vector<Element>& values) {
    std::vector<std::byte> bytes(values.size() * sizeof(Element));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return bytes;
}

template <typename Element>
std::vector<Element> values_of(const std::vector<std::byte>& bytes) {
    std::vector<Element> values(bytes.size() / sizeof(Element));
    std::memcpy(values.data(), bytes.data(), values.size() * sizeof(Element));
    return values;
}

TYPED_TEST(Collectives, an_all_reduce_gives_every_device_the_sum_in_device_order) {
    TANDEM_RUNTIME(runtime, 2);
    std::vector<Client> devices{runtime->client(0), runtime->client(1)};
    std::vector<Handle> buffers{this->allocate(devices[0], 16), this->allocate(devices[1], 16)};
    ASSERT_TRUE(devices[0].write(buffers[0], bytes_of<float>({1, 2, 3, 4})));
    ASSERT_TRUE(devices[1].write(buffers[1], bytes_of<float>({10, 20, 30, 40.5f})));
    ASSERT_TRUE(all_reduce(devices, buffers, ElementType::f32, ReduceOp::sum));
    for (std::size_t index = 0; index < 2; ++index) {
        EXPECT_EQ(values_of<float>(this->read_bytes(devices[index], buffers[index])),
                  (std::vector<float>{11, 22, 33, 44.5f}))
            << "device " << index;
    }
}

TYPED_TEST(Collectives, max_and_min_combine_integers_and_doubles_element_by_element) {
    TANDEM_RUNTIME(runtime, 2);
    std::vector<Client> devices{runtime->client(0), runtime->client(1)};
    std::vector<Handle> wide{this->allocate(devices[0], 16), this->allocate(devices[1], 16)};
    ASSERT_TRUE(devices[0].write(wide[0], bytes_of<std::int64_t>({-5, 7})));
    ASSERT_TRUE(devices[1].write(wide[1], bytes_of<std::int64_t>({3, -9})));
    ASSERT_TRUE(all_reduce(devices, wide, ElementType::i64, ReduceOp::max));
    std::vector<Handle> narrow{this->allocate(devices[0], 8), this->allocate(devices[1], 8)};
    ASSERT_TRUE(devices[0].write(narrow[0], bytes_of<std::int32_t>({-5, 7})));
    ASSERT_TRUE(devices[1].write(narrow[1], bytes_of<std::int32_t>({3, -9})));
    ASSERT_TRUE(all_reduce(devices, narrow, ElementType::i32, ReduceOp::min));
    std::vector<Handle> doubles{this->allocate(devices[0], 8), this->allocate(devices[1], 8)};
    ASSERT_TRUE(devices[0].write(doubles[0], bytes_of<double>({0.25})));
    ASSERT_TRUE(devices[1].write(doubles[1], bytes_of<double>({0.5})));
    ASSERT_TRUE(all_reduce(devices, doubles, ElementType::f64, ReduceOp::sum));
    for (std::size_t index = 0; index < 2; ++index) {
        EXPECT_EQ(values_of<std::int64_t>(this->read_bytes(devices[index], wide[index])),
                  (std::vector<std::int64_t>{3, 7}));
        EXPECT_EQ(values_of<std::int32_t>(this->read_bytes(devices[index], narrow[index])),
                  (std::vector<std::int32_t>{-5, -9}));
        EXPECT_EQ(values_of<double>(this->read_bytes(devices[index], doubles[index])),
                  (std::vector<double>{0.75}));
    }
}

// A claimed source on one device is never reduced: every device's buffer is claimed, with the
// root that claimed the source, and the outcome is the same on every device.
TYPED_TEST(Collectives, a_claimed_source_on_one_device_claims_every_buffer_with_its_root) {
    TANDEM_RUNTIME(runtime, 2);
    std::vector<Client> devices{runtime->client(0), runtime->client(1)};
    std::vector<Handle> buffers{this->allocate(devices[0], 16), this->allocate(devices[1], 16)};
    ASSERT_TRUE(devices[0].write(buffers[0], bytes_of<float>({1, 2, 3, 4})));
    ASSERT_TRUE(devices[1].launch("fail", LaunchConfig::linear(1), {out(buffers[1])},
                                  KernelArgs().u64(23)));
    ASSERT_TRUE(all_reduce(devices, buffers, ElementType::f32, ReduceOp::sum));
    for (std::size_t index = 0; index < 2; ++index) {
        Result<std::vector<std::byte>> read = devices[index].read(buffers[index]);
        ASSERT_FALSE(read) << "device " << index << " returned bytes built of a claimed source";
        EXPECT_EQ(read.error().kind(), ErrorKind::Unwritten);
        EXPECT_NE(read.error().report().find("kernel 'fail' failed with code 23"),
                  std::string::npos)
            << "device " << index << ": " << read.error().report();
    }
}

TYPED_TEST(Collectives, an_all_reduce_it_cannot_take_is_refused_and_changes_nothing) {
    TANDEM_RUNTIME(runtime, 2);
    std::vector<Client> devices{runtime->client(0), runtime->client(1)};
    std::vector<Handle> buffers{this->allocate(devices[0], 16), this->allocate(devices[1], 8)};
    ASSERT_TRUE(devices[0].write(buffers[0], filled(16, 1)));
    ASSERT_TRUE(devices[1].write(buffers[1], filled(8, 2)));
    Status sizes = all_reduce(devices, buffers, ElementType::f32, ReduceOp::sum);
    ASSERT_FALSE(sizes);
    EXPECT_EQ(sizes.error().kind(), ErrorKind::InvalidArgument);
    std::vector<Handle> swapped{buffers[1], buffers[0]};
    Status services = all_reduce(devices, swapped, ElementType::f32, ReduceOp::sum);
    ASSERT_FALSE(services);
    EXPECT_EQ(services.error().kind(), ErrorKind::WrongService);
    std::vector<Handle> odd{this->allocate(devices[0], 6), this->allocate(devices[1], 6)};
    EXPECT_EQ(all_reduce(devices, odd, ElementType::f32, ReduceOp::sum).error().kind(),
              ErrorKind::InvalidArgument);
    std::vector<Client> twice{devices[0], devices[0]};
    std::vector<Handle> both{buffers[0], buffers[0]};
    EXPECT_EQ(all_reduce(twice, both, ElementType::f32, ReduceOp::sum).error().kind(),
              ErrorKind::InvalidArgument);
    EXPECT_EQ(this->read_bytes(devices[0], buffers[0]), filled(16, 1));
    EXPECT_EQ(this->read_bytes(devices[1], buffers[1]), filled(8, 2));
}

}  // namespace
}  // namespace tandem::conformance
