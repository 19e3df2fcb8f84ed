// Parsing each kind of step, checked against the names earlier steps defined.

#include "scenario_parse_detail.hpp"

namespace tandem::tool {
namespace {

/// Every step body may say how the step itself must fail.
constexpr const char* fails_key = "fails";

AccessMode access_mode(const YamlReader& reader, const YAML::Node& node) {
    const std::string value = reader.text(node, "an access mode");
    if (value == "read") {
        return AccessMode::Read;
    }
    if (value == "write") {
        return AccessMode::Write;
    }
    if (value == "readwrite") {
        return AccessMode::ReadWrite;
    }
    reader.fail(node, "expected an access mode (read, write or readwrite), not '" + value + "'");
}

Dim3 dim3(const YamlReader& reader, const YAML::Node& node, const std::string& what) {
    if (node.IsScalar()) {
        return Dim3{reader.u32(node, what), 1, 1};
    }
    const std::vector<std::uint64_t> values = reader.u64_list(node, what);
    if (values.empty() || values.size() > 3) {
        reader.fail(node, "expected " + what + " as one number or a list of 1 to 3");
    }
    Dim3 dims;
    std::uint32_t* slots[] = {&dims.x, &dims.y, &dims.z};
    for (std::size_t index = 0; index < values.size(); ++index) {
        if (values[index] > 0xffffffffULL) {
            reader.fail(node, "expected " + what + " below 2^32 in every dimension");
        }
        *slots[index] = static_cast<std::uint32_t>(values[index]);
    }
    return dims;
}

}  // namespace

Action ScenarioParser::action(const YAML::Node& key, const YAML::Node& body,
                              std::optional<FailureExpectation>& fails) {
    const std::string kind = key.Scalar();
    const auto fields = [&](std::initializer_list<const char*> allowed) {
        YamlFields checked(reader_, body, "a '" + kind + "' step", allowed);
        if (checked.has(fails_key)) {
            fails = failure(checked.get(fails_key));
        }
        return checked;
    };
    if (kind == "allocate") {
        return allocate(fields({"name", "device", "size", "stream", fails_key}));
    }
    if (kind == "slice") {
        return slice(fields({"name", "of", "offset", "length", fails_key}));
    }
    if (kind == "stream") {
        return stream_step(fields({"name", "device", fails_key}));
    }
    if (kind == "destroy_stream") {
        return destroy_stream_step(fields({"name", "device", fails_key}));
    }
    if (kind == "write") {
        return write(fields({"buffer", "device", "fill", "bytes", "pattern", "f32", "u64", fails_key}));
    }
    if (kind == "launch") {
        return launch(fields({"kernel", "device", "stream", "threads", "grid", "block", "resources",
                              "args", fails_key}));
    }
    if (kind == "share") {
        const YamlFields checked = fields({"buffer", fails_key});
        const std::string name = reader_.name(checked.require("buffer"), "a buffer name");
        (void)buffer(checked.get("buffer"));
        return ShareStep{name};
    }
    if (kind == "grant") {
        const YamlFields checked = fields({"owner", "accessor", fails_key});
        return GrantStep{device(checked.require("owner")), device(checked.require("accessor"))};
    }
    if (kind == "copy") {
        return copy(fields({"from", "to", "device", "stream", fails_key}));
    }
    if (kind == "record" || kind == "wait") {
        const YamlFields checked = fields({"event", "device", "stream", fails_key});
        const std::string event = reader_.name(checked.require("event"), "an event name");
        const std::uint32_t on = device(checked.require("device"));
        const std::string on_stream = stream(checked, on);
        if (kind == "record") {
            events_[event] = on;
            return RecordStep{event, on, on_stream};
        }
        if (!events_.contains(event)) {
            reader_.fail(checked.get("event"), "expected an event recorded by an earlier step, not '" +
                                                   event + "'");
        }
        return WaitStep{event, on, on_stream};
    }
    if (kind == "sync") {
        return sync(fields({"device", "buffers", fails_key}));
    }
    if (kind == "read") {
        return read(fields({"buffer", "device", "strided", "expect", fails_key}));
    }
    if (kind == "free") {
        const YamlFields checked = fields({"buffer", fails_key});
        const std::string name = reader_.name(checked.require("buffer"), "a buffer name");
        (void)buffer(checked.get("buffer"));
        buffers_.erase(name);
        freed_[name] = reader_.mark(key).line;
        return FreeStep{name};
    }
    if (kind == "begin_capture" || kind == "end_capture") {
        const bool begin = kind == "begin_capture";
        const YamlFields checked = begin ? fields({"device", "stream", fails_key})
                                         : fields({"device", "stream", "graph", fails_key});
        const std::uint32_t on = device(checked.require("device"));
        const std::string on_stream = stream(checked, on);
        const bool open = capturing_.contains({on, on_stream});
        if (begin == open) {
            reader_.fail(body, begin ? "this stream is already capturing"
                                     : "expected a begin_capture on this stream before its end");
        }
        if (begin) {
            capturing_.insert({on, on_stream});
            return BeginCaptureStep{on, on_stream};
        }
        capturing_.erase({on, on_stream});
        const std::string graph = reader_.name(checked.require("graph"), "a graph name");
        graphs_[graph] = on;
        return EndCaptureStep{on, on_stream, graph};
    }
    if (kind == "replay") {
        const YamlFields checked = fields({"graph", "device", "stream", fails_key});
        const std::string graph = reader_.name(checked.require("graph"), "a graph name");
        const auto found = graphs_.find(graph);
        if (found == graphs_.end()) {
            reader_.fail(checked.get("graph"), "expected a graph an earlier end_capture named, not '" +
                                                   graph + "'");
        }
        const std::uint32_t on = device_or(checked, found->second);
        return ReplayStep{graph, on, stream(checked, on)};
    }
    if (kind == "inject") {
        InjectStep injected = inject(body);
        YamlFields checked(reader_, body, "an 'inject' step",
                           {"device", "kernel", "nth", "probability", "code", "allocation",
                            "lose_after", "stream", "delay", fails_key});
        if (checked.has(fails_key)) {
            fails = failure(checked.get(fails_key));
        }
        return injected;
    }
    if (kind == "abandon") {
        return abandon(fields({"rank", fails_key}));
    }
    if (kind == "cut") {
        return cut(fields({"ranks", fails_key}));
    }
    reader_.fail(key,
                 "expected a step kind (allocate, slice, stream, destroy_stream, write, "
                 "launch, share, grant, copy, record, wait, sync, read, free, begin_capture, "
                 "end_capture, replay, inject, abandon, cut), not '" +
                     kind + "'");
}

AllocateStep ScenarioParser::allocate(const YamlFields& fields) {
    AllocateStep step;
    step.name = reader_.name(fields.require("name"), "a buffer name");
    step.device = device(fields.require("device"));
    step.size_bytes = reader_.u64(fields.require("size"), "a size in bytes");
    if (step.size_bytes == 0 || step.size_bytes > max_buffer_bytes) {
        reader_.fail(fields.get("size"), "expected a size from 1 byte to 4 GiB, not " +
                                             std::to_string(step.size_bytes));
    }
    step.stream = stream(fields, step.device);
    define_buffer(fields.get("name"), step.name, BufferInfo{step.device, step.size_bytes});
    return step;
}

SliceStep ScenarioParser::slice(const YamlFields& fields) {
    SliceStep step;
    step.name = reader_.name(fields.require("name"), "a buffer name");
    step.of = reader_.name(fields.require("of"), "a buffer name");
    const BufferInfo parent = buffer(fields.get("of"));
    step.offset_bytes = reader_.u64(fields.require("offset"), "an offset in bytes");
    step.length_bytes = reader_.u64(fields.require("length"), "a length in bytes");
    if (step.offset_bytes > parent.size_bytes ||
        step.length_bytes > parent.size_bytes - step.offset_bytes) {
        reader_.fail(fields.get("length"),
                     "expected the slice to fit in '" + step.of + "' (" +
                         std::to_string(parent.size_bytes) + " bytes), not offset " +
                         std::to_string(step.offset_bytes) + " length " +
                         std::to_string(step.length_bytes));
    }
    define_buffer(fields.get("name"), step.name, BufferInfo{parent.device, step.length_bytes});
    return step;
}

StreamStep ScenarioParser::stream_step(const YamlFields& fields) {
    StreamStep step{reader_.name(fields.require("name"), "a stream name"),
                    device(fields.require("device"))};
    if (!streams_.insert({step.device, step.name}).second) {
        reader_.fail(fields.get("name"), "stream '" + step.name + "' already exists on device " +
                                             std::to_string(step.device));
    }
    return step;
}

std::uint32_t ScenarioParser::job_rank(const YAML::Node& node, const std::string& kind) {
    const std::uint32_t rank = reader_.u32(node, "a rank");
    if (scenario_.ranks < 2) {
        reader_.fail(node, kind +
                               " needs a job of 2 ranks or more "
                               "('devices: {count: D, ranks: N}')");
    }
    if (rank >= scenario_.ranks) {
        reader_.fail(node, "expected a rank below " + std::to_string(scenario_.ranks) +
                               " (the ranks of 'devices'), not " + std::to_string(rank));
    }
    return rank;
}

AbandonStep ScenarioParser::abandon(const YamlFields& fields) {
    return AbandonStep{job_rank(fields.require("rank"), "an abandon step")};
}

CutStep ScenarioParser::cut(const YamlFields& fields) {
    const YAML::Node ranks = fields.require("ranks");
    if (!ranks.IsSequence() || ranks.size() != 2) {
        reader_.fail(ranks, "expected the two ranks whose connection is cut, as [A, B]");
    }
    const std::uint32_t first = job_rank(ranks[0], "a cut step");
    const std::uint32_t second = job_rank(ranks[1], "a cut step");
    if (first == second) {
        reader_.fail(ranks[1], "expected two different ranks, not rank " + std::to_string(first) +
                                   " twice (a connection joins two ranks)");
    }
    return CutStep{std::min(first, second), std::max(first, second)};
}

DestroyStreamStep ScenarioParser::destroy_stream_step(const YamlFields& fields) {
    DestroyStreamStep step{reader_.name(fields.require("name"), "a stream name"),
                           device(fields.require("device"))};
    // `main` stays a known name, so that a scenario can check the default stream is refused.
    if (step.name != "main" && !streams_.contains({step.device, step.name})) {
        reader_.fail(fields.get("name"), "expected a stream a 'stream' step created on device " +
                                             std::to_string(step.device) + ", not '" + step.name +
                                             "'");
    }
    return step;
}

WriteStep ScenarioParser::write(const YamlFields& fields) {
    WriteStep step;
    step.buffer = reader_.name(fields.require("buffer"), "a buffer name");
    const BufferInfo target = buffer(fields.get("buffer"));
    step.device = device_or(fields, target.device);
    step.data = byte_spec(fields, "a write");
    check_size(fields.node(), step.data, target.size_bytes, "the write");
    return step;
}

LaunchConfig ScenarioParser::launch_config(const YamlFields& fields) const {
    if (fields.has("threads") == fields.has("grid")) {
        reader_.fail(fields.node(), "a launch needs either 'threads' (with an optional 'block') or "
                                    "'grid' and 'block'");
    }
    if (fields.has("threads")) {
        const std::uint64_t threads = reader_.u64(fields.get("threads"), "a thread count");
        const std::uint32_t block = fields.has("block") ? reader_.u32(fields.get("block"), "a block size") : 256;
        if (block == 0 || threads / block >= 0xffffffffULL) {
            reader_.fail(fields.node(), "expected a block size above 0 and fewer than 2^32 blocks");
        }
        return LaunchConfig::linear(threads, block);
    }
    return LaunchConfig{dim3(reader_, fields.get("grid"), "a grid"),
                        dim3(reader_, fields.require("block"), "a block")};
}

LaunchResource ScenarioParser::resource(const YAML::Node& node) const {
    YamlFields fields(reader_, node, "a launch resource", {"buffer", "access", "tensor_map"});
    LaunchResource resource;
    resource.buffer = reader_.name(fields.require("buffer"), "a buffer name");
    (void)buffer(fields.get("buffer"));
    if (fields.has("access")) {
        resource.access = access_mode(reader_, fields.get("access"));
    }
    if (fields.has("tensor_map")) {
        YamlFields map(reader_, fields.get("tensor_map"), "a tensor map",
                       {"dims", "strides", "box", "elem"});
        TensorMapDescriptor descriptor;
        descriptor.dims = reader_.u64_list(map.require("dims"), "dimensions");
        descriptor.strides_bytes = map.has("strides") ? reader_.u64_list(map.get("strides"), "strides in bytes")
                                                      : std::vector<std::uint64_t>{};
        descriptor.box = reader_.list(map.require("box"), "box extents", [&](const YAML::Node& item) {
            return reader_.u32(item, "a box extent");
        });
        descriptor.elem_size_bytes = reader_.u32(map.require("elem"), "an element size in bytes");
        resource.tensor_map = std::move(descriptor);
    }
    return resource;
}

ScalarArg ScenarioParser::scalar_arg(const YAML::Node& node) const {
    YamlFields fields(reader_, node, "a scalar argument", {"u64", "f64"});
    if (fields.has("u64") == fields.has("f64")) {
        reader_.fail(node, "expected a scalar argument as {u64: N} or {f64: X}");
    }
    if (fields.has("u64")) {
        return ScalarArg{false, reader_.u64(fields.get("u64"), "a u64 argument"), 0};
    }
    return ScalarArg{true, 0, reader_.f64(fields.get("f64"), "an f64 argument")};
}

LaunchStep ScenarioParser::launch(const YamlFields& fields) {
    LaunchStep step;
    step.kernel = reader_.name(fields.require("kernel"), "a kernel name");
    step.device = device(fields.require("device"));
    step.stream = stream(fields, step.device);
    step.config = launch_config(fields);
    if (fields.has("resources")) {
        step.resources = reader_.list(fields.get("resources"), "launch resources",
                                      [&](const YAML::Node& item) { return resource(item); });
    }
    if (fields.has("args")) {
        step.args = reader_.list(fields.get("args"), "scalar arguments",
                                 [&](const YAML::Node& item) { return scalar_arg(item); });
        if (step.args.size() > KernelArgs::max_words) {
            reader_.fail(fields.get("args"), "expected at most " +
                                                 std::to_string(KernelArgs::max_words) + " arguments");
        }
    }
    return step;
}

CopyStep ScenarioParser::copy(const YamlFields& fields) {
    CopyStep step;
    step.from = reader_.name(fields.require("from"), "a buffer name");
    step.to = reader_.name(fields.require("to"), "a buffer name");
    const BufferInfo source = buffer(fields.get("from"));
    const BufferInfo target = buffer(fields.get("to"));
    if (source.size_bytes != target.size_bytes) {
        reader_.fail(fields.node(), "expected a copy between buffers of one size, not " +
                                        std::to_string(source.size_bytes) + " and " +
                                        std::to_string(target.size_bytes) + " bytes");
    }
    step.device = device_or(fields, target.device);
    step.stream = stream(fields, step.device);
    return step;
}

SyncStep ScenarioParser::sync(const YamlFields& fields) {
    SyncStep step;
    if (fields.has("device")) {
        step.device = device(fields.get("device"));
    }
    if (fields.has("buffers")) {
        if (!step.device) {
            reader_.fail(fields.get("buffers"), "a sync that names buffers needs its 'device'");
        }
        step.buffers = reader_.list(fields.get("buffers"), "buffer names", [&](const YAML::Node& item) {
            (void)buffer(item);
            return reader_.name(item, "a buffer name");
        });
    }
    return step;
}

ReadStep ScenarioParser::read(const YamlFields& fields) {
    ReadStep step;
    step.buffer = reader_.name(fields.require("buffer"), "a buffer name");
    const BufferInfo source = buffer(fields.get("buffer"));
    step.device = device_or(fields, source.device);
    std::uint64_t size_bytes = source.size_bytes;
    if (fields.has("strided")) {
        YamlFields view(reader_, fields.get("strided"), "a strided view", {"shape", "strides", "elem"});
        StridedView strided{reader_.u64_list(view.require("shape"), "a shape"),
                            reader_.u64_list(view.require("strides"), "strides in elements"),
                            reader_.u64(view.require("elem"), "an element size in bytes")};
        if (strided.shape.size() != strided.strides.size() || strided.elem_size_bytes == 0) {
            reader_.fail(fields.get("strided"), "expected as many strides as shape dimensions and an "
                                                "element size above 0");
        }
        size_bytes = strided.elem_size_bytes;
        for (std::uint64_t extent : strided.shape) {
            size_bytes *= extent;
        }
        step.strided = std::move(strided);
    }
    if (fields.has("expect")) {
        YamlFields expect(reader_, fields.get("expect"), "a read expectation",
                          {"fill", "bytes", "pattern", "f32", "u64"});
        step.expect = byte_spec(expect, "a read expectation");
        check_size(fields.get("expect"), *step.expect, size_bytes, "the expectation");
    }
    return step;
}

InjectStep ScenarioParser::inject(const YAML::Node& node) const {
    YamlFields fields(reader_, node, "a fault",
                      {"device", "kernel", "nth", "probability", "code", "allocation", "lose_after",
                       "stream", "delay", fails_key});
    InjectStep step;
    step.device = device(fields.require("device"));
    const int kinds = int{fields.has("kernel")} + int{fields.has("allocation")} +
                      int{fields.has("lose_after")} + int{fields.has("delay")};
    if (kinds != 1) {
        reader_.fail(node, "a fault needs exactly one of: kernel, allocation, lose_after, delay");
    }
    if (fields.has("kernel")) {
        KernelFault fault;
        fault.kernel = reader_.name(fields.get("kernel"), "a kernel name");
        fault.nth = fields.has("nth") ? reader_.u64(fields.get("nth"), "which launch (0: every)") : 0;
        fault.probability = fields.has("probability") ? reader_.f64(fields.get("probability"), "a probability") : 1.0;
        if (fault.probability < 0.0 || fault.probability > 1.0) {
            reader_.fail(fields.get("probability"), "expected a probability from 0 to 1");
        }
        fault.code = fields.has("code") ? reader_.u32(fields.get("code"), "a failure code") : 1;
        step.fault = fault;
    } else if (fields.has("allocation")) {
        step.fault = AllocationFault{reader_.u64(fields.get("allocation"), "which allocation (from 1)")};
        if (std::get<AllocationFault>(step.fault).nth == 0) {
            reader_.fail(fields.get("allocation"), "expected which allocation from now fails, from 1");
        }
    } else if (fields.has("lose_after")) {
        step.fault = DeviceLossFault{reader_.u64(fields.get("lose_after"), "an operation count")};
    } else {
        step.stream = stream(fields, step.device);
        step.fault = StreamDelay{StreamId{}, reader_.u64(fields.get("delay"), "a delay in scheduler steps")};
    }
    return step;
}

}  // namespace tandem::tool
