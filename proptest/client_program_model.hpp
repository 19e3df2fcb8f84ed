#pragma once

// A model-based program over the client API of any backend: the commands, the byte model they
// are checked against, and the oracle they assert. Each backend's suite creates its runtime,
// runs `rc::state::check` with these commands, and checks that everything drains.
//
// Oracle: a read returns bytes iff every byte it returns was last written by work that succeeded;
// otherwise it fails naming why. The model keeps, per byte of every buffer, the code of the
// failure that claims it (0 when clean) and the value it holds (-1 when never written). A read
// must fail exactly when some byte is claimed, name exactly the root codes of those claims, and
// otherwise return the model's values. Work goes to several streams of each device and across
// devices, ordered with events after the work before it, so program order is the order of
// effect; copies go through kernels, the client's copy and external work, some inside a capture
// window that is replayed. Reads are synchronous, through a sync naming the handle, or
// asynchronous (`read_async`, waited for later, each deciding C6 at its own place in program
// order); buffers are allocated or adopted from another allocator, and each adopted one must be
// released to it exactly once.

#include "conformance/foreign.hpp"
#include "tandem/core/client.hpp"

#include <rapidcheck.h>
#include <rapidcheck/state.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tandem::model {

struct ModelBuffer {
    std::uint32_t device = 0;
    bool shared = false;
    std::vector<std::uint64_t> claim;  // Failure code per byte; 0 when clean.
    std::vector<int> value;            // Byte value; -1 when never written.
};

/// What a read of some bytes must report, decided at its place in program order: the root codes
/// of the failures claiming them (none: it succeeds), and the value of each (-1: never written).
struct ExpectedRead {
    std::uint32_t device = 0;
    std::set<std::uint64_t> codes;
    std::vector<int> values;
};

struct ClientModel {
    /// Streams each device uses: its default stream and two it creates.
    static constexpr std::uint32_t streams = 3;
    std::uint32_t devices = 2;
    std::vector<std::optional<ModelBuffer>> buffers;
    std::uint64_t next_code = 100;
    /// Per device, the code the next copy that runs there fails with (an injected fault).
    std::vector<std::uint64_t> pending_copy_fault = std::vector<std::uint64_t>(3, 0);
    /// Asynchronous reads enqueued and not waited for yet, oldest first.
    std::vector<ExpectedRead> reads;
};

/// An asynchronous read in flight, and the buffer it lands in.
struct InFlightRead {
    PendingRead pending;
    std::unique_ptr<std::vector<std::byte>> into;
};

/// The system under test: one client per device of any backend, and the program's handles.
struct ClientSut {
    std::vector<Client> clients;
    std::vector<std::optional<Handle>> handles;
    /// Per device, its streams (`ClientModel::streams` of them), and the one its last work used.
    std::vector<std::vector<StreamId>> streams;
    std::vector<std::uint32_t> last_stream;
    /// The asynchronous reads in flight, as `ClientModel::reads` lists them.
    std::vector<InFlightRead> reads;
    /// The runtime, for memory of another allocator on its backend.
    const Runtime* runtime = nullptr;
    /// Buffers adopted so far, and how many of them went back to their allocator (it outlives
    /// the runtime).
    int adopted = 0;
    std::atomic<int>* releases = nullptr;
    Client client(std::uint32_t device) const { return clients.at(device); }

    /// The clients of `runtime`'s first `devices` devices, each with its streams, and every pair
    /// granted peer access. Adopted buffers count their releases in `*releases`.
    static ClientSut of(Runtime& runtime, std::uint32_t devices, std::atomic<int>* releases) {
        ClientSut sut;
        sut.runtime = &runtime;
        sut.releases = releases;
        for (std::uint32_t device = 0; device < devices; ++device) {
            Client client = runtime.client(device);
            std::vector<StreamId> streams{client.default_stream()};
            while (streams.size() < ClientModel::streams) {
                Result<StreamId> created = client.create_stream();
                RC_ASSERT(created.ok());
                streams.push_back(*created);
            }
            sut.clients.push_back(client);
            sut.streams.push_back(std::move(streams));
            sut.last_stream.push_back(0);
        }
        for (Client& owner : sut.clients) {
            for (const Client& accessor : sut.clients) {
                RC_ASSERT(owner.grant_peer_access(accessor.service()).ok());
            }
        }
        return sut;
    }
};

