#include "buffer_check.hpp"

#include <climits>
#include <string>

namespace tandem::mpi {

Status detail::check_buffer(const Client& device, const Handle& buffer, std::uint64_t element) {
    if (buffer.empty()) {
        return Error::invalid_argument("a collective takes a buffer, not an empty handle");
    }
    if (buffer.service() != device.service()) {
        return Error::invalid_argument("a collective takes a buffer of the communicator's device "
                                       "on this rank");
    }
    const std::uint64_t bytes = buffer.size_in_use();
    if (bytes % element != 0) {
        return Error::invalid_argument("a buffer of " + std::to_string(bytes) +
                                       " bytes is no whole number of " + std::to_string(element) +
                                       "-byte elements");
    }
    if (bytes / element > static_cast<std::uint64_t>(INT_MAX)) {
        return Error::invalid_argument("a collective through MPI takes at most " +
                                       std::to_string(INT_MAX) + " elements");
    }
    return {};
}

}  // namespace tandem::mpi
