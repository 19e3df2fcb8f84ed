#pragma once

// Core's unit tests build handles and peer memory without a backend. They take the key the way a
// backend does, through the backend contract (`Server::key`), which no user header includes.

#include "tandem/backend/server.hpp"

namespace tandem::detail {

/// Never built: it only makes `Server::key` reachable from the tests.
struct RuntimeKeyForTests : Server {
    using Server::key;
};

}  // namespace tandem::detail