using Command = rc::state::Command<ClientModel, ClientSut>;

inline std::vector<std::size_t> live_buffers(const ClientModel& model) {
    std::vector<std::size_t> live;
    for (std::size_t index = 0; index < model.buffers.size(); ++index) {
        if (model.buffers[index]) {
            live.push_back(index);
        }
    }
    return live;
}

struct Range {
    std::size_t buffer = 0;
    std::uint64_t begin = 0;
    std::uint64_t length = 0;
};

inline std::ostream& operator<<(std::ostream& out, const Range& range) {
    return out << "#" << range.buffer << "[" << range.begin << "+" << range.length << "]";
}

inline Range pick_range(const ClientModel& model) {
    const std::vector<std::size_t> live = live_buffers(model);
    RC_PRE(!live.empty());
    const std::size_t buffer = *rc::gen::elementOf(live);
    const std::uint64_t size = model.buffers[buffer]->claim.size();
    const std::uint64_t begin = *rc::gen::inRange<std::uint64_t>(0, size);
    const std::uint64_t length = *rc::gen::inRange<std::uint64_t>(1, size - begin + 1);
    return Range{buffer, begin, length};
}

inline bool valid(const ClientModel& model, const Range& range) {
    return range.buffer < model.buffers.size() && model.buffers[range.buffer] &&
           range.begin + range.length <= model.buffers[range.buffer]->claim.size();
}

inline Handle slice(const ClientSut& sut, const Range& range) {
    Result<Handle> sliced = sut.handles[range.buffer]->slice(range.begin, range.length);
    RC_ASSERT(sliced.ok());
    return *sliced;
}

/// Every root code an error names, walking nested reports down to their roots.
inline void root_codes(const Error& error, std::set<std::uint64_t>& codes) {
    if (const auto* several = error.details_as<SeveralDetails>()) {
        for (const Error& each : several->errors) {
            root_codes(each, codes);
        }
    } else if (const auto* unwritten = error.details_as<UnwrittenDetails>()) {
        root_codes(*unwritten->root, codes);
    } else if (const auto* failed = error.details_as<KernelFailedDetails>()) {
        codes.insert(failed->code);
    } else {
        codes.insert(0);  // A root the model never makes.
    }
}

/// What a read of `range` must report now.
inline ExpectedRead expected_read(const ClientModel& model, const Range& range) {
    const ModelBuffer& buffer = *model.buffers[range.buffer];
    ExpectedRead expected{buffer.device, {}, {}};
    for (std::uint64_t at = range.begin; at < range.begin + range.length; ++at) {
        if (buffer.claim[at] != 0) {
            expected.codes.insert(buffer.claim[at]);
        }
        expected.values.push_back(buffer.value[at]);
    }
    return expected;
}

/// Checks the outcome of a read (or a sync naming its handle: no bytes) against `expected`: it
/// fails exactly when a byte is claimed, naming exactly the claims' root codes, and otherwise
/// returns every written byte's value.
inline void check_read(const ExpectedRead& expected, const Status& outcome,
                       std::span<const std::byte> bytes) {
    if (outcome.ok() != expected.codes.empty()) {
        std::string codes;
        for (std::uint64_t code : expected.codes) {
            codes += " " + std::to_string(code);
        }
        RC_FAIL(outcome.ok()
                    ? "the read succeeded, but the model claims its bytes with codes" + codes
                    : "the model has no claim, but the read failed: " + outcome.error().report());
    }
    if (!outcome.ok()) {
        std::set<std::uint64_t> named;
        root_codes(outcome.error(), named);
        RC_ASSERT(named == expected.codes);
        return;
    }
    for (std::size_t at = 0; at < bytes.size(); ++at) {
        if (expected.values[at] >= 0) {
            RC_ASSERT(static_cast<int>(bytes[at]) == expected.values[at]);
        }
    }
}

