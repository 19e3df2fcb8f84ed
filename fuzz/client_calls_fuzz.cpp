// Fuzz target: random sequences of client calls with hostile offsets, services and sizes, on a
// two-device runtime and a one-device runtime whose handles are foreign to it. The first byte of
// an input picks the backend: the simulator or the reference backend, which obey one contract.
//
// The oracle: a call the caller got wrong is refused with the kind the contract names for it
// (`InvalidArgument` for offsets, sizes, streams and faults; `WrongService` for a handle of
// another device or runtime that was never shared; `PeerUnreachable` for shared memory of another
// runtime; `OutOfMemory` for more than a device holds; `DeviceLost` first on a lost device), and
// a call that is right either succeeds or fails with a kind that work can fail with at run time.
// No input may crash, hang, or trip AddressSanitizer or UndefinedBehaviorSanitizer.

#include "tandem/core/external_work.hpp"
#include "tandem/core/reference_runtime.hpp"
#include "tandem/sim/runtime.hpp"

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace tandem;

/// Calls per input, handles and events kept: bounds that keep one input well under a second.
constexpr std::size_t max_calls = 48;
constexpr std::size_t max_handles = 24;
constexpr std::size_t max_events = 16;
constexpr std::size_t max_reads = 8;
/// Host blocks the program may hand a device to adopt, and their size.
constexpr std::size_t host_blocks = 4;
constexpr std::uint64_t host_block_bytes = 256;
/// Bytes a write or launch may touch; larger handles are only given wrong sizes.
constexpr std::uint64_t max_touched_bytes = 64 * 1024;
constexpr std::uint64_t device_capacity_bytes = 8 << 20;

[[noreturn]] void violated(const std::string& what) {
    std::fprintf(stderr, "oracle violated: %s\n", what.c_str());
    std::abort();
}

std::string outcome(const Error* error) {
    return error == nullptr ? std::string("success") : error->report();
}

/// The call was refused with exactly `kind`.
template <typename R>
void expect_refused(const R& result, ErrorKind kind, const char* call) {
    if (result) {
        violated(std::string(call) + ": expected " + std::string(to_string(kind)) +
                 ", got success");
    }
    if (result.error().kind() != kind) {
        violated(std::string(call) + ": expected " + std::string(to_string(kind)) + ", got " +
                 result.error().report());
    }
}

/// The call succeeded, or failed with one of `allowed`.
template <typename R>
void expect_ok_or(const R& result, std::initializer_list<ErrorKind> allowed, const char* call) {
    if (result) {
        return;
    }
    for (ErrorKind kind : allowed) {
        if (result.error().kind() == kind) {
            return;
        }
    }
    violated(std::string(call) + ": unexpected " + outcome(&result.error()));
}

/// What a read or sync of bytes may fail with at run time.
constexpr std::initializer_list<ErrorKind> read_failures = {
    ErrorKind::Unwritten, ErrorKind::Several, ErrorKind::DeviceLost, ErrorKind::TornDown};

struct Slot {
    Handle handle;
    std::size_t client = 0;  // Index into Harness::clients.
};

struct EventSlot {
    Event event;
    std::size_t client = 0;
};

/// An asynchronous read in flight and the buffer it lands in.
struct ReadSlot {
    PendingRead read;
    std::unique_ptr<std::vector<std::byte>> into;
    std::size_t client = 0;
};

/// Host memory a device may adopt, and whether a device holds it now (set until its release).
struct HostBlock {
    std::unique_ptr<std::byte[]> bytes = std::make_unique<std::byte[]>(host_block_bytes);
    std::shared_ptr<bool> adopted = std::make_shared<bool>(false);
};

/// Values a hostile caller passes for offsets, lengths and sizes.
std::uint64_t hostile_u64(FuzzedDataProvider& data, std::uint64_t near) {
    switch (data.ConsumeIntegralInRange<int>(0, 9)) {
        case 0:
            return 0;
        case 1:
            return 1;
        case 2:
            return near;
        case 3:
            return near + 1;
        case 4:
            return near == 0 ? 0 : near - 1;
        case 5:
            return (std::uint64_t{1} << 62) + 1;
        case 6:
            return std::numeric_limits<std::uint64_t>::max();
        case 7:
            return std::numeric_limits<std::uint64_t>::max() - near;
        case 8:
            return data.ConsumeIntegral<std::uint64_t>();
        default:
            return data.ConsumeIntegralInRange<std::uint64_t>(0, 4096);
    }
}

class Harness {
public:
    explicit Harness(FuzzedDataProvider& data) : data_(data) {
        const bool reference = data_.ConsumeBool();
        const std::uint64_t seed = data_.ConsumeIntegral<std::uint64_t>();
        main_ = create(reference, 2, seed);
        foreign_ = create(reference, 1, seed + 1);
        clients_ = {main_->client(0), main_->client(1), foreign_->client(0)};
        streams_.resize(clients_.size());
        for (std::size_t index = 0; index < clients_.size(); ++index) {
            streams_[index].push_back(clients_[index].default_stream());
        }
    }

