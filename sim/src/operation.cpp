#include "operation.hpp"

namespace tandem::sim {

std::string where(const Operation& operation) {
    return "'" + operation.label + "' (device " + std::to_string(operation.device) + ", stream " +
           std::to_string(operation.stream_local + 1) + ", #" +
           std::to_string(operation.stream_sequence) + ")";
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
    graph.reset();
    copy_source.reset();
    epoch = 0;
    body = nullptr;
    fiber.reset();
    context.reset();
    abandoned = false;
    host.reset();
    blocked = nullptr;
    blocked_on.clear();
    fault.reset();
    failure_code.reset();
    failed_kernel.clear();
    error.reset();
    injected.clear();
    touches_nothing = false;
    held_back = false;
}

}  // namespace tandem::sim
