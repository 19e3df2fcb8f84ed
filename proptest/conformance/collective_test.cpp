// Collectives across the devices of one runtime, on every backend: each moves or reduces what it
// promises, and a claimed byte of any source is never moved or reduced: every destination is
// claimed, all of it, with the root and the hops, the same on every device (phase 3). What a
// collective refuses is in collective_refusal_test.cpp.

#include "bf16_cases.hpp"
#include "support.hpp"

#include "tandem/core/collectives.hpp"

#include <array>
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

/// An all-reduce by `op` of bf16 over the devices of `runtime`, device i's buffer holding
/// `inputs[i]`: every device's buffer holds `expected` after.
template <typename Test>
void expect_bf16_all_reduce(Test& test, Runtime& runtime, ReduceOp op,
                            const std::array<bf16_cases::Values, 3>& inputs,
                            const bf16_cases::Values& expected) {
    std::vector<Client> devices;
    std::vector<Handle> buffers;
    for (std::size_t index = 0; index < runtime.device_count(); ++index) {
        devices.push_back(runtime.client(index));
        buffers.push_back(test.allocate(devices.back(), inputs[index].size() * 2));
        ASSERT_TRUE(devices.back().write(buffers.back(), bytes_of(inputs[index])));
    }
    ASSERT_TRUE(all_reduce(devices, buffers, ElementType::bf16, op));
    for (std::size_t index = 0; index < devices.size(); ++index) {
        EXPECT_EQ(values_of<std::uint16_t>(test.read_bytes(devices[index], buffers[index])),
                  expected)
            << "device " << index << " of " << devices.size() << ", op " << static_cast<int>(op);
    }
}

// Each step rounds to nearest even, in device order: the cases are bf16_cases.hpp's, whose sums
// of three come out otherwise in any other order.
TYPED_TEST(Collectives, a_bf16_sum_folds_in_device_order_rounding_each_step_to_nearest_even) {
    for (const std::uint32_t count : {2u, 3u}) {
        TANDEM_RUNTIME(runtime, count);
        expect_bf16_all_reduce(*this, *runtime, ReduceOp::sum, bf16_cases::sum_inputs,
                               bf16_cases::sum_of_first(count));
    }
}

// A reduce-scatter folds as an all-reduce does: device i takes chunk i of the same sum.
TYPED_TEST(Collectives, a_bf16_reduce_scatter_gives_device_i_chunk_i_of_the_rounded_sum) {
    for (const std::uint32_t count : {2u, 3u}) {
        TANDEM_RUNTIME(runtime, count);
        const std::size_t chunk = bf16_cases::sum_inputs[0].size() / count;
        std::vector<Client> devices;
        std::vector<Handle> inputs;
        std::vector<Handle> outputs;
        for (std::size_t index = 0; index < count; ++index) {
            devices.push_back(runtime->client(index));
            inputs.push_back(this->allocate(devices.back(), chunk * count * 2));
            outputs.push_back(this->allocate(devices.back(), chunk * 2));
            ASSERT_TRUE(
                devices.back().write(inputs.back(), bytes_of(bf16_cases::sum_inputs[index])));
        }
        ASSERT_TRUE(reduce_scatter(devices, inputs, outputs, ElementType::bf16, ReduceOp::sum));
        const bf16_cases::Values sum = bf16_cases::sum_of_first(count);
        for (std::size_t index = 0; index < count; ++index) {
            const auto first = sum.begin() + static_cast<std::ptrdiff_t>(index * chunk);
            EXPECT_EQ(values_of<std::uint16_t>(this->read_bytes(devices[index], outputs[index])),
                      bf16_cases::Values(first, first + static_cast<std::ptrdiff_t>(chunk)))
                << "device " << index << " of " << count;
        }
    }
}

TYPED_TEST(Collectives, bf16_max_and_min_skip_nans_and_order_minus_zero_below_plus_zero) {
    for (const std::uint32_t count : {2u, 3u}) {
        TANDEM_RUNTIME(runtime, count);
        expect_bf16_all_reduce(*this, *runtime, ReduceOp::max, bf16_cases::order_inputs,
                               bf16_cases::max_of_first(count));
        expect_bf16_all_reduce(*this, *runtime, ReduceOp::min, bf16_cases::order_inputs,
                               bf16_cases::min_of_first(count));
    }
}