    void run() {
        for (std::size_t call = 0; call < max_calls && data_.remaining_bytes() > 0; ++call) {
            step();
        }
        expect_ok_or(main_->sync_all(), {ErrorKind::TornDown}, "sync_all");
        expect_ok_or(foreign_->sync_all(), {ErrorKind::TornDown}, "sync_all");
    }

private:
    static std::shared_ptr<Runtime> create(bool reference, std::uint32_t devices,
                                           std::uint64_t seed) {
        Result<std::shared_ptr<Runtime>> runtime = [&]() -> Result<std::shared_ptr<Runtime>> {
            if (reference) {
                auto made = reference::ReferenceRuntime::create(
                    {.devices = devices, .seed = seed, .capacity_bytes = device_capacity_bytes});
                if (!made) {
                    return made.error();
                }
                return std::shared_ptr<Runtime>(*made);
            }
            auto made = sim::SimRuntime::create(
                {.devices = devices, .seed = seed, .capacity_bytes = device_capacity_bytes});
            if (!made) {
                return made.error();
            }
            return std::shared_ptr<Runtime>(*made);
        }();
        if (!runtime) {
            violated("cannot create a runtime: " + runtime.error().report());
        }
        return *runtime;
    }

    void step() {
        for (std::size_t index = 0; index < clients_.size(); ++index) {
            lost_before_[index] = clients_[index].lost().has_value();
        }
        // One call a step, picked by the input.
        using Call = void (*)(Harness&);
        static constexpr std::array<Call, 25> calls{
            [](Harness& h) { h.allocate(); },       [](Harness& h) { h.add_offset(true); },
            [](Harness& h) { h.add_offset(false); }, [](Harness& h) { h.slice(); },
            [](Harness& h) { h.write(); },          [](Harness& h) { h.read(); },
            [](Harness& h) { h.copy(); },           [](Harness& h) { h.launch(); },
            [](Harness& h) { h.share(); },          [](Harness& h) { h.record_event(); },
            [](Harness& h) { h.wait_event(); },     [](Harness& h) { h.inject(); },
            [](Harness& h) { h.sync(); },           [](Harness& h) { h.drop_or_stream(); },
            [](Harness& h) { h.grant(); },          [](Harness& h) { h.capture(); },
            [](Harness& h) { h.replay(); },         [](Harness& h) { h.read_strided(); },
            [](Harness& h) { h.read_async(); },     [](Harness& h) { h.wait_read(); },
            [](Harness& h) { h.host_wait(); },      [](Harness& h) { h.destroy_stream(); },
            [](Harness& h) { h.adopt(); },          [](Harness& h) { h.write_strided(); },
            [](Harness& h) { h.external(); },
        };
        calls[data_.ConsumeIntegralInRange<std::size_t>(0, calls.size() - 1)](*this);
    }

    std::size_t pick_client() { return data_.ConsumeIntegralInRange<std::size_t>(0, 2); }
    Client& client(std::size_t index) { return clients_[index]; }
    /// Whether the device was lost before this step's call: a call on a lost device is refused
    /// with `DeviceLost` first, while the call that loses it (a backend that runs work when it is
    /// enqueued counts an injected loss there) is accepted, its work failing with the loss.
    bool lost(std::size_t index) const { return lost_before_[index]; }
    bool same_runtime(std::size_t a, std::size_t b) const { return (a < 2) == (b < 2); }

    Slot* pick_slot() {
        if (slots_.empty()) {
            return nullptr;
        }
        return &slots_[data_.ConsumeIntegralInRange<std::size_t>(0, slots_.size() - 1)];
    }

    StreamId pick_stream(std::size_t index) {
        const auto& streams = streams_[index];
        if (data_.ConsumeIntegralInRange<int>(0, 15) == 0) {
            return StreamId{data_.ConsumeIntegral<std::uint32_t>()};  // Maybe no stream at all.
        }
        return streams[data_.ConsumeIntegralInRange<std::size_t>(0, streams.size() - 1)];
    }

    bool valid_stream(std::size_t index, StreamId stream) const {
        for (const StreamId& each : streams_[index]) {
            if (each == stream) {
                return true;
            }
        }
        return false;
    }

    void keep(Handle handle, std::size_t owner) {
        if (slots_.size() < max_handles) {
            slots_.push_back(Slot{std::move(handle), owner});
        }
    }

    /// How the client at `user` may bind `slot` as a launch or copy source: the error kind a
    /// refusal names, or nothing when it binds.
    std::optional<ErrorKind> binding_refusal(std::size_t user, const Slot& slot) {
        if (slot.handle.service() == client(user).service()) {
            return std::nullopt;
        }
        if (!slot.handle.peer()) {
            return ErrorKind::WrongService;  // P1: never shared, so never bound elsewhere.
        }
        return std::nullopt;
    }

    /// The refusal a device gives bound shared memory: of another runtime it cannot reach.
    bool foreign_peer(std::size_t user, const Slot& slot) const {
        return slot.handle.service() != clients_[user].service() && slot.handle.peer() &&
               !same_runtime(user, slot.client);
    }

