// What the collectives of one runtime refuse, on every backend: each bad input is its own error
// (`InvalidArgument`, `WrongService`, `DeviceLost`), and a refused call changes nothing: no claim
// is made, no byte moves, no staging memory is taken and nothing is enqueued (every collective
// records events, so the event recorded after the call is the one after that recorded before).

#include "support.hpp"

#include "tandem/core/collectives.hpp"

#include <functional>
#include <span>

namespace tandem::conformance {
namespace {

template <typename Backend>
class CollectiveRefusals : public Conformance<Backend> {
public:
    /// Two devices, and on each an input of 8 bytes (device i's written with i + 1), an output of
    /// 16 and a third buffer of 8 written with 9.
    void SetUp() override {
        runtime_ = this->make(2);
        if (!runtime_) {
            GTEST_SKIP() << "needs 2 devices: " << this->why_not;
        }
        for (std::size_t index = 0; index < 2; ++index) {
            devices.push_back(runtime_->client(index));
            inputs.push_back(this->allocate(devices[index], 8));
            outputs.push_back(this->allocate(devices[index], 16));
            spares.push_back(this->allocate(devices[index], 8));
            ASSERT_TRUE(devices[index].write(inputs[index],
                                             filled(8, static_cast<std::uint8_t>(index + 1))));
            ASSERT_TRUE(devices[index].write(outputs[index], filled(16, 0)));
            ASSERT_TRUE(devices[index].write(spares[index], filled(8, 9)));
        }
    }

    /// Expects `call` to fail with `kind` and to change nothing on any device.
    void expect_refused(ErrorKind kind, const std::function<Status()>& call) {
        const std::uint64_t in_use = devices[0].memory_usage()->in_use_bytes;
        const std::uint64_t before = last_event(devices[0]);
        const Status refused = call();
        ASSERT_FALSE(refused) << "not refused";
        EXPECT_EQ(refused.error().kind(), kind) << refused.error().report();
        EXPECT_EQ(last_event(devices[0]), before + 1) << "a refused call enqueued work";
        EXPECT_EQ(devices[0].memory_usage()->in_use_bytes, in_use);
        for (std::size_t index = 0; index < devices.size(); ++index) {
            if (devices[index].lost()) {
                continue;  // Nothing can be asked of it.
            }
            EXPECT_EQ(this->read_bytes(devices[index], inputs[index]),
                      filled(8, static_cast<std::uint8_t>(index + 1)));
            EXPECT_EQ(this->read_bytes(devices[index], outputs[index]), filled(16, 0));
            EXPECT_EQ(this->read_bytes(devices[index], spares[index]), filled(8, 9));
        }
    }

    /// Expects each collective of `devices` to fail with `kind` and change nothing, given
    /// `small` as its buffers or inputs, and `large` (twice their size) as the outputs of an
    /// all-gather and the inputs of a reduce-scatter.
    void expect_every_collective_refused(ErrorKind kind, std::span<Client> among,
                                         std::span<const Handle> small,
                                         std::span<const Handle> large) {
        expect_refused(kind, [&] { return broadcast(among, small, 0); });
        expect_refused(kind,
                       [&] { return all_reduce(among, small, ElementType::f32, ReduceOp::sum); });
        expect_refused(kind, [&] { return all_gather(among, small, large); });
        expect_refused(kind, [&] {
            return reduce_scatter(among, large, small, ElementType::i32, ReduceOp::min);
        });
    }

    std::vector<Client> devices;
    std::vector<Handle> inputs;
    std::vector<Handle> outputs;
    std::vector<Handle> spares;

private:
    /// The sequence of a new event of `device`'s default stream.
    static std::uint64_t last_event(Client& device) {
        Result<Event> event = device.record_event(device.default_stream());
        EXPECT_TRUE(event) << event.error().report();
        return event ? event->sequence() : 0;
    }

