#include "tandem/backend/detail/footprint.hpp"

#include "tandem/backend/work.hpp"

namespace tandem::detail {

void Footprint::touch(std::uint64_t memory, bool writes) {
    auto [entry, inserted] = touched_.try_emplace(memory, writes);
    if (!inserted && writes) {
        entry->second = true;
    }
}

void Footprint::add(const Work& work) {
    for (const Target& input : work.inputs) {
        touch(input.key.memory.value, false);
    }
    for (const Target& output : work.outputs) {
        touch(output.key.memory.value, true);
    }
}

void Footprint::add_reads(std::span<const Target> targets) {
    for (const Target& target : targets) {
        touch(target.key.memory.value, false);
    }
}

void Footprint::add_reads(std::span<const ClaimKey> keys) {
    for (const ClaimKey& key : keys) {
        touch(key.memory.value, false);
    }
}

bool Footprint::conflicts(const Work& work) const {
    if (touched_.empty()) {
        return false;
    }
    for (const Target& output : work.outputs) {
        if (touched_.contains(output.key.memory.value)) {
            return true;  // It writes what another reads or writes.
        }
    }
    for (const Target& input : work.inputs) {
        auto found = touched_.find(input.key.memory.value);
        if (found != touched_.end() && found->second) {
            return true;  // It reads what another writes.
        }
    }
    return false;
}

}  // namespace tandem::detail