    void allocate() {
        const std::size_t index = pick_client();
        const std::uint64_t size = hostile_u64(data_, device_capacity_bytes);
        const StreamId stream = pick_stream(index);
        Result<Handle> handle = client(index).allocate(size, stream);
        if (lost(index)) {
            expect_refused(handle, ErrorKind::DeviceLost, "allocate on a lost device");
        } else if (!valid_stream(index, stream)) {
            expect_refused(handle, ErrorKind::InvalidArgument, "allocate on no stream");
        } else if (size == 0 || size > (std::uint64_t{1} << 62)) {
            expect_refused(handle, ErrorKind::InvalidArgument, "allocate of a hostile size");
        } else if (size > device_capacity_bytes) {
            expect_refused(handle, ErrorKind::OutOfMemory, "allocate past the capacity");
            const auto* details = handle.error().details_as<OutOfMemoryDetails>();
            if (details == nullptr || details->requested_bytes != size) {
                violated("OutOfMemory without the bytes requested: " + handle.error().report());
            }
        } else {
            expect_ok_or(handle, {ErrorKind::OutOfMemory}, "allocate");
        }
        if (handle) {
            if (handle->size() != size || handle->size_in_use() != size ||
                handle->service() != client(index).service()) {
                violated("allocate gave " + handle->describe());
            }
            keep(std::move(*handle), index);
        }
    }

    void add_offset(bool at_start) {
        Slot* slot = pick_slot();
        if (slot == nullptr) {
            return;
        }
        const Handle& handle = slot->handle;
        const std::uint64_t bytes = hostile_u64(data_, handle.size_in_use());
        Result<Handle> moved =
            at_start ? handle.add_offset_start(bytes) : handle.add_offset_end(bytes);
        if (bytes > handle.size_in_use()) {
            expect_refused(moved, ErrorKind::InvalidArgument, "add_offset past the size");
            return;
        }
        if (!moved) {
            violated("add_offset within the size refused: " + moved.error().report());
        }
        const std::uint64_t start = handle.offset_start() + (at_start ? bytes : 0);
        const std::uint64_t end = handle.offset_end() + (at_start ? 0 : bytes);
        if (moved->offset_start() != start || moved->offset_end() != end ||
            moved->size_in_use() != handle.size_in_use() - bytes ||
            moved->size() != handle.size()) {
            violated("add_offset gave " + moved->describe() + " from " + handle.describe());
        }
        keep(std::move(*moved), slot->client);
    }

    void slice() {
        Slot* slot = pick_slot();
        if (slot == nullptr) {
            return;
        }
        const Handle& handle = slot->handle;
        const std::uint64_t offset = hostile_u64(data_, handle.size_in_use());
        const std::uint64_t length =
            hostile_u64(data_, handle.size_in_use() - std::min(offset, handle.size_in_use()));
        Result<Handle> sliced = handle.slice(offset, length);
        if (offset > handle.size_in_use() || length > handle.size_in_use() - offset) {
            expect_refused(sliced, ErrorKind::InvalidArgument, "slice past the range");
            return;
        }
        if (!sliced) {
            violated("slice within the range refused: " + sliced.error().report());
        }
        if (sliced->range().begin != handle.range().begin + offset ||
            sliced->size_in_use() != length || sliced->size() != handle.size()) {
            violated("slice gave " + sliced->describe() + " from " + handle.describe());
        }
        keep(std::move(*sliced), slot->client);
    }

    void write() {
        Slot* slot = pick_slot();
        if (slot == nullptr) {
            return;
        }
        const std::size_t index = pick_client();
        const std::uint64_t in_use = slot->handle.size_in_use();
        std::uint64_t size = data_.ConsumeIntegralInRange<std::uint64_t>(0, 256);
        if (data_.ConsumeBool() && in_use <= max_touched_bytes) {
            size = in_use;
        }
        const std::vector<std::byte> bytes(size, std::byte{0x5a});
        Status written = client(index).write(slot->handle, bytes);
        if (slot->handle.service() != client(index).service()) {
            expect_refused(written, ErrorKind::WrongService, "write through another device");
        } else if (size != in_use) {
            expect_refused(written, ErrorKind::InvalidArgument, "write of the wrong size");
        } else if (lost(index)) {
            expect_refused(written, ErrorKind::DeviceLost, "write on a lost device");
        } else if (!written) {
            violated("write refused: " + written.error().report());
        }
    }

    void read() {
        Slot* slot = pick_slot();
        if (slot == nullptr) {
            return;
        }
        const std::size_t index = pick_client();
        auto bytes = client(index).read(slot->handle);
        if (slot->handle.service() != client(index).service()) {
            expect_refused(bytes, ErrorKind::WrongService, "read through another device");
            return;
        }
        expect_ok_or(bytes, read_failures, "read");
        if (bytes && bytes->size() != slot->handle.size_in_use()) {
            violated("read returned " + std::to_string(bytes->size()) + " bytes of " +
                     slot->handle.describe());
        }
    }

    void copy() {
        Slot* source = pick_slot();
        Slot* target = pick_slot();
        if (source == nullptr) {
            return;
        }
        const std::size_t index = pick_client();
        Status copied = client(index).copy(source->handle, target->handle);
        if (target->handle.service() != client(index).service()) {
            expect_refused(copied, ErrorKind::WrongService, "copy into another device");
        } else if (source->handle.size_in_use() != target->handle.size_in_use()) {
            expect_refused(copied, ErrorKind::InvalidArgument, "copy between sizes");
        } else if (source->handle.overlap(target->handle) != Overlap::Disjoint) {
            expect_refused(copied, ErrorKind::InvalidArgument, "copy onto its own bytes");
        } else if (std::optional<ErrorKind> refusal = binding_refusal(index, *source)) {
            expect_refused(copied, *refusal, "copy from unshared memory of another device");
        } else if (lost(index)) {
            expect_refused(copied, ErrorKind::DeviceLost, "copy on a lost device");
        } else if (foreign_peer(index, *source)) {
            expect_refused(copied, ErrorKind::PeerUnreachable, "copy from another runtime");
        } else if (!copied) {
            violated("copy refused: " + copied.error().report());
        }
    }