/// Orders the last work of device `from` before what device `to` enqueues next on its stream
/// `stream` (an index of `ClientModel::streams`), and makes that stream `to`'s last.
inline StreamId order(ClientSut& sut, std::uint32_t from, std::uint32_t to, std::uint32_t stream) {
    const StreamId source_stream = sut.streams[from][sut.last_stream[from]];
    const StreamId target_stream = sut.streams[to][stream];
    if (from != to || source_stream != target_stream) {
        Result<Event> event = sut.client(from).record_event(source_stream);
        RC_ASSERT(event.ok());
        RC_ASSERT(sut.client(to).wait_event(target_stream, *event).ok());
    }
    sut.last_stream[to] = stream;
    return target_stream;
}

/// The device that runs a kernel writing `range`: its owner, or the peer `pick` when the buffer
/// is shared (the kernel then binds the owner's shared memory, P4).
inline std::uint32_t runner_of(const ClientModel& model, const Range& range, std::uint32_t pick) {
    const ModelBuffer& buffer = *model.buffers[range.buffer];
    return buffer.shared && pick < model.devices ? pick : buffer.device;
}

/// Enqueues `launch(client, stream)` on `runner`'s stream `stream`, ordered after the runner's
/// and the owner's last work, and orders what the owner enqueues next after it.
template <typename Launch>
void run_on(ClientSut& sut, std::uint32_t owner, std::uint32_t runner, std::uint32_t stream,
            Launch&& launch) {
    StreamId on = order(sut, runner, runner, stream);
    if (runner != owner) {
        on = order(sut, owner, runner, stream);
    }
    launch(sut.client(runner), on);
    if (runner != owner) {
        order(sut, runner, owner, sut.last_stream[owner]);
    }
}

inline std::uint32_t pick_stream() {
    return *rc::gen::inRange<std::uint32_t>(0, ClientModel::streams);
}

/// The index of `stream` among `device`'s streams; the default stream's (0) once it was
/// destroyed, as calls that name no stream then use it.
inline std::uint32_t stream_index(const ClientSut& sut, std::uint32_t device, StreamId stream) {
    const std::vector<StreamId>& streams = sut.streams[device];
    const auto found = std::find(streams.begin(), streams.end(), stream);
    return found == streams.end() ? 0 : static_cast<std::uint32_t>(found - streams.begin());
}

/// Destroys one of a device's created streams, after its work, and creates another in its place.
/// Nothing the model tracks changes: the handles allocated on it stay usable (their calls that
/// name no stream then use the default one).
struct ReplaceStream : Command {
    std::uint32_t device;
    std::uint32_t stream;
    explicit ReplaceStream(const ClientModel& model)
        : device(*rc::gen::inRange<std::uint32_t>(0, model.devices)),
          stream(*rc::gen::inRange<std::uint32_t>(1, ClientModel::streams)) {}
    void checkPreconditions(const ClientModel& model) const override {
        RC_PRE(device < model.devices);
    }
    void apply(ClientModel&) const override {}
    void run(const ClientModel&, ClientSut& sut) const override {
        RC_ASSERT(sut.client(device).destroy_stream(sut.streams[device][stream]).ok());
        Result<StreamId> created = sut.client(device).create_stream();
        RC_ASSERT(created.ok());
        sut.streams[device][stream] = *created;
    }
    void show(std::ostream& out) const override {
        out << "replace stream " << stream << " of device " << device;
    }
};

