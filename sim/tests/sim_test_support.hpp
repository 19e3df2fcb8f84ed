#pragma once

// Helpers shared by the simulator's tests.

#include "tandem/sim/runtime.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <cstring>
#include <sys/stat.h>
#include <vector>

namespace tandem::sim::testing {

inline std::shared_ptr<SimRuntime> make_runtime(SimOptions options = {}) {
    options.capacity_bytes = options.capacity_bytes == (std::uint64_t{1} << 30)
                                 ? std::uint64_t{64} << 20
                                 : options.capacity_bytes;
    auto runtime = SimRuntime::create(options);
    EXPECT_TRUE(runtime) << runtime.error().report();
    return *runtime;
}

inline Handle allocate(Client& client, std::uint64_t size) {
    auto handle = client.allocate(size);
    EXPECT_TRUE(handle) << handle.error().report();
    return *handle;
}

template <typename T>
std::vector<std::byte> bytes_of(const std::vector<T>& values) {
    std::vector<std::byte> bytes(values.size() * sizeof(T));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return bytes;
}

template <typename T>
std::vector<T> values_of(const std::vector<std::byte>& bytes) {
    std::vector<T> values(bytes.size() / sizeof(T));
    std::memcpy(values.data(), bytes.data(), values.size() * sizeof(T));
    return values;
}

inline LaunchArgument in(const Handle& handle) { return {handle, AccessMode::Read, std::nullopt}; }
inline LaunchArgument out(const Handle& handle) { return {handle, AccessMode::Write, std::nullopt}; }
inline LaunchArgument inout(const Handle& handle) {
    return {handle, AccessMode::ReadWrite, std::nullopt};
}

/// The `Unwritten` details of a failed result, or null.
inline const UnwrittenDetails* unwritten(const Error& error) {
    return error.details_as<UnwrittenDetails>();
}

}  // namespace tandem::sim::testing