    LaunchConfig hostile_config() {
        if (data_.ConsumeBool()) {
            const auto threads = data_.ConsumeIntegralInRange<std::uint64_t>(0, 4096);
            const auto block = data_.ConsumeIntegralInRange<std::uint32_t>(0, 2048);
            return LaunchConfig::linear(threads, block);
        }
        // Hostile dimensions, kept to a few thousand threads in all so an input stays fast.
        auto dim = [this] {
            return Dim3{data_.ConsumeIntegralInRange<std::uint32_t>(0, 16),
                        data_.ConsumeIntegralInRange<std::uint32_t>(0, 4),
                        data_.ConsumeIntegralInRange<std::uint32_t>(0, 2)};
        };
        LaunchConfig config{dim(), dim()};
        if (data_.ConsumeIntegralInRange<int>(0, 7) == 0) {
            config.block.x = data_.ConsumeIntegral<std::uint32_t>();  // Refused: over the limit.
            config.grid = Dim3{1, 1, 1};
            config.block.y = config.block.z = 1;
            if (config.block.x <= max_block_threads) {
                config.block.x += static_cast<std::uint32_t>(max_block_threads);
            }
        } else if (data_.ConsumeIntegralInRange<int>(0, 7) == 0) {
            // Refused: a grid past a GPU's limit in one dimension, or a block count that does
            // not fit a grid.
            if (data_.ConsumeBool()) {
                config.grid.y =
                    max_grid_dims.y + 1 + data_.ConsumeIntegralInRange<std::uint32_t>(0, 1000);
            } else {
                config = LaunchConfig::linear(data_.ConsumeIntegral<std::uint64_t>() | (1ULL << 60),
                                              data_.ConsumeIntegralInRange<std::uint32_t>(1, 1024));
            }
        }
        return config;
    }

    void launch() {
        static constexpr std::string_view unregistered = "no such kernel";
        static constexpr std::string_view kernels[] = {"fill",     "copy", "fail",
                                                       "checksum", "add",  unregistered};
        const std::size_t index = pick_client();
        const std::string kernel{kernels[data_.ConsumeIntegralInRange<std::size_t>(0, 5)]};
        const LaunchConfig config = hostile_config();
        std::vector<LaunchArgument> arguments;
        std::optional<ErrorKind> refusal;
        bool foreign = false;
        const std::size_t count = data_.ConsumeIntegralInRange<std::size_t>(0, 3);
        for (std::size_t n = 0; n < count && !slots_.empty(); ++n) {
            Slot* slot = pick_slot();
            const auto access = static_cast<AccessMode>(data_.ConsumeIntegralInRange<int>(0, 2));
            arguments.push_back(LaunchArgument{slot->handle, access, std::nullopt});
            if (!refusal) {
                refusal = binding_refusal(index, *slot);
            }
            foreign = foreign || foreign_peer(index, *slot);
        }
        const StreamId stream = pick_stream(index);
        Status launched =
            client(index).launch(kernel, config, std::move(arguments),
                                 KernelArgs().u64(data_.ConsumeIntegral<std::uint8_t>()), stream);
        if (refusal) {
            expect_refused(launched, *refusal, "launch with unshared memory of another device");
        } else if (lost(index)) {
            expect_refused(launched, ErrorKind::DeviceLost, "launch on a lost device");
        } else if (!valid_stream(index, stream)) {  // The Server's check, before the device's.
            expect_refused(launched, ErrorKind::InvalidArgument, "launch on no stream");
        } else if (foreign) {
            expect_refused(launched, ErrorKind::PeerUnreachable,
                           "launch with another runtime's memory");
        } else if (kernel == unregistered) {  // Refused at the call, whatever it declares.
            expect_refused(launched, ErrorKind::LaunchRefused, "launch of an unregistered name");
        } else if (!launched) {
            violated("launch refused at once: " + launched.error().report());
        }
    }

    /// A window of up to two launches on one stream; the graph is kept for `replay`.
    void capture() {
        const std::size_t index = pick_client();
        const StreamId stream = pick_stream(index);
        Status begun = client(index).begin_capture(stream);
        if (lost(index)) {  // A lost device refuses first, whatever else is wrong.
            expect_refused(begun, ErrorKind::DeviceLost, "begin_capture on a lost device");
            return;
        }
        if (!valid_stream(index, stream)) {
            expect_refused(begun, ErrorKind::InvalidArgument, "begin_capture on no stream");
            return;
        }
        if (!begun) {
            expect_refused(begun, ErrorKind::InvalidArgument, "begin_capture twice");
        }
        const std::size_t launches = data_.ConsumeIntegralInRange<std::size_t>(0, 2);
        for (std::size_t n = 0; n < launches && !slots_.empty(); ++n) {
            Slot* slot = pick_slot();
            (void)client(index).launch(
                "fill", hostile_config(),
                {LaunchArgument{slot->handle, AccessMode::Write, std::nullopt}},
                KernelArgs().u64(7), stream);
        }
        Result<CaptureGraph> graph = client(index).end_capture(stream);
        if (graph) {
            if (graphs_.size() < max_graphs) {
                graphs_.push_back(GraphSlot{*graph, index});
            }
        } else {
            expect_ok_or(graph,
                         {ErrorKind::LaunchRefused, ErrorKind::DeviceLost, ErrorKind::TornDown,
                          ErrorKind::InvalidArgument},
                         "end_capture");
        }
    }