struct Allocate : Command {
    std::uint32_t device;
    std::uint64_t size;
    /// Memory of another allocator, adopted (`Client::adopt`), instead of tandem's own.
    bool adopt;
    /// The stream it is allocated on, which host writes to it then use (`ReplaceStream` may
    /// destroy it: the default stream takes over).
    std::uint32_t stream;
    explicit Allocate(const ClientModel& model)
        : device(*rc::gen::inRange<std::uint32_t>(0, model.devices)),
          size(*rc::gen::inRange<std::uint64_t>(1, 48)),
          adopt(*rc::gen::inRange(0, 4) == 0),
          stream(*rc::gen::inRange(0, 3) == 0 ? pick_stream() : 0) {}
    void checkPreconditions(const ClientModel& model) const override {
        RC_PRE(bool(device < model.devices && model.buffers.size() < 24));
    }
    void apply(ClientModel& model) const override {
        model.buffers.push_back(ModelBuffer{device, false, std::vector<std::uint64_t>(size, 0),
                                            std::vector<int>(size, -1)});
    }
    void run(const ClientModel&, ClientSut& sut) const override {
        if (!adopt) {
            Result<Handle> handle = sut.client(device).allocate(size, sut.streams[device][stream]);
            RC_ASSERT(handle.ok());
            sut.handles.push_back(*handle);
            return;
        }
        conformance::Foreign memory =
            conformance::foreign_memory(*sut.runtime, size, sut.releases);
        Result<Handle> handle = sut.client(device).adopt({memory.pointer, size, memory.release});
        RC_ASSERT(handle.ok());
        ++sut.adopted;
        sut.handles.push_back(*handle);
    }
    void show(std::ostream& out) const override {
        out << (adopt ? "adopt " : "allocate ") << size << " bytes on device " << device;
        if (!adopt && stream != 0) {
            out << ", stream " << stream;
        }
    }
};

struct Write : Command {
    Range range;
    std::uint8_t value;
    bool through_kernel;
    std::uint32_t stream;
    /// A peer that runs the fill kernel when the buffer is shared.
    std::uint32_t peer;
    explicit Write(const ClientModel& model)
        : range(pick_range(model)),
          value(*rc::gen::arbitrary<std::uint8_t>()),
          through_kernel(*rc::gen::arbitrary<bool>()),
          stream(pick_stream()),
          peer(*rc::gen::inRange<std::uint32_t>(0, model.devices)) {}
    void checkPreconditions(const ClientModel& model) const override {
        RC_PRE(valid(model, range));
    }
    void apply(ClientModel& model) const override {
        ModelBuffer& buffer = *model.buffers[range.buffer];
        for (std::uint64_t at = range.begin; at < range.begin + range.length; ++at) {
            buffer.claim[at] = 0;
            buffer.value[at] = value;
        }
    }
    void run(const ClientModel& model, ClientSut& sut) const override {
        const std::uint32_t device = model.buffers[range.buffer]->device;
        Handle target = slice(sut, range);
        if (!through_kernel) {
            // A host write goes to its handle's stream: the one it was allocated on while that one
            // lives, the default one after.
            order(sut, device, device, stream_index(sut, device, target.stream()));
            RC_ASSERT(sut.client(device)
                          .write(target, std::vector<std::byte>(range.length, std::byte{value}))
                          .ok());
            return;
        }
        run_on(sut, device, runner_of(model, range, peer), stream, [&](Client client, StreamId on) {
            RC_ASSERT(client
                          .launch("fill", LaunchConfig::linear(range.length, 16),
                                  {LaunchArgument{target, AccessMode::Write, std::nullopt}},
                                  KernelArgs().u64(value), on)
                          .ok());
        });
    }
    void show(std::ostream& out) const override {
        out << (through_kernel ? "fill " : "write ") << range << " with " << int(value)
            << " on stream " << stream;
        if (through_kernel) {
            out << " (run by device " << peer << " if shared)";
        }
    }
};

