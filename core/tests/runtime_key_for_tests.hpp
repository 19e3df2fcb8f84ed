#pragma once

// Core's unit tests build handles and peer memory without a backend; this is their key.

#include "tandem/core/runtime_key.hpp"

namespace tandem::detail {

struct RuntimeKeyForTests {
    static RuntimeKey key() { return RuntimeKey{}; }
};

}  // namespace tandem::detail