    /// Replays a kept graph through any client: one of another device or runtime is refused with
    /// `WrongService`, so a graph never reaches a device that did not record it.
    void replay() {
        if (graphs_.empty()) {
            return;
        }
        const GraphSlot& slot =
            graphs_[data_.ConsumeIntegralInRange<std::size_t>(0, graphs_.size() - 1)];
        const std::size_t index = pick_client();
        const StreamId stream = pick_stream(index);
        Status replayed = client(index).replay(slot.graph, stream);
        if (slot.graph.device() != client(index).service()) {
            expect_refused(replayed, ErrorKind::WrongService, "replay of another device's graph");
        } else if (lost(index)) {
            expect_refused(replayed, ErrorKind::DeviceLost, "replay on a lost device");
        } else if (!valid_stream(index, stream)) {
            expect_refused(replayed, ErrorKind::InvalidArgument, "replay on no stream");
        } else if (!replayed) {
            violated("replay refused at once: " + replayed.error().report());
        }
    }

    void share() {
        Slot* slot = pick_slot();
        if (slot == nullptr) {
            return;
        }
        const std::size_t index = pick_client();
        Result<Handle> shared = client(index).share_with_peers(slot->handle);
        if (slot->handle.service() != client(index).service()) {
            expect_refused(shared, ErrorKind::WrongService, "share through another device");
        } else if (slot->handle.peer()) {
            expect_ok_or(shared, {}, "share again");
        } else if (lost(index)) {
            expect_refused(shared, ErrorKind::DeviceLost, "share on a lost device");
        } else if (!shared) {
            violated("share refused: " + shared.error().report());
        }
        if (shared) {
            if (!shared->peer() || shared->range() != slot->handle.range()) {
                violated("share gave " + shared->describe());
            }
            slot->handle = *shared;
        }
    }

    void record_event() {
        const std::size_t index = pick_client();
        const StreamId stream = pick_stream(index);
        Result<Event> event = client(index).record_event(stream);
        if (lost(index)) {
            expect_refused(event, ErrorKind::DeviceLost, "record on a lost device");
        } else if (!valid_stream(index, stream)) {
            expect_refused(event, ErrorKind::InvalidArgument, "record on no stream");
        } else if (!event) {
            violated("record refused: " + event.error().report());
        }
        if (event && events_.size() < max_events) {
            events_.push_back(EventSlot{*event, index});
        }
    }

    void wait_event() {
        if (events_.empty()) {
            return;
        }
        const EventSlot& event =
            events_[data_.ConsumeIntegralInRange<std::size_t>(0, events_.size() - 1)];
        const std::size_t index = pick_client();
        const StreamId stream = pick_stream(index);
        Status waited = client(index).wait_event(stream, event.event);
        // The Server refuses its own loss and stream first; the device then checks the event.
        if (lost(index)) {
            expect_refused(waited, ErrorKind::DeviceLost, "wait on a lost device");
        } else if (!valid_stream(index, stream)) {
            expect_refused(waited, ErrorKind::InvalidArgument, "wait on no stream");
        } else if (!same_runtime(index, event.client)) {
            expect_refused(waited, ErrorKind::InvalidArgument, "wait on another runtime's event");
        } else if (lost(event.client)) {
            expect_refused(waited, ErrorKind::DeviceLost, "wait on a lost device's event");
        } else if (!waited) {
            violated("wait refused: " + waited.error().report());
        }
    }

    void inject() {
        const std::size_t index = pick_client();
        // A lost device refuses every call first, a fault it could not take too (D1).
        const auto expect_refused_here = [&](const Status& injected, ErrorKind kind,
                                             const char* call) {
            expect_refused(injected, lost(index) ? ErrorKind::DeviceLost : kind, call);
        };
        switch (data_.ConsumeIntegralInRange<int>(0, 3)) {
            case 0: {
                static const double probabilities[] = {0.0,
                                                       0.5,
                                                       1.0,
                                                       -0.5,
                                                       1.5,
                                                       std::nan(""),
                                                       std::numeric_limits<double>::infinity()};
                const double probability =
                    probabilities[data_.ConsumeIntegralInRange<std::size_t>(0, 6)];
                Status injected = client(index).inject(
                    KernelFault{data_.ConsumeBool() ? "fill" : "copy",
                                data_.ConsumeIntegralInRange<std::uint64_t>(0, 3), probability,
                                data_.ConsumeIntegral<std::uint32_t>()});
                if (!(probability >= 0.0 && probability <= 1.0)) {
                    expect_refused_here(injected, ErrorKind::InvalidArgument,
                                        "a fault probability outside [0, 1]");
                } else {
                    expect_ok_or(injected, {ErrorKind::DeviceLost}, "inject a kernel fault");
                }
                return;
            }
            case 1: {
                const std::uint64_t nth = data_.ConsumeIntegralInRange<std::uint64_t>(0, 3);
                Status injected = client(index).inject(AllocationFault{nth});
                if (nth == 0) {
                    expect_refused_here(injected, ErrorKind::InvalidArgument,
                                        "an allocation fault at 0");
                } else {
                    expect_ok_or(injected, {ErrorKind::DeviceLost}, "inject an allocation fault");
                }
                return;
            }
            case 2: {
                // Device loss is rare: most inputs should keep both devices working.
                if (data_.ConsumeIntegralInRange<int>(0, 3) == 0) {
                    Status injected = client(index).inject(
                        DeviceLossFault{data_.ConsumeIntegralInRange<std::uint64_t>(0, 8)});
                    expect_ok_or(injected, {ErrorKind::DeviceLost}, "inject a device loss");
                }
                return;
            }
            default: {
                const StreamId stream = pick_stream(index);
                const std::uint64_t steps = hostile_u64(data_, 64);
                Status injected = client(index).inject(StreamDelay{stream, steps});
                if (!valid_stream(index, stream) || steps > StreamDelay::max_steps) {
                    expect_refused_here(injected, ErrorKind::InvalidArgument,
                                        "a delay on no stream or too long");
                } else {
                    // Refused too when the delays of the stream add up past the bound.
                    expect_ok_or(injected, {ErrorKind::InvalidArgument, ErrorKind::DeviceLost},
                                 "inject a delay");
                }
                return;
            }
        }
    }