struct Fail : Command {
    Range range;
    std::uint32_t stream;
    /// A peer that runs the failing kernel when the buffer is shared (P4).
    std::uint32_t peer;
    explicit Fail(const ClientModel& model)
        : range(pick_range(model)),
          stream(pick_stream()),
          peer(*rc::gen::inRange<std::uint32_t>(0, model.devices)) {}
    void checkPreconditions(const ClientModel& model) const override {
        RC_PRE(valid(model, range));
    }
    void apply(ClientModel& model) const override {
        ModelBuffer& buffer = *model.buffers[range.buffer];
        const std::uint64_t code = model.next_code++;
        for (std::uint64_t at = range.begin; at < range.begin + range.length; ++at) {
            buffer.claim[at] = code;
        }
    }
    void run(const ClientModel& model, ClientSut& sut) const override {
        const std::uint32_t device = model.buffers[range.buffer]->device;
        Handle target = slice(sut, range);
        run_on(sut, device, runner_of(model, range, peer), stream, [&](Client client, StreamId on) {
            RC_ASSERT(client
                          .launch("fail", LaunchConfig::linear(1),
                                  {LaunchArgument{target, AccessMode::Write, std::nullopt}},
                                  KernelArgs().u64(model.next_code), on)
                          .ok());
        });
    }
    void show(std::ostream& out) const override {
        out << "kernel failing over " << range << " on stream " << stream
            << " (run by device " << peer << " if shared)";
    }
};

struct InjectCopyFault : Command {
    std::uint32_t device;
    explicit InjectCopyFault(const ClientModel& model)
        : device(*rc::gen::inRange<std::uint32_t>(0, model.devices)) {}
    void checkPreconditions(const ClientModel& model) const override {
        RC_PRE(bool(device < model.devices && model.pending_copy_fault[device] == 0));
    }
    void apply(ClientModel& model) const override {
        model.pending_copy_fault[device] = model.next_code++;
    }
    void run(const ClientModel& model, ClientSut& sut) const override {
        RC_ASSERT(
            sut.client(device)
                .inject(KernelFault{"copy", 1, 1.0, static_cast<std::uint32_t>(model.next_code)})
                .ok());
    }
    void show(std::ostream& out) const override {
        out << "the next copy on device " << device << " fails";
    }
};

struct Share : Command {
    std::size_t buffer;
    explicit Share(const ClientModel& model) : buffer(pick_range(model).buffer) {}
    void checkPreconditions(const ClientModel& model) const override {
        RC_PRE(bool(buffer < model.buffers.size() && model.buffers[buffer] &&
                    !model.buffers[buffer]->shared));
    }
    void apply(ClientModel& model) const override { model.buffers[buffer]->shared = true; }
    void run(const ClientModel& model, ClientSut& sut) const override {
        Result<Handle> shared =
            sut.client(model.buffers[buffer]->device).share_with_peers(*sut.handles[buffer]);
        RC_ASSERT(shared.ok());
        sut.handles[buffer] = *shared;
    }
    void show(std::ostream& out) const override { out << "share #" << buffer; }
};

