#include "tandem/core/ids.hpp"

#include "label_table.hpp"

#include <atomic>

namespace tandem {

std::uint32_t next_runtime_number() {
    static std::atomic<std::uint32_t> created{0};
    return created.fetch_add(1, std::memory_order_relaxed) + 1;
}

std::string to_string(ServiceId service) {
    std::string text = "device " + std::to_string(service.device_index);
    // A rank's device is named by its rank alone: the number its process gave its runtime would
    // make a report read differently when the job's ranks share a process (a simulated job) and
    // when each has its own, and in another process it would name nothing.
    if (service.rank != ServiceId::no_rank) {
        return text + " of rank " + std::to_string(service.rank);
    }
    if (service.runtime_number > 1) {  // The first runtime, the common case, goes unnamed.
        text += " of runtime " + std::to_string(service.runtime_number);
    }
    return text;
}

std::string to_string(StreamId stream) { return "stream " + std::to_string(stream.value); }

std::string to_string(MemoryId memory) {
    std::string text = "memory #" + std::to_string(memory.count());
    if (const std::optional<std::uint32_t> rank = memory.rank_of()) {
        text += " of rank " + std::to_string(*rank);
    }
    // Beside the id, not instead of it: reports of two runs still compare by id.
    if (std::optional<std::string> label = detail::LabelTable::of(memory)) {
        text += " '" + *label + "'";
    }
    return text;
}

std::string to_string(FailureId failure) { return "failure #" + std::to_string(failure.value); }

std::string to_string(ByteRange range) {
    return "[" + std::to_string(range.begin) + ", " + std::to_string(range.end) + ")";
}

std::string to_string(const ClaimKey& key) {
    return to_string(key.memory) + " bytes " + to_string(key.range);
}

}  // namespace tandem