    void sync() {
        const std::size_t index = pick_client();
        if (data_.ConsumeBool()) {
            expect_ok_or(client(index).sync(), {ErrorKind::DeviceLost, ErrorKind::TornDown},
                         "sync");
            return;
        }
        std::vector<Handle> handles;
        bool wrong = false;
        for (std::size_t n = data_.ConsumeIntegralInRange<std::size_t>(0, 3);
             n > 0 && !slots_.empty(); --n) {
            handles.push_back(pick_slot()->handle);
            wrong = wrong || handles.back().service() != client(index).service();
        }
        Status synced = client(index).sync(handles);
        if (wrong) {
            expect_refused(synced, ErrorKind::WrongService, "sync on another device's handles");
        } else {
            expect_ok_or(synced, read_failures, "sync on handles");
        }
    }

    void drop_or_stream() {
        if (data_.ConsumeBool() && !slots_.empty()) {
            slots_.erase(slots_.begin() +
                         static_cast<std::ptrdiff_t>(
                             data_.ConsumeIntegralInRange<std::size_t>(0, slots_.size() - 1)));
            return;
        }
        const std::size_t index = pick_client();
        Result<StreamId> stream = client(index).create_stream();
        if (lost(index)) {
            expect_refused(stream, ErrorKind::DeviceLost, "create a stream on a lost device");
        } else {
            expect_ok_or(stream, {ErrorKind::InvalidArgument}, "create a stream");
        }
        if (stream) {
            streams_[index].push_back(*stream);
        }
    }

    void grant() {
        const std::size_t index = pick_client();
        const std::size_t accessor = pick_client();
        ServiceId service = client(accessor).service();
        if (data_.ConsumeIntegralInRange<int>(0, 3) == 0) {
            service.device_index = data_.ConsumeIntegral<std::uint32_t>();
        }
        Status granted = client(index).grant_peer_access(service);
        const bool reachable =
            same_runtime(index, accessor) && service.device_index < (index < 2 ? 2u : 1u);
        if (lost(index)) {  // A lost device refuses first (D1).
            expect_refused(granted, ErrorKind::DeviceLost, "grant on a lost device");
        } else if (!reachable) {
            expect_refused(granted, ErrorKind::PeerUnreachable,
                           "grant to no device of this runtime");
        } else {
            expect_ok_or(granted, {ErrorKind::DeviceLost}, "grant");
        }
    }

    /// A strided view, often malformed: shape, strides and element size.
    struct View {
        std::vector<std::uint64_t> shape;
        std::vector<std::uint64_t> strides;
        std::uint64_t elem = 0;

        [[nodiscard]] bool malformed() const {
            return shape.empty() || shape.size() != strides.size() || elem == 0;
        }
        /// The bytes the view yields, or none past `max_touched_bytes`.
        [[nodiscard]] std::optional<std::uint64_t> yield_bytes() const {
            if (std::find(shape.begin(), shape.end(), 0) != shape.end()) {
                return 0;  // No element, however large the other extents.
            }
            std::uint64_t count = elem;
            for (std::uint64_t extent : shape) {
                if (__builtin_mul_overflow(count, extent, &count)) {
                    return std::nullopt;
                }
            }
            return count <= max_touched_bytes ? std::optional(count) : std::nullopt;
        }
    };

    View hostile_view() {
        View view;
        const std::size_t rank = data_.ConsumeIntegralInRange<std::size_t>(0, 5);
        for (std::size_t dim = 0; dim < rank; ++dim) {
            view.shape.push_back(hostile_u64(data_, 8));
            view.strides.push_back(hostile_u64(data_, 4));
        }
        if (data_.ConsumeIntegralInRange<int>(0, 7) == 0 && !view.strides.empty()) {
            view.strides.pop_back();
        }
        view.elem = hostile_u64(data_, 4);
        return view;
    }

    void write_strided() {
        Slot* slot = pick_slot();
        if (slot == nullptr) {
            return;
        }
        const std::size_t index = pick_client();
        const View view = hostile_view();
        std::uint64_t size = data_.ConsumeIntegralInRange<std::uint64_t>(0, 64);
        const std::optional<std::uint64_t> yields = view.yield_bytes();
        if (data_.ConsumeBool() && yields) {
            size = *yields;
        }
        const std::vector<std::byte> bytes(size, std::byte{0x3c});
        Status written =
            client(index).write_strided(slot->handle, view.shape, view.strides, view.elem, bytes);
        if (slot->handle.service() != client(index).service()) {
            expect_refused(written, ErrorKind::WrongService, "strided write through another device");
        } else if (view.malformed() || !yields || size != *yields) {
            expect_refused(written, ErrorKind::InvalidArgument, "a malformed strided write");
        } else {
            // A view past the handle's bytes, or whose elements share bytes, is InvalidArgument.
            expect_ok_or(written, {ErrorKind::InvalidArgument, ErrorKind::DeviceLost},
                         "strided write");
        }
    }