/// A copy on the target's device: a copy kernel, the client's copy, external work, or a copy
/// kernel or external work recorded in a capture window and replayed once. A source on another
/// device must be shared (a peer read).
struct Copy : Command {
    enum class Way : std::uint8_t { Kernel, Client, Captured, External, CapturedExternal };
    Range source;
    Range target;
    std::uint32_t stream;
    Way way;
    /// How many times an external copy is enqueued in a row (a repeat may share the record of
    /// the unit before it on CUDA); the copy is the same each time, so its outcome is too.
    std::uint32_t times;
    explicit Copy(const ClientModel& model)
        : source(pick_range(model)),
          target(pick_range(model)),
          stream(pick_stream()),
          way(*rc::gen::element(Way::Kernel, Way::Client, Way::Captured, Way::External,
                                Way::CapturedExternal)),
          times(way == Way::External ? *rc::gen::inRange(1u, 4u) : 1u) {}
    void checkPreconditions(const ClientModel& model) const override {
        RC_PRE(
            bool(valid(model, source) && valid(model, target) && source.length == target.length));
        RC_PRE(source.buffer != target.buffer);
        const ModelBuffer& from = *model.buffers[source.buffer];
        RC_PRE(bool(from.device == model.buffers[target.buffer]->device || from.shared));
    }
    /// The code the copy's target ends up claimed with; 0 when it lands.
    std::uint64_t outcome(ClientModel& model) const {
        const ModelBuffer& from = *model.buffers[source.buffer];
        const std::uint32_t device = model.buffers[target.buffer]->device;
        // An injected fault takes the next copy kernel enqueued on the device (the client's copy
        // is not a launch, whatever a backend runs it with, and external work has a name of its
        // own); a claimed input still skips that copy first (C9), with the input's failure.
        const bool kernel = way == Way::Kernel || way == Way::Captured;
        const std::uint64_t injected =
            kernel ? std::exchange(model.pending_copy_fault[device], 0) : 0;
        for (std::uint64_t at = 0; at < source.length; ++at) {
            if (from.claim[source.begin + at] != 0) {
                return from.claim[source.begin + at];
            }
        }
        return injected;
    }
    void apply(ClientModel& model) const override {
        const ModelBuffer from = *model.buffers[source.buffer];
        const std::uint64_t claimed = outcome(model);
        ModelBuffer& to = *model.buffers[target.buffer];
        for (std::uint64_t at = 0; at < target.length; ++at) {
            to.claim[target.begin + at] = claimed;
            if (claimed == 0) {
                to.value[target.begin + at] = from.value[source.begin + at];
            }
        }
    }
    void run(const ClientModel& model, ClientSut& sut) const override {
        ClientModel scratch = model;
        const bool lands = outcome(scratch) == 0;
        const std::uint32_t from = model.buffers[source.buffer]->device;
        const std::uint32_t to = model.buffers[target.buffer]->device;
        // After the target device's last work, and the source device's (a peer read).
        StreamId on = order(sut, to, to, stream);
        if (from != to) {
            on = order(sut, from, to, stream);
        }
        Client client = sut.client(to);
        if (way == Way::Client) {
            RC_ASSERT(client.copy(slice(sut, source), slice(sut, target), on).ok());
        } else if (way == Way::Kernel || way == Way::External) {
            for (std::uint32_t time = 0; time < times; ++time) {
                enqueue_copy(sut, client, on);
            }
        } else {
            RC_ASSERT(client.begin_capture(on).ok());
            enqueue_copy(sut, client, on);
            Result<CaptureGraph> graph = client.end_capture(on);
            // C14: a window whose copy failed or was skipped is refused; a clean one replays.
            RC_ASSERT(graph.ok() == lands);
            if (graph.ok()) {
                RC_ASSERT(graph->write_set().size() == 1u);
                RC_ASSERT(client.replay(*graph, on).ok());
            } else {
                RC_ASSERT(graph.error().kind() == ErrorKind::LaunchRefused);
            }
        }
        order(sut, to, from, sut.last_stream[from]);
    }
    /// The copy as a kernel launch or as external work, by `way`.
    void enqueue_copy(const ClientSut& sut, Client& client, StreamId on) const {
        std::vector<LaunchArgument> arguments{
            LaunchArgument{slice(sut, source), AccessMode::Read, std::nullopt},
            LaunchArgument{slice(sut, target), AccessMode::Write, std::nullopt}};
        if (way == Way::External || way == Way::CapturedExternal) {
            ExternalWork work{"external_copy", std::move(arguments), conformance::external_copy()};
            RC_ASSERT(client.enqueue(std::move(work), on).ok());
            return;
        }
        RC_ASSERT(client.launch("copy", LaunchConfig::linear(target.length, 8), arguments,
                                KernelArgs(), on)
                      .ok());
    }
    void show(std::ostream& out) const override {
        const char* ways[] = {"copy kernel", "client copy", "captured copy kernel, replayed,",
                              "external copy", "captured external copy, replayed,"};
        out << ways[static_cast<int>(way)] << " " << source << " to " << target << " on stream "
            << stream;
        if (times > 1) {
            out << ", " << times << " times in a row";
        }
    }
};

