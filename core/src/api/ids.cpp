#include "tandem/core/ids.hpp"

#include <cstdio>

namespace tandem {

std::string to_string(ServiceId service) {
    char text[48];
    std::snprintf(text, sizeof text, "device %u of runtime %016llx", service.device_index,
                  static_cast<unsigned long long>(service.runtime_id));
    return text;
}

std::string to_string(StreamId stream) { return "stream " + std::to_string(stream.value); }

std::string to_string(MemoryId memory) { return "memory #" + std::to_string(memory.value); }

std::string to_string(FailureId failure) { return "failure #" + std::to_string(failure.value); }

std::string to_string(ByteRange range) {
    return "[" + std::to_string(range.begin) + ", " + std::to_string(range.end) + ")";
}

std::string to_string(const ClaimKey& key) {
    return to_string(key.memory) + " bytes " + to_string(key.range);
}

}  // namespace tandem
