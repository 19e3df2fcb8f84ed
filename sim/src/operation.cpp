#include "operation.hpp"

#include <charconv>
#include <iterator>

namespace tandem::sim {

std::string where(const Operation& operation) {
    std::string text;
    where_into(operation, text);
    return text;
}

void where_into(const Operation& operation, std::string& out) {
    const auto number = [&out](std::uint64_t value) {
        char digits[24];
        const auto end = std::to_chars(std::begin(digits), std::end(digits), value).ptr;
        out.append(digits, end);
    };
    out.assign("'");
    out.append(operation.label);
    out.append("' (device ");
    number(operation.device);
    out.append(", stream ");
    number(std::uint64_t{operation.stream_local} + 1);
    out.append(", #");
    number(operation.stream_sequence);
    out.append(")");
}

void Operation::reset() {
    reset_work();
    state = State::Queued;
    stream_local = 0;
    stream_global = 0;
    stream_sequence = 0;
    read_into = {};
    held.clear();
    if (bytes.capacity() > kept_payload_bytes) {
        std::vector<std::byte>().swap(bytes);  // A large write's payload is not kept.
    } else {
        bytes.clear();
    }
    if (launch) {
        // Kept engaged: the next launch swaps its request with this one, storage and all.
        launch->resources.clear();
        launch->external.reset();
        launch->entry = nullptr;
    }
    event = 0;
    remote_event.reset();
    remote_deadline.reset();
    graph.reset();
    copy_source.reset();
    epoch = 0;
    body = nullptr;
    Fiber::recycle(std::move(fiber));  // A finished fiber is kept, with its stack, for reuse.
    bound.clear();  // Its storage is kept for the next launch.
    abandoned = false;
    // `host` is kept: its next launch rebinds it to the device it runs on.
    blocked = nullptr;
    blocked_on.clear();
    fault.reset();
    failure_code.reset();
    failed_kernel.clear();
    failure_injected.reset();
    error.reset();
    injected.clear();
    held_back = false;
}

}  // namespace tandem::sim
