// The steps the collectives are built of (collective_steps.hpp says why).

#include "api/collective_steps.hpp"

#include <algorithm>
#include <limits>
#include <set>
#include <string>

namespace tandem::detail {
namespace {

/// Threads of a combine: enough to cover a buffer in a few grid strides on any backend.
constexpr std::uint64_t combine_threads = 1024;

/// The error of `result`, as a status.
template <typename Value>
Status status_of(const Result<Value>& result) {
    return result ? Status{} : Status(result.error());
}

}  // namespace

std::uint64_t first_size(std::span<const Handle> buffers) {
    return buffers.empty() ? 0 : buffers.front().size_in_use();
}

std::uint64_t times(std::uint64_t bytes, std::size_t count) {
    std::uint64_t product = 0;
    return __builtin_mul_overflow(bytes, count, &product)
               ? std::numeric_limits<std::uint64_t>::max()
               : product;
}

Status check_buffer_size(std::string_view collective, std::string_view role, const Handle& buffer,
                         std::uint64_t size_bytes, std::uint64_t element_bytes) {
    if (buffer.empty() || buffer.size_in_use() == 0 || buffer.size_in_use() != size_bytes ||
        size_bytes % element_bytes != 0) {
        return Error::invalid_argument(
            std::string(collective) + ": " + std::string(role) + " " + buffer.describe() +
            " should hold " + std::to_string(size_bytes) + " bytes, a whole, non-zero number of " +
            std::to_string(element_bytes) + "-byte elements");
    }
    return {};
}

Status check_collective(std::string_view collective, std::span<Client> devices,
                        std::span<const BufferList> lists, std::uint64_t element_bytes) {
    const std::string name(collective);
    if (devices.empty()) {
        return Error::invalid_argument(name + " takes at least one device; given none");
    }
    for (const BufferList& list : lists) {
        if (list.buffers.size() != devices.size()) {
            return Error::invalid_argument(name + " takes one " + std::string(list.role) +
                                           " a device; given " + std::to_string(devices.size()) +
                                           " devices and " + std::to_string(list.buffers.size()) +
                                           " " + std::string(list.role) + "s");
        }
    }
    std::set<ServiceId> seen;
    for (std::size_t index = 0; index < devices.size(); ++index) {
        const ServiceId service = devices[index].service();
        if (!seen.insert(service).second || service.runtime_id != devices[0].service().runtime_id) {
            return Error::invalid_argument(name + " takes distinct devices of one runtime; " +
                                           to_string(service) + " is not one");
        }
        for (const BufferList& list : lists) {
            const Handle& buffer = list.buffers[index];
            if (!buffer.empty() && buffer.service() != service) {
                return Error::wrong_service(service, buffer.service());
            }
            if (Status size = check_buffer_size(collective, list.role, buffer, list.size_bytes,
                                                element_bytes);
                !size) {
                return size;
            }
        }
        if (std::optional<Error> lost = devices[index].lost()) {
            return *lost;
        }
    }
    return {};
}

Status fold_into(Client& device, const Handle& into, const Handle& source, ElementType type,
                 ReduceOp op) {
    Result<Handle> staging = device.allocate(into.size_in_use());
    if (!staging) {
        return staging.error();
    }
    if (Status copied = device.copy(source, *staging, device.default_stream()); !copied) {
        return copied;
    }
    return device.launch(
        "combine", LaunchConfig::linear(combine_threads),
        {{into, AccessMode::ReadWrite}, {*staging, AccessMode::Read}},
        KernelArgs().u64(static_cast<std::uint64_t>(op)).u64(static_cast<std::uint64_t>(type)));
}

CollectiveSteps::CollectiveSteps(std::span<Client> devices) : devices_(devices) {
    for (std::size_t index = 0; index < devices_.size(); ++index) {
        joined_.emplace_back(index, devices_[index].default_stream());
    }
}

void CollectiveSteps::join(std::size_t device, const Handle& buffer) {
    Client& client = devices_[device];
    const std::pair<std::size_t, StreamId> joined(device, buffer.stream());
    if (std::find(joined_.begin(), joined_.end(), joined) != joined_.end()) {
        return;
    }
    Result<Event> ready = client.record_event(buffer.stream());
    if (!ready) {
        // A stream destroyed is settled, and the default stream stands for it (client.hpp).
        keep(ready.error().kind() == ErrorKind::InvalidArgument ? Status{} : status_of(ready));
        return;
    }
    keep(client.wait_event(client.default_stream(), *ready));
    joined_.push_back(joined);
}

void CollectiveSteps::join_each(std::span<const Handle> buffers) {
    for (std::size_t index = 0; index < buffers.size(); ++index) {
        join(index, buffers[index]);
    }
}

std::optional<Handle> CollectiveSteps::stage(std::size_t device, std::uint64_t size_bytes) {
    Result<Handle> staging = devices_[device].allocate(size_bytes);
    keep(status_of(staging));
    return staging ? std::optional<Handle>(std::move(*staging)) : std::nullopt;
}

std::optional<Handle> CollectiveSteps::reach(std::size_t from, const Handle& source,
                                             std::size_t to) {
    if (from == to) {
        return source;
    }
    Client& owner = devices_[from];
    Result<Handle> shared = owner.share_with_peers(source);
    Result<Event> written = owner.record_event(owner.default_stream());
    keep(status_of(shared));
    keep(status_of(written));
    if (!shared || !written) {
        return std::nullopt;
    }
    keep(devices_[to].wait_event(devices_[to].default_stream(), *written));
    return std::move(*shared);
}

void CollectiveSteps::move(std::size_t from, const Handle& source, std::size_t to,
                           const Handle& target) {
    if (std::optional<Handle> reached = reach(from, source, to)) {
        keep(devices_[to].copy(*reached, target, devices_[to].default_stream()));
    }
}

void CollectiveSteps::fold(std::size_t from, const Handle& source, std::size_t to,
                           const Handle& into, ElementType type, ReduceOp op) {
    if (std::optional<Handle> reached = reach(from, source, to)) {
        keep(fold_into(devices_[to], into, *reached, type, op));
    }
}

Status CollectiveSteps::finish() {
    std::vector<Event> ends;
    for (Client& device : devices_) {
        Result<Event> end = device.record_event(device.default_stream());
        keep(status_of(end));
        if (end) {
            ends.push_back(*end);
        }
    }
    for (const auto& [device, stream] : joined_) {
        Client& client = devices_[device];
        for (const Event& end : ends) {
            if (end.device() != client.service() || stream != client.default_stream()) {
                keep(client.wait_event(stream, end));
            }
        }
    }
    return first_;
}

void CollectiveSteps::keep(const Status& status) {
    if (first_ && !status) {
        first_ = status;
    }
}

}  // namespace tandem::detail