struct Read : Command {
    Range range;
    /// Through `sync` naming the handle instead: it fails exactly as the read would (C6).
    bool through_sync;
    explicit Read(const ClientModel& model)
        : range(pick_range(model)), through_sync(*rc::gen::arbitrary<bool>()) {}
    void checkPreconditions(const ClientModel& model) const override {
        RC_PRE(valid(model, range));
    }
    void apply(ClientModel&) const override {}
    void run(const ClientModel& model, ClientSut& sut) const override {
        const ExpectedRead expected = expected_read(model, range);
        if (through_sync) {
            const Handle named[] = {slice(sut, range)};
            check_read(expected, sut.client(expected.device).sync(named), {});
            return;
        }
        auto read = sut.client(expected.device).read(slice(sut, range));
        if (!read.ok()) {
            check_read(expected, Status(read.error()), {});
            return;
        }
        RC_ASSERT(read->size() == range.length);
        check_read(expected, Status(), *read);
    }
    void show(std::ostream& out) const override {
        out << (through_sync ? "sync naming " : "read ") << range;
    }
};

/// An asynchronous read of a range on one of its device's streams (after the device's last
/// work), waited for by a later `WaitRead`: what it reports is decided here, in program order.
struct ReadAsync : Command {
    Range range;
    std::uint32_t stream;
    explicit ReadAsync(const ClientModel& model)
        : range(pick_range(model)), stream(pick_stream()) {}
    void checkPreconditions(const ClientModel& model) const override {
        RC_PRE(valid(model, range));
        RC_PRE(model.reads.size() < 4u);
    }
    void apply(ClientModel& model) const override {
        model.reads.push_back(expected_read(model, range));
    }
    void run(const ClientModel& model, ClientSut& sut) const override {
        const std::uint32_t device = model.buffers[range.buffer]->device;
        const StreamId on = order(sut, device, device, stream);
        auto into = std::make_unique<std::vector<std::byte>>(range.length, std::byte{0xee});
        Result<PendingRead> read = sut.client(device).read_async(slice(sut, range), *into, on);
        RC_ASSERT(read.ok());
        sut.reads.push_back(InFlightRead{*read, std::move(into)});
    }
    void show(std::ostream& out) const override {
        out << "read " << range << " asynchronously on stream " << stream;
    }
};

/// Waits for one asynchronous read in flight: it reports what the model decided when it was
/// enqueued, whatever was enqueued since, and a failed one leaves its buffer zeroed.
struct WaitRead : Command {
    std::size_t index;
    explicit WaitRead(const ClientModel& model)
        : index(*rc::gen::inRange<std::size_t>(0, std::max<std::size_t>(model.reads.size(), 1))) {}
    void checkPreconditions(const ClientModel& model) const override {
        RC_PRE(index < model.reads.size());
    }
    void apply(ClientModel& model) const override {
        model.reads.erase(model.reads.begin() + static_cast<std::ptrdiff_t>(index));
    }
    void run(const ClientModel& model, ClientSut& sut) const override {
        const ExpectedRead& expected = model.reads[index];
        InFlightRead read = std::move(sut.reads[index]);
        sut.reads.erase(sut.reads.begin() + static_cast<std::ptrdiff_t>(index));
        const Status waited = sut.client(expected.device).wait(read.pending);
        check_read(expected, waited, *read.into);
        if (!waited.ok()) {
            for (const std::byte byte : *read.into) {
                RC_ASSERT(byte == std::byte{0});
            }
        }
    }
    void show(std::ostream& out) const override { out << "wait for async read " << index; }
};