// The fold itself, on one device: a GPU runs the bf16 steps of the host's lines
// (tandem/core/bfloat16.hpp), so one GPU gives these bytes too.
TYPED_TEST(Collectives, the_combine_kernel_gives_the_same_bf16_bytes_on_every_backend) {
    TANDEM_RUNTIME(runtime, 1);
    Client device = runtime->client(0);
    struct Case {
        ReduceOp op;
        const std::array<bf16_cases::Values, 3>& inputs;
        bf16_cases::Values expected;
    };
    const Case cases[] = {
        {ReduceOp::sum, bf16_cases::sum_inputs, bf16_cases::sum_of_first(2)},
        {ReduceOp::max, bf16_cases::order_inputs, bf16_cases::max_of_first(2)},
        {ReduceOp::min, bf16_cases::order_inputs, bf16_cases::min_of_first(2)},
    };
    for (const Case& each : cases) {
        Handle into = this->allocate(device, each.inputs[0].size() * 2);
        Handle from = this->allocate(device, each.inputs[1].size() * 2);
        ASSERT_TRUE(device.write(into, bytes_of(each.inputs[0])));
        ASSERT_TRUE(device.write(from, bytes_of(each.inputs[1])));
        ASSERT_TRUE(device.launch("combine", LaunchConfig::linear(64),
                                  {{into, AccessMode::ReadWrite}, {from, AccessMode::Read}},
                                  KernelArgs()
                                      .u64(static_cast<std::uint64_t>(each.op))
                                      .u64(static_cast<std::uint64_t>(ElementType::bf16))));
        EXPECT_EQ(values_of<std::uint16_t>(this->read_bytes(device, into)), each.expected)
            << "op " << static_cast<int>(each.op);
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

/// The devices of `runtime`, one buffer of `size` bytes each, written with `value + device`.
template <typename Test>
struct Spread {
    std::vector<Client> devices;
    std::vector<Handle> buffers;
    Spread(Test& test, Runtime& runtime, std::uint64_t size, std::uint8_t value) {
        for (std::size_t index = 0; index < runtime.device_count(); ++index) {
            devices.push_back(runtime.client(index));
            buffers.push_back(test.allocate(devices.back(), size));
            EXPECT_TRUE(devices.back().write(
                buffers.back(), filled(size, static_cast<std::uint8_t>(value + index))));
        }
    }
};

/// A buffer of `size` bytes on each of `devices`.
template <typename Test>
std::vector<Handle> outputs_of(Test& test, std::vector<Client>& devices, std::uint64_t size) {
    std::vector<Handle> outputs;
    for (Client& device : devices) {
        outputs.push_back(test.allocate(device, size));
    }
    return outputs;
}

/// Expects a read of `buffer` to fail on the failure of kernel 'fail' with `code`, naming the hop
/// of the copy from device `source` that was skipped.
void expect_claimed_through_a_hop(Client& device, const Handle& buffer, std::uint32_t code,
                                  std::size_t source) {
    Result<std::vector<std::byte>> read = device.read(buffer);
    ASSERT_FALSE(read) << to_string(device.service()) << " returned bytes of a claimed source";
    EXPECT_EQ(read.error().kind(), ErrorKind::Unwritten);
    EXPECT_EQ(root_code(read.error()), code) << read.error().report();
    EXPECT_NE(
        read.error().report().find("skipped 'peer copy from device " + std::to_string(source)),
        std::string::npos)
        << read.error().report();
}

TYPED_TEST(Collectives, a_broadcast_copies_the_roots_buffer_into_every_other_device) {
    TANDEM_RUNTIME(runtime, 3);
    Spread spread(*this, *runtime, 32, 10);
    ASSERT_TRUE(broadcast(spread.devices, spread.buffers, 1));
    for (std::size_t index = 0; index < 3; ++index) {
        EXPECT_EQ(this->read_bytes(spread.devices[index], spread.buffers[index]), filled(32, 11))
            << "device " << index;
    }
}

TYPED_TEST(Collectives, a_broadcast_of_a_claimed_root_claims_every_other_buffer_with_its_root) {
    TANDEM_RUNTIME(runtime, 3);
    Spread spread(*this, *runtime, 32, 10);
    this->fail(spread.devices[2], spread.buffers[2], 31);
    ASSERT_TRUE(broadcast(spread.devices, spread.buffers, 2));
    for (std::size_t index = 0; index < 2; ++index) {
        expect_claimed_through_a_hop(spread.devices[index], spread.buffers[index], 31, 2);
    }
    EXPECT_EQ(root_code(*this->read_error(spread.devices[2], spread.buffers[2])), 31u);
}

TYPED_TEST(Collectives, an_all_gather_puts_input_i_at_chunk_i_of_every_output) {
    TANDEM_RUNTIME(runtime, 3);
    Spread inputs(*this, *runtime, 8, 1);
    std::vector<Handle> outputs = outputs_of(*this, inputs.devices, 24);
    ASSERT_TRUE(all_gather(inputs.devices, inputs.buffers, outputs));
    std::vector<std::byte> expected = filled(8, 1);
    for (const std::uint8_t value : {std::uint8_t{2}, std::uint8_t{3}}) {
        const std::vector<std::byte> chunk = filled(8, value);
        expected.insert(expected.end(), chunk.begin(), chunk.end());
    }
    for (std::size_t index = 0; index < 3; ++index) {
        EXPECT_EQ(this->read_bytes(inputs.devices[index], outputs[index]), expected)
            << "device " << index;
    }
}

// Atomic: the chunks of clean inputs are not gathered either, on any device.
TYPED_TEST(Collectives, an_all_gather_with_one_claimed_input_claims_all_of_every_output) {
    TANDEM_RUNTIME(runtime, 3);
    Spread inputs(*this, *runtime, 8, 1);
    std::vector<Handle> outputs = outputs_of(*this, inputs.devices, 24);
    this->fail(inputs.devices[1], inputs.buffers[1], 32);
    ASSERT_TRUE(all_gather(inputs.devices, inputs.buffers, outputs));
    for (std::size_t index = 0; index < 3; ++index) {
        expect_claimed_through_a_hop(inputs.devices[index], *outputs[index].slice(0, 8), 32, 1);
        expect_claimed_through_a_hop(inputs.devices[index], outputs[index], 32, 1);
    }
}

TYPED_TEST(Collectives, an_all_gather_in_place_reads_every_input_before_it_writes) {
    TANDEM_RUNTIME(runtime, 2);
    std::vector<Client> devices{runtime->client(0), runtime->client(1)};
    std::vector<Handle> outputs{this->allocate(devices[0], 16), this->allocate(devices[1], 16)};
    std::vector<Handle> inputs{*outputs[0].slice(0, 8), *outputs[1].slice(8, 8)};
    ASSERT_TRUE(devices[0].write(inputs[0], filled(8, 4)));
    ASSERT_TRUE(devices[1].write(inputs[1], filled(8, 5)));
    ASSERT_TRUE(all_gather(devices, inputs, outputs));
    std::vector<std::byte> expected = filled(8, 4);
    const std::vector<std::byte> second = filled(8, 5);
    expected.insert(expected.end(), second.begin(), second.end());
    for (std::size_t index = 0; index < 2; ++index) {
        EXPECT_EQ(this->read_bytes(devices[index], outputs[index]), expected);
    }
}

TYPED_TEST(Collectives, a_reduce_scatter_gives_device_i_the_reduction_of_chunk_i) {
    TANDEM_RUNTIME(runtime, 3);
    std::vector<Client> devices;
    std::vector<Handle> inputs;
    std::vector<Handle> outputs;
    for (std::size_t index = 0; index < 3; ++index) {
        devices.push_back(runtime->client(index));
        inputs.push_back(this->allocate(devices.back(), 24));
        outputs.push_back(this->allocate(devices.back(), 8));
        const auto base = static_cast<std::int32_t>(index * 100);
        ASSERT_TRUE(devices.back().write(
            inputs.back(),
            bytes_of<std::int32_t>({base + 1, base + 2, base + 3, base + 4, base + 5, base + 6})));
    }
    ASSERT_TRUE(reduce_scatter(devices, inputs, outputs, ElementType::i32, ReduceOp::sum));
    const std::vector<std::vector<std::int32_t>> expected{{303, 306}, {309, 312}, {315, 318}};
    for (std::size_t index = 0; index < 3; ++index) {
        EXPECT_EQ(values_of<std::int32_t>(this->read_bytes(devices[index], outputs[index])),
                  expected[index])
            << "device " << index;
    }
}

TYPED_TEST(Collectives, a_reduce_scatter_with_one_claimed_input_claims_every_output) {
    TANDEM_RUNTIME(runtime, 2);
    std::vector<Client> devices{runtime->client(0), runtime->client(1)};
    std::vector<Handle> inputs{this->allocate(devices[0], 16), this->allocate(devices[1], 16)};
    std::vector<Handle> outputs{this->allocate(devices[0], 8), this->allocate(devices[1], 8)};
    ASSERT_TRUE(devices[0].write(inputs[0], bytes_of<float>({1, 2, 3, 4})));
    ASSERT_TRUE(devices[1].write(inputs[1], bytes_of<float>({1, 2, 3, 4})));
    // Only chunk 1 of device 1's input is claimed; chunk 0 is reduced by no one either.
    this->fail(devices[1], *inputs[1].slice(8, 8), 33);
    ASSERT_TRUE(reduce_scatter(devices, inputs, outputs, ElementType::f32, ReduceOp::max));
    for (std::size_t index = 0; index < 2; ++index) {
        expect_claimed_through_a_hop(devices[index], outputs[index], 33, 1);
    }
}

TYPED_TEST(Collectives, a_send_copies_the_source_into_the_receivers_target) {
    TANDEM_RUNTIME(runtime, 2);
    Spread spread(*this, *runtime, 16, 7);
    ASSERT_TRUE(send(spread.devices[1], spread.buffers[1], spread.devices[0], spread.buffers[0]));
    EXPECT_EQ(this->read_bytes(spread.devices[0], spread.buffers[0]), filled(16, 8));
    EXPECT_EQ(this->read_bytes(spread.devices[1], spread.buffers[1]), filled(16, 8));
}

// The sender claims nothing new: its source keeps the one failure it had, carried by the one
// allocation; the receiver's target takes that failure with the hop.
TYPED_TEST(Collectives, a_send_of_a_claimed_source_claims_only_the_receivers_target) {
    TANDEM_RUNTIME(runtime, 2);
    Spread spread(*this, *runtime, 16, 7);
    Client& sender = spread.devices[0];
    this->fail(sender, spread.buffers[0], 34);
    const Error before = *this->read_error(sender, spread.buffers[0]);
    ASSERT_TRUE(send(sender, spread.buffers[0], spread.devices[1], spread.buffers[1]));
    expect_claimed_through_a_hop(spread.devices[1], spread.buffers[1], 34, 0);
    const Error after = *this->read_error(sender, spread.buffers[0]);
    EXPECT_EQ(unwritten(after)->failure, unwritten(before)->failure);
    EXPECT_EQ(unwritten(after)->allocations, 1u) << after.report();
    EXPECT_TRUE(unwritten(after)->chain.empty()) << after.report();
}

TYPED_TEST(Collectives, a_send_that_lands_releases_a_claimed_target) {
    TANDEM_RUNTIME(runtime, 2);
    Spread spread(*this, *runtime, 16, 7);
    this->fail(spread.devices[1], spread.buffers[1], 35);
    ASSERT_TRUE(send(spread.devices[0], spread.buffers[0], spread.devices[1], spread.buffers[1]));
    EXPECT_EQ(this->read_bytes(spread.devices[1], spread.buffers[1]), filled(16, 7));
}

// Work enqueued on a source's stream after a collective waits for it on every device, so the
// others read the bytes the source held when the collective was called.
TYPED_TEST(Collectives, work_after_a_collective_on_a_sources_stream_waits_for_every_reader) {
    TANDEM_RUNTIME(runtime, 3);
    std::vector<Client> devices{runtime->client(0), runtime->client(1), runtime->client(2)};
    Result<StreamId> stream = devices[0].create_stream();
    ASSERT_TRUE(stream) << stream.error().report();
    std::vector<Handle> buffers{this->allocate(devices[0], 64, *stream),
                                this->allocate(devices[1], 64), this->allocate(devices[2], 64)};
    this->fill(devices[0], buffers[0], 6, *stream);
    ASSERT_TRUE(broadcast(devices, buffers, 0));
    this->fill(devices[0], buffers[0], 9, *stream);
    EXPECT_EQ(this->read_bytes(devices[1], buffers[1]), filled(64, 6));
    EXPECT_EQ(this->read_bytes(devices[2], buffers[2]), filled(64, 6));
    EXPECT_EQ(this->read_bytes(devices[0], buffers[0]), filled(64, 9));
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
