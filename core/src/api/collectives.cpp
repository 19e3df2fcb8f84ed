// An all-reduce across the devices of one runtime, built of copies, events and the catalog's
// `combine` kernel (collectives.hpp says why).

#include "tandem/core/collectives.hpp"

#include <set>
#include <string>
#include <vector>

namespace tandem {
namespace {

/// Threads of a combine: enough to cover a buffer in a few grid strides on any backend.
constexpr std::uint64_t combine_threads = 1024;

/// `InvalidArgument`, `WrongService` or `DeviceLost` for what an all-reduce cannot take.
Status check_all_reduce(std::span<Client> devices, std::span<const Handle> buffers,
                        ElementType type) {
    if (devices.empty() || buffers.size() != devices.size()) {
        return Error::invalid_argument("an all-reduce takes one buffer a device, of at least one "
                                       "device; given " + std::to_string(devices.size()) +
                                       " devices and " + std::to_string(buffers.size()) +
                                       " buffers");
    }
    std::set<ServiceId> seen;
    for (std::size_t index = 0; index < devices.size(); ++index) {
        const Handle& buffer = buffers[index];
        if (buffer.empty() || buffer.size_in_use() == 0 ||
            buffer.size_in_use() % element_size(type) != 0 ||
            buffer.size_in_use() != buffers[0].size_in_use()) {
            return Error::invalid_argument(
                "all-reduce buffer " + std::to_string(index) + " (" + buffer.describe() +
                "): every buffer holds the same whole, non-zero number of " +
                std::to_string(element_size(type)) + "-byte elements");
        }
        if (buffer.service() != devices[index].service()) {
            return Error::wrong_service(devices[index].service(), buffer.service());
        }
        if (!seen.insert(devices[index].service()).second ||
            devices[index].service().runtime_id != devices[0].service().runtime_id) {
            return Error::invalid_argument("an all-reduce takes distinct devices of one runtime; " +
                                           to_string(devices[index].service()) + " is not one");
        }
        if (std::optional<Error> lost = devices[index].lost()) {
            return *lost;
        }
    }
    return {};
}

/// A point after the work enqueued so far on `buffer`'s stream (the default stream once that
/// one is gone).
Result<Event> ready(Client& device, const Handle& buffer) {
    Result<Event> event = device.record_event(buffer.stream());
    return event ? event : device.record_event(device.default_stream());
}

/// `device` waits on `buffer`'s stream (the default stream once that one is gone) for `event`.
Status wait_on(Client& device, const Handle& buffer, const Event& event) {
    Status waited = device.wait_event(buffer.stream(), event);
    return waited || waited.error().kind() != ErrorKind::InvalidArgument
               ? waited
               : device.wait_event(device.default_stream(), event);
}

/// Keeps the first failure of a sequence of calls, which goes on regardless: every step is
/// enqueued, so a step a lost device refuses leaves its claims to the others' work.
struct FirstError {
    Status first;
    void keep(const Status& status) {
        if (first && !status) {
            first = status;
        }
    }
};

}  // namespace

std::uint64_t element_size(ElementType type) {
    return type == ElementType::f64 || type == ElementType::i64 ? 8 : 4;
}

Status all_reduce(std::span<Client> devices, std::span<const Handle> buffers, ElementType type,
                  ReduceOp op) {
    if (Status valid = check_all_reduce(devices, buffers, type); !valid) {
        return valid;
    }
    Client& root = devices[0];
    FirstError errors;
    const KernelArgs args = KernelArgs()
                                .u64(static_cast<std::uint64_t>(op))
                                .u64(static_cast<std::uint64_t>(type));
    std::vector<Handle> staging;  // Held by the work that uses it once enqueued.
    if (Result<Event> own = ready(root, buffers[0])) {
        errors.keep(root.wait_event(root.default_stream(), *own));
    }
    for (std::size_t index = 1; index < devices.size(); ++index) {
        Result<Handle> shared = devices[index].share_with_peers(buffers[index]);
        Result<Event> written = ready(devices[index], buffers[index]);
        Result<Handle> copy = root.allocate(buffers[0].size_in_use());
        if (!shared || !written || !copy) {
            errors.keep(!shared ? Status(shared.error())
                                : !written ? Status(written.error()) : Status(copy.error()));
            continue;
        }
        errors.keep(root.wait_event(root.default_stream(), *written));
        errors.keep(root.copy(*shared, *copy, root.default_stream()));
        errors.keep(root.launch("combine", LaunchConfig::linear(combine_threads),
                                {{buffers[0], AccessMode::ReadWrite}, {*copy, AccessMode::Read}},
                                args));
        staging.push_back(std::move(*copy));
    }
    Result<Handle> result = root.share_with_peers(buffers[0]);
    Result<Event> reduced = root.record_event(root.default_stream());
    for (std::size_t index = 1; index < devices.size() && result && reduced; ++index) {
        errors.keep(wait_on(devices[index], buffers[index], *reduced));
        errors.keep(devices[index].copy(*result, buffers[index]));
    }
    errors.keep(!result ? Status(result.error()) : !reduced ? Status(reduced.error()) : Status{});
    return errors.first;
}

}  // namespace tandem
