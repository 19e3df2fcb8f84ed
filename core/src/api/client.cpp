#include "tandem/core/client.hpp"

#include "tandem/backend/server.hpp"

#include "label_table.hpp"

#include <cassert>

namespace tandem {

Client::Client(std::shared_ptr<Server> server) : server_(std::move(server)) {
    assert(server_ && "a client needs a server");
}

ServiceId Client::service() const { return server_->service(); }

std::optional<Error> Client::lost() const { return server_->lost(); }

bool Client::peer_access_granted(ServiceId accessor) const {
    return server_->peer_access_granted(accessor);
}

Result<NativeView> Client::native(StreamId stream) { return server_->native(nullptr, stream); }

namespace {

/// Why a call refuses `handle`, when it was moved from and holds no memory.
Status check_held(const Handle& handle) {
    if (handle.empty()) [[unlikely]] {
        return Error::invalid_argument("a handle that was moved from holds no memory");
    }
    return {};
}

}  // namespace

Status Client::check_local(const Handle& handle) const {
    if (Status held = check_held(handle); !held) {
        return held;
    }
    if (handle.service() != service()) {
        return Error::wrong_service(service(), handle.service());
    }
    return {};
}

Result<StreamId> Client::create_stream() { return server_->create_stream(); }

namespace {

/// A slot in the label table for a label that passed its check, or why there is none.
Result<detail::LabelTable::Slot> label_slot(std::string_view label) {
    if (Status valid = check_label(label); !valid) {
        return valid.error();
    }
    std::optional<detail::LabelTable::Slot> slot = detail::LabelTable::reserve();
    if (!slot) {
        return Error::invalid_argument(std::to_string(labels_live_max) +
                                       " labels are live, the most a process holds: release "
                                       "labelled memory or streams, or label fewer");
    }
    return std::move(*slot);
}

}  // namespace

Result<StreamId> Client::create_stream(std::string label) {
    if (label.empty()) {
        return create_stream();
    }
    // The slot first: a stream is never created that its label cannot follow.
    Result<detail::LabelTable::Slot> slot = label_slot(label);
    if (!slot) {
        return slot.error();
    }
    Result<StreamId> stream = server_->create_stream();
    if (stream) {
        detail::LabelTable::name(std::move(*slot), service(), *stream, std::move(label));
    }
    return stream;
}

std::string Client::label(StreamId stream) const {
    return detail::LabelTable::of(service(), stream).value_or(std::string());
}

Status Client::destroy_stream(StreamId stream) { return server_->destroy_stream(stream); }

Result<Handle> Client::allocate(std::uint64_t size_bytes) {
    return allocate(size_bytes, default_stream());
}

Result<Handle> Client::allocate(std::uint64_t size_bytes, StreamId stream) {
    return server_->allocate(size_bytes, stream);
}

Result<Handle> Client::allocate(std::uint64_t size_bytes, AllocateOptions options) {
    const StreamId stream = options.stream.value_or(default_stream());
    if (options.label.empty()) {
        return allocate(size_bytes, stream);
    }
    Result<detail::LabelTable::Slot> slot = label_slot(options.label);
    if (!slot) {
        return slot.error();
    }
    Result<Handle> handle = server_->allocate(size_bytes, stream);
    if (handle) {
        // Before the handle is handed out: only its last holder forgets the label.
        detail::LabelTable::name(std::move(*slot), handle->memory(), std::move(options.label));
    }
    return handle;
}

Status Client::write(const Handle& target, std::span<const std::byte> bytes) {
    if (Status local = check_local(target); !local) {
        return local;
    }
    if (bytes.size() != target.size_in_use()) {
        return Error::invalid_argument("a write of " + std::to_string(bytes.size()) +
                                       " bytes into a handle of " +
                                       std::to_string(target.size_in_use()) + " bytes");
    }
    return server_->write(target.binding(), bytes, server_->stream_or_default(target.stream()));
}

Result<std::vector<std::byte>> Client::read(const Handle& source) {
    if (Status local = check_local(source); !local) {
        return local.error();
    }
    return server_->read(source.binding());
}

Result<PendingRead> Client::read_async(const Handle& source, std::span<std::byte> into,
                                       StreamId stream) {
    if (Status local = check_local(source); !local) {
        return local.error();
    }
    return server_->read_async(source.binding(), into, stream);
}

Status Client::wait(const PendingRead& read) { return server_->wait(read); }

Result<std::vector<std::byte>> Client::read_strided(const Handle& source,
                                                    std::vector<std::uint64_t> shape,
                                                    std::vector<std::uint64_t> strides,
                                                    std::uint64_t elem_size_bytes) {
    if (Status local = check_local(source); !local) {
        return local.error();
    }
    Result<CopyDescriptor> descriptor = CopyDescriptor::make(source.binding(), std::move(shape),
                                                             std::move(strides), elem_size_bytes);
    if (!descriptor) {
        return descriptor.error();
    }
    return server_->read_strided(*descriptor);
}

Status Client::write_strided(const Handle& target, std::vector<std::uint64_t> shape,
                             std::vector<std::uint64_t> strides, std::uint64_t elem_size_bytes,
                             std::span<const std::byte> bytes) {
    if (Status local = check_local(target); !local) {
        return local;
    }
    Result<CopyDescriptor> view = CopyDescriptor::make(target.binding(), std::move(shape),
                                                       std::move(strides), elem_size_bytes);
    if (!view) {
        return view.error();
    }
    if (!view->elements_disjoint()) {
        return Error::invalid_argument(
            "a strided write whose elements share bytes: the order of their writes is undefined");
    }
    const ByteRange extent = view->extent();
    std::vector<std::byte> laid_out(extent.size_bytes());
    if (Status placed = view->scatter(bytes, laid_out); !placed) {
        return placed;
    }
    // One write per run of covered bytes, each releasing exactly its bytes (C3), in order on
    // the handle's stream.
    const StreamId stream = server_->stream_or_default(target.stream());
    const std::uint64_t first = target.binding().offset_start();
    for (const ByteRange& run : view->byte_ranges()) {
        Result<Handle> piece = target.slice(run.begin - first, run.size_bytes());
        if (!piece) {
            return piece.error();
        }
        const std::span<const std::byte> run_bytes(laid_out.data() + (run.begin - extent.begin),
                                                   run.size_bytes());
        if (Status written = server_->write(piece->binding(), run_bytes, stream); !written) {
            return written;
        }
    }
    return {};
}

Status Client::copy(const Handle& source, const Handle& target) {
    return copy(source, target, server_->stream_or_default(target.stream()));
}

Status Client::copy(const Handle& source, const Handle& target, StreamId stream) {
    if (Status held = check_held(source); !held) {
        return held;
    }
    if (Status local = check_local(target); !local) {
        return local;
    }
    if (source.size_in_use() != target.size_in_use()) {
        return Error::invalid_argument("a copy of " + std::to_string(source.size_in_use()) +
                                       " bytes into " + std::to_string(target.size_in_use()) +
                                       " bytes");
    }
    // A GPU's copy gives overlapping bytes no order, so no backend takes such a copy.
    if (overlap(source.claim_key(), target.claim_key()) != Overlap::Disjoint) {
        return Error::invalid_argument("a copy from " + source.describe() + " into " +
                                       target.describe() + ", which share bytes");
    }
    Result<KernelResource> bound = bind(LaunchArgument{source, AccessMode::Read, std::nullopt});
    if (!bound) {
        return bound.error();
    }
    return server_->copy(*bound, target.binding(), stream);
}

Result<KernelResource> Client::bind(const LaunchArgument& argument) const {
    const Handle& handle = argument.handle;
    if (Status held = check_held(handle); !held) {
        return held.error();
    }
    if (local_buffer(argument)) {
        return KernelResource(handle, argument.access);
    }
    if (handle.service() == service()) {
        Result<TensorMapBinding> map =
            TensorMapBinding::make(handle.binding(), *argument.tensor_map);
        if (!map) {
            return map.error();
        }
        return KernelResource::tensor_map(std::move(*map), argument.access);
    }
    // Memory of another device: only shared memory may be bound, at its peer address.
    if (argument.tensor_map) {
        return Error::invalid_argument("a tensor map over memory of " +
                                       to_string(handle.service()) + " cannot be bound on " +
                                       to_string(service()));
    }
    std::optional<PeerBinding> peer = PeerBinding::make(handle.binding());
    if (!peer) {
        return Error::wrong_service(service(), handle.service())
            .caused_by(Error::invalid_argument(
                "memory of " + to_string(handle.service()) +
                " was never shared with peers; share_with_peers() it on its own device first"));
    }
    return KernelResource::peer(std::move(*peer), argument.access);
}

Result<Handle> Client::adopt(AdoptedMemory memory) { return server_->adopt(std::move(memory)); }

Result<NativeView> Client::native(const Handle& handle, StreamId stream) {
    if (Status local = check_local(handle); !local) {
        return local.error();
    }
    const BufferBinding binding = handle.binding();
    return server_->native(&binding, stream);
}

// The request views the work's callables for the call; a backend or window that keeps the request
// past it keeps a shared copy of them (`ExternalRef`), so a unit run at once copies nothing.
Status Client::enqueue(ExternalWork&& work, StreamId stream) {
    return enqueue(static_cast<const ExternalWork&>(work), stream);
}

Status Client::enqueue(const ExternalWork& work, StreamId stream) {
    return launch_entry(nullptr, work.name, LaunchConfig::linear(1), work.arguments, {}, stream,
                        &work.run);
}

Status Client::launch_entry(const KernelEntry* entry, std::string_view kernel, LaunchConfig config,
                            const std::vector<LaunchArgument>& arguments, KernelArgs args,
                            StreamId stream, const ExternalCallables* external) {
    if (args.overflowed()) [[unlikely]] {
        return Error::invalid_argument(
            "a launch of '" + std::string(entry != nullptr ? std::string_view(entry->name) : kernel) +
            "' with more than " + std::to_string(KernelArgs::max_words) + " scalar arguments");
    }
    // One request per thread, reused: it keeps its storage for the resources from launch to
    // launch, so a launch makes no heap call for them. A launch inside a launch (none does
    // today) gets a request of its own.
    thread_local LaunchRequest reused;
    thread_local bool in_use = false;
    LaunchRequest fresh;
    LaunchRequest& request = in_use ? fresh : reused;
    const bool reusing = !in_use;
    in_use = true;
    struct Clear {
        LaunchRequest& request;
        bool reusing;
        ~Clear() {
            request.resources.clear();  // Bindings must not outlive the call: they hold memory.
            request.external.reset();
            if (reusing) {
                in_use = false;
            }
        }
    } clear{request, reusing};
    request.entry = entry;
    if (external != nullptr) {
        request.external.view(*external);
    }
    // Into the reused storage: no heap once warm, however long the name.
    request.kernel.assign(entry != nullptr ? std::string_view(entry->name) : kernel);
    request.config = config;
    request.args = args;
    request.stream = stream;  // `resources` is empty: `clear` emptied it when it was last used.
    for (const LaunchArgument& argument : arguments) {
        if (local_buffer(argument)) {
            // As `bind` would, built in its place: a move of a just-built one stalls.
            request.resources.emplace_back(argument.handle, argument.access);
            continue;
        }
        Result<KernelResource> bound = bind(argument);
        if (!bound) {
            return bound.error();
        }
        request.resources.push_back(std::move(*bound));
    }
    return server_->launch(std::move(request));  // Checks the launch limits.
}

Result<Event> Client::record_event(StreamId stream) { return server_->record_event(stream); }

Status Client::wait_event(StreamId stream, const Event& event) {
    return server_->wait_event(stream, event);
}

Status Client::wait(const Event& event) { return server_->wait(event); }

Result<bool> Client::event_complete(const Event& event) { return server_->event_complete(event); }

Status Client::sync_stream(StreamId stream) { return server_->sync_stream(stream); }

Status Client::sync() { return server_->sync(); }

Status Client::sync(std::span<const Handle> handles) {
    // A sync that names handles waits for every queued writer of their bytes, on any device, as a
    // read does (C6).
    std::vector<ClaimKey> keys;
    keys.reserve(handles.size());
    for (const Handle& handle : handles) {
        if (Status local = check_local(handle); !local) {
            return local;
        }
        keys.push_back(handle.claim_key());
    }
    return server_->sync(keys);
}

Result<Handle> Client::share_with_peers(const Handle& handle) {
    if (Status local = check_local(handle); !local) {
        return local.error();
    }
    if (handle.peer()) {
        return handle;
    }
    Result<PeerMemory> shared = server_->share(handle.binding());
    if (!shared) {
        return shared.error();
    }
    return handle.with_peer(std::move(*shared));
}

Status Client::grant_peer_access(ServiceId accessor) {
    return server_->grant_peer_access(accessor);
}

Status Client::begin_capture(StreamId stream) { return server_->begin_capture(stream); }
Result<CaptureGraph> Client::end_capture(StreamId stream) { return server_->end_capture(stream); }

Status Client::replay(const CaptureGraph& graph, StreamId stream) {
    if (graph.device() != service()) {
        return Error::wrong_service(service(), graph.device());
    }
    return server_->replay(graph, stream);
}

Result<MemoryUsage> Client::memory_usage() const { return server_->memory_usage(); }
Status Client::inject(const Fault& fault) { return server_->inject(fault); }

}  // namespace tandem