    void read_strided() {
        Slot* slot = pick_slot();
        if (slot == nullptr) {
            return;
        }
        const std::size_t index = pick_client();
        const View view = hostile_view();
        const std::vector<std::uint64_t>& shape = view.shape;
        const std::uint64_t elem = view.elem;
        auto bytes = client(index).read_strided(slot->handle, view.shape, view.strides, elem);
        if (slot->handle.service() != client(index).service()) {
            expect_refused(bytes, ErrorKind::WrongService, "strided read through another device");
            return;
        }
        if (view.malformed()) {
            expect_refused(bytes, ErrorKind::InvalidArgument, "a malformed strided view");
            return;
        }
        std::vector<ErrorKind> allowed(read_failures);
        allowed.push_back(ErrorKind::InvalidArgument);  // A view past the handle's bytes.
        if (!bytes &&
            std::find(allowed.begin(), allowed.end(), bytes.error().kind()) == allowed.end()) {
            violated("strided read: unexpected " + bytes.error().report());
        }
        if (bytes) {
            std::uint64_t count = elem;
            for (std::uint64_t extent : shape) {
                count *= extent;
            }
            if (bytes->size() != count) {
                violated("strided read returned " + std::to_string(bytes->size()) + " bytes");
            }
        }
    }

    void read_async() {
        Slot* slot = pick_slot();
        if (slot == nullptr) {
            return;
        }
        const std::size_t index = pick_client();
        const StreamId stream = pick_stream(index);
        const std::uint64_t in_use = slot->handle.size_in_use();
        std::uint64_t size = data_.ConsumeIntegralInRange<std::uint64_t>(0, 256);
        if (data_.ConsumeBool() && in_use <= max_touched_bytes) {
            size = in_use;
        }
        auto into = std::make_unique<std::vector<std::byte>>(size);
        Result<PendingRead> read = client(index).read_async(slot->handle, *into, stream);
        if (slot->handle.service() != client(index).service()) {
            expect_refused(read, ErrorKind::WrongService, "async read through another device");
        } else if (lost(index)) {
            expect_refused(read, ErrorKind::DeviceLost, "async read on a lost device");
        } else if (!valid_stream(index, stream)) {
            expect_refused(read, ErrorKind::InvalidArgument, "async read on no stream");
        } else if (size != in_use) {
            expect_refused(read, ErrorKind::InvalidArgument, "async read into the wrong size");
        } else if (!read) {
            violated("async read refused: " + read.error().report());
        }
        if (read && reads_.size() < max_reads) {
            reads_.push_back(ReadSlot{*read, std::move(into), index});
        } else if (read) {
            expect_ok_or(client(index).wait(*read), read_failures, "wait for an async read");
        }
    }

    /// Waits for a read in flight through any client: one of another device is refused and
    /// leaves the read in flight; a failed one zeroes its buffer.
    void wait_read() {
        if (reads_.empty()) {
            return;  // a program cannot make a PendingRead no device issued: nothing to forge
        }
        const std::size_t at = data_.ConsumeIntegralInRange<std::size_t>(0, reads_.size() - 1);
        const std::size_t index = pick_client();
        Status waited = client(index).wait(reads_[at].read);
        if (index != reads_[at].client) {
            expect_refused(waited, ErrorKind::InvalidArgument, "wait for another device's read");
            return;
        }
        expect_ok_or(waited, read_failures, "wait for an async read");
        if (!waited) {
            for (std::byte byte : *reads_[at].into) {
                if (byte != std::byte{0}) {
                    violated("a failed async read left bytes in its buffer");
                }
            }
        }
        reads_.erase(reads_.begin() + static_cast<std::ptrdiff_t>(at));
    }

    /// The host waits for an event (of any client) or a stream.
    void host_wait() {
        const std::size_t index = pick_client();
        if (data_.ConsumeBool() || events_.empty()) {
            const StreamId stream = pick_stream(index);
            Status synced = client(index).sync_stream(stream);
            if (lost(index)) {
                expect_refused(synced, ErrorKind::DeviceLost, "sync a stream of a lost device");
            } else if (!valid_stream(index, stream)) {
                expect_refused(synced, ErrorKind::InvalidArgument, "sync no stream");
            } else {
                expect_ok_or(synced, {ErrorKind::DeviceLost, ErrorKind::TornDown}, "sync_stream");
            }
            return;
        }
        const EventSlot& event =
            events_[data_.ConsumeIntegralInRange<std::size_t>(0, events_.size() - 1)];
        Status waited;
        if (data_.ConsumeBool()) {
            waited = client(index).wait(event.event);
        } else if (Result<bool> done = client(index).event_complete(event.event); !done) {
            waited = done.error();
        }
        if (lost(index)) {
            expect_refused(waited, ErrorKind::DeviceLost, "host wait on a lost device");
        } else if (!same_runtime(index, event.client)) {
            expect_refused(waited, ErrorKind::InvalidArgument, "host wait on another runtime");
        } else {
            expect_ok_or(waited, {ErrorKind::DeviceLost, ErrorKind::TornDown}, "host wait");
        }
    }