struct Free : Command {
    std::size_t buffer;
    explicit Free(const ClientModel& model) : buffer(pick_range(model).buffer) {}
    void checkPreconditions(const ClientModel& model) const override {
        RC_PRE(bool(buffer < model.buffers.size() && model.buffers[buffer]));
    }
    void apply(ClientModel& model) const override { model.buffers[buffer].reset(); }
    void run(const ClientModel&, ClientSut& sut) const override { sut.handles[buffer].reset(); }
    void show(std::ostream& out) const override { out << "free #" << buffer; }
};

struct Sync : Command {
    std::uint32_t device;
    explicit Sync(const ClientModel& model)
        : device(*rc::gen::inRange<std::uint32_t>(0, model.devices)) {}
    void checkPreconditions(const ClientModel& model) const override {
        RC_PRE(device < model.devices);
    }
    void apply(ClientModel&) const override {}
    void run(const ClientModel&, ClientSut& sut) const override {
        RC_ASSERT(sut.client(device).sync().ok());
    }
    void show(std::ostream& out) const override { out << "sync device " << device; }
};

/// The host waits for the last work of device `from` through device `device`'s client: an event
/// recorded after it (`wait`, then `event_complete`), or, on its own device, its stream
/// (`sync_stream`). Failed work fails neither; the bytes are the model's either way.
struct HostWait : Command {
    std::uint32_t from;
    std::uint32_t device;
    bool on_stream;
    explicit HostWait(const ClientModel& model)
        : from(*rc::gen::inRange<std::uint32_t>(0, model.devices)),
          device(*rc::gen::inRange<std::uint32_t>(0, model.devices)),
          on_stream(*rc::gen::arbitrary<bool>()) {}
    void checkPreconditions(const ClientModel& model) const override {
        RC_PRE(bool(from < model.devices && device < model.devices));
    }
    void apply(ClientModel&) const override {}
    void run(const ClientModel&, ClientSut& sut) const override {
        const StreamId last = sut.streams[from][sut.last_stream[from]];
        if (on_stream) {
            RC_ASSERT(sut.client(from).sync_stream(last).ok());
            return;
        }
        Result<Event> event = sut.client(from).record_event(last);
        RC_ASSERT(event.ok());
        RC_ASSERT(sut.client(device).wait(*event).ok());
        Result<bool> complete = sut.client(device).event_complete(*event);
        RC_ASSERT(complete.ok() && *complete);
    }
    void show(std::ostream& out) const override {
        if (on_stream) {
            out << "sync the last stream of device " << from;
        } else {
            out << "host waits on device " << device << " for an event after device " << from
                << "'s last work";
        }
    }
};

/// Holds back one stream of a device for a while (`StreamDelay`): the work queued there after it
/// is still to run when the host goes on, which changes no outcome. A backend that settles work
/// before its stream runs it returns stale bytes here.
struct Delay : Command {
    /// Each delay is short (steps on the simulator, microseconds elsewhere): a program holds many.
    static constexpr std::uint64_t steps_max = 2000;
    std::uint32_t device;
    std::uint32_t stream;
    std::uint64_t steps;
    explicit Delay(const ClientModel& model)
        : device(*rc::gen::inRange<std::uint32_t>(0, model.devices)),
          stream(pick_stream()),
          steps(*rc::gen::inRange<std::uint64_t>(1, steps_max + 1)) {}
    void checkPreconditions(const ClientModel& model) const override {
        RC_PRE(device < model.devices);
    }
    void apply(ClientModel&) const override {}
    void run(const ClientModel&, ClientSut& sut) const override {
        RC_ASSERT(sut.client(device).inject(StreamDelay{sut.streams[device][stream], steps}).ok());
    }
    void show(std::ostream& out) const override {
        out << "hold back stream " << stream << " of device " << device << " for " << steps
            << " steps";
    }
};

/// Every command of a client program, for `rc::state::check`.
inline auto client_program() {
    return rc::state::gen::execOneOfWithArgs<Allocate, Write, Fail, InjectCopyFault, Share, Copy,
                                             Read, ReadAsync, WaitRead, Free, Sync, HostWait, Delay,
                                             ReplaceStream>();
}

}  // namespace tandem::model