    std::shared_ptr<Runtime> runtime_;
};
TYPED_TEST_SUITE(CollectiveRefusals, Backends, BackendNames);

TYPED_TEST(CollectiveRefusals, buffers_of_mismatched_sizes_are_invalid_arguments) {
    std::vector<Handle> uneven{this->inputs[0], this->outputs[1]};
    this->expect_every_collective_refused(ErrorKind::InvalidArgument, this->devices, uneven,
                                          this->outputs);
    this->expect_refused(ErrorKind::InvalidArgument, [&] {
        return send(this->devices[0], this->inputs[0], this->devices[1], this->outputs[1]);
    });
    std::vector<Handle> odd{*this->inputs[0].slice(0, 6), *this->inputs[1].slice(0, 6)};
    this->expect_refused(ErrorKind::InvalidArgument, [&] {
        return all_reduce(this->devices, odd, ElementType::f32, ReduceOp::sum);
    });
}

TYPED_TEST(CollectiveRefusals, a_bf16_buffer_of_an_odd_count_of_bytes_is_invalid_naming_its_size) {
    std::vector<Handle> odd{*this->inputs[0].slice(0, 7), *this->inputs[1].slice(0, 7)};
    std::vector<Handle> twice_odd{*this->outputs[0].slice(0, 14), *this->outputs[1].slice(0, 14)};
    const auto names_the_element_size = [](const Status& refused) {
        EXPECT_NE(
            refused ? std::string::npos : refused.error().message().find("of 2-byte elements"),
            std::string::npos);
        return refused;
    };
    this->expect_refused(ErrorKind::InvalidArgument, [&] {
        return names_the_element_size(
            all_reduce(this->devices, odd, ElementType::bf16, ReduceOp::sum));
    });
    this->expect_refused(ErrorKind::InvalidArgument, [&] {
        return names_the_element_size(
            reduce_scatter(this->devices, twice_odd, odd, ElementType::bf16, ReduceOp::max));
    });
}

TYPED_TEST(CollectiveRefusals, a_count_of_buffers_that_is_not_the_count_of_devices_is_invalid) {
    std::vector<Handle> one{this->inputs[0]};
    this->expect_every_collective_refused(ErrorKind::InvalidArgument, this->devices, one,
                                          this->outputs);
}

TYPED_TEST(CollectiveRefusals, a_device_named_twice_is_an_invalid_argument) {
    std::vector<Client> twice{this->devices[0], this->devices[0]};
    std::vector<Handle> small{this->inputs[0], this->spares[0]};
    std::vector<Handle> large{this->outputs[0], this->outputs[0]};
    this->expect_every_collective_refused(ErrorKind::InvalidArgument, twice, small, large);
    this->expect_refused(ErrorKind::InvalidArgument, [&] {
        return send(this->devices[0], this->inputs[0], this->devices[0], this->spares[0]);
    });
}

TYPED_TEST(CollectiveRefusals, no_devices_is_an_invalid_argument) {
    std::vector<Client> none;
    std::vector<Handle> nothing;
    this->expect_every_collective_refused(ErrorKind::InvalidArgument, none, nothing, nothing);
}

TYPED_TEST(CollectiveRefusals, a_buffer_of_another_device_is_the_wrong_service) {
    std::vector<Handle> swapped{this->inputs[1], this->inputs[0]};
    this->expect_every_collective_refused(ErrorKind::WrongService, this->devices, swapped,
                                          this->outputs);
    std::vector<Handle> large{this->outputs[1], this->outputs[0]};
    this->expect_refused(ErrorKind::WrongService,
                         [&] { return all_gather(this->devices, this->inputs, large); });
    this->expect_refused(ErrorKind::WrongService, [&] {
        return send(this->devices[0], this->inputs[1], this->devices[1], this->spares[1]);
    });
}

TYPED_TEST(CollectiveRefusals, a_root_that_is_no_device_index_is_an_invalid_argument) {
    this->expect_refused(ErrorKind::InvalidArgument,
                         [&] { return broadcast(this->devices, this->inputs, 2); });
}

TYPED_TEST(CollectiveRefusals, a_lost_device_fails_every_collective_with_device_lost) {
    ASSERT_TRUE(this->devices[1].inject(DeviceLossFault{0}));
    this->expect_every_collective_refused(ErrorKind::DeviceLost, this->devices, this->inputs,
                                          this->outputs);
    this->expect_refused(ErrorKind::DeviceLost, [&] {
        return send(this->devices[0], this->inputs[0], this->devices[1], this->spares[1]);
    });
}

}  // namespace
}  // namespace tandem::conformance