    void destroy_stream() {
        const std::size_t index = pick_client();
        const StreamId stream = pick_stream(index);
        Status destroyed = client(index).destroy_stream(stream);
        if (lost(index)) {
            expect_refused(destroyed, ErrorKind::DeviceLost, "destroy on a lost device");
        } else if (!valid_stream(index, stream) || stream == client(index).default_stream()) {
            expect_refused(destroyed, ErrorKind::InvalidArgument, "destroy no stream or default");
        } else {
            expect_ok_or(destroyed, {ErrorKind::DeviceLost, ErrorKind::TornDown}, "destroy");
        }
        if (destroyed) {
            auto& streams = streams_[index];
            streams.erase(std::find(streams.begin(), streams.end(), stream));
        }
    }

    /// Adopts a host block, in part or whole, or hostile coordinates, through any client.
    void adopt() {
        const std::size_t index = pick_client();
        HostBlock& block = blocks_[data_.ConsumeIntegralInRange<std::size_t>(0, host_blocks - 1)];
        // Every range taken covers the block's byte 128, so two adoptions of a block overlap.
        const std::uint64_t offset = data_.ConsumeIntegralInRange<std::uint64_t>(0, 128);
        std::uint64_t size =
            data_.ConsumeIntegralInRange<std::uint64_t>(129 - offset, host_block_bytes - offset);
        void* pointer = block.bytes.get() + offset;
        bool bad = false;
        switch (data_.ConsumeIntegralInRange<int>(0, 5)) {
            case 0:
                pointer = nullptr;
                bad = true;
                break;
            case 1:
                size = 0;
                bad = true;
                break;
            case 2:
                size = std::numeric_limits<std::uint64_t>::max() - offset;  // Wraps, or too big.
                bad = true;
                break;
            default:
                break;
        }
        Result<Handle> adopted =
            client(index).adopt({pointer, size, [flag = block.adopted] { *flag = false; }});
        if (lost(index)) {
            expect_refused(adopted, ErrorKind::DeviceLost, "adopt on a lost device");
        } else if (bad || *block.adopted) {
            expect_refused(adopted, ErrorKind::InvalidArgument, "adopt of bad or held memory");
        } else if (!adopted) {
            violated("adopt refused: " + adopted.error().report());
        }
        if (adopted) {
            *block.adopted = true;
            keep(std::move(*adopted), index);
        }
    }

    /// External work over up to two handles, whose host callable succeeds, fails or throws.
    void external() {
        const std::size_t index = pick_client();
        std::vector<LaunchArgument> arguments;
        std::optional<ErrorKind> refusal;
        bool foreign = false;
        for (std::size_t n = data_.ConsumeIntegralInRange<std::size_t>(0, 2);
             n > 0 && !slots_.empty(); --n) {
            Slot* slot = pick_slot();
            arguments.push_back(LaunchArgument{
                slot->handle, static_cast<AccessMode>(data_.ConsumeIntegralInRange<int>(0, 2)),
                std::nullopt});
            refusal = refusal ? refusal : binding_refusal(index, *slot);
            foreign = foreign || foreign_peer(index, *slot);
        }
        const int behaviour = data_.ConsumeIntegralInRange<int>(0, 3);
        ExternalCallables run;
        if (behaviour != 3) {  // None: refused on the backend (C10), once it settles.
            run.host = [behaviour](HostKernelContext&) -> Status {
                if (behaviour == 1) {
                    return Error::invalid_argument("external work that fails");
                }
                if (behaviour == 2) {
                    throw std::runtime_error("external work that throws");
                }
                return {};
            };
        }
        const StreamId stream = pick_stream(index);
        Status enqueued =
            client(index).enqueue(ExternalWork{"fuzz_external", std::move(arguments), run}, stream);
        if (refusal) {
            expect_refused(enqueued, *refusal, "external work with another device's memory");
        } else if (lost(index)) {
            expect_refused(enqueued, ErrorKind::DeviceLost, "external work on a lost device");
        } else if (!valid_stream(index, stream)) {
            expect_refused(enqueued, ErrorKind::InvalidArgument, "external work on no stream");
        } else if (foreign) {
            expect_refused(enqueued, ErrorKind::PeerUnreachable, "external work, other runtime");
        } else if (!enqueued) {
            violated("external work refused at once: " + enqueued.error().report());
        }
    }

    FuzzedDataProvider& data_;
    /// Before the runtimes: adopted blocks must outlive every device that may hold them.
    std::array<HostBlock, host_blocks> blocks_;
    std::shared_ptr<Runtime> main_;
    std::shared_ptr<Runtime> foreign_;
    std::array<bool, 3> lost_before_{};
    std::vector<Client> clients_;
    std::vector<std::vector<StreamId>> streams_;
    std::vector<Slot> slots_;
    std::vector<EventSlot> events_;
    std::vector<ReadSlot> reads_;
    struct GraphSlot {
        CaptureGraph graph;
        std::size_t client = 0;
    };
    static constexpr std::size_t max_graphs = 8;
    std::vector<GraphSlot> graphs_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
    FuzzedDataProvider data(bytes, size);
    Harness(data).run();
    return 0;
}
