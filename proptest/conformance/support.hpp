#pragma once

// What the conformance tests share: the fixture that makes a runtime of the backend under test,
// and short ways to launch catalog kernels and to look into errors.

#include "backends.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace tandem::conformance {

inline LaunchArgument in(const Handle& handle) { return {handle, AccessMode::Read, std::nullopt}; }
inline LaunchArgument out(const Handle& handle) {
    return {handle, AccessMode::Write, std::nullopt};
}

inline std::vector<std::byte> filled(std::size_t size, std::uint8_t value) {
    return std::vector<std::byte>(size, std::byte{value});
}

/// The `Unwritten` details of an error, or null.
inline const UnwrittenDetails* unwritten(const Error& error) {
    return error.details_as<UnwrittenDetails>();
}

/// The root error of an `Unwritten` report, following cross-device hops to the first error that
/// is not itself a report.
inline const Error* root_of(const Error& error) {
    const Error* current = &error;
    while (const UnwrittenDetails* details = unwritten(*current)) {
        current = details->root.get();
    }
    return current;
}

/// The code of the kernel failure at the root of `error`, or none.
inline std::optional<std::uint32_t> root_code(const Error& error) {
    if (const auto* failed = root_of(error)->details_as<KernelFailedDetails>()) {
        return failed->code;
    }
    return std::nullopt;
}

template <typename Backend>
class Conformance : public ::testing::Test {
public:
    /// A runtime of `devices` devices, or null with `why_not` set: the test then skips.
    std::shared_ptr<Runtime> make(std::uint32_t devices, std::uint64_t seed = 1) {
        Made made = Backend::make(devices, seed);
        why_not = made.why_not;
        return made.runtime;
    }

    Handle allocate(Client& client, std::uint64_t size) {
        Result<Handle> handle = client.allocate(size);
        EXPECT_TRUE(handle) << handle.error().report();
        return *handle;
    }
    Handle allocate(Client& client, std::uint64_t size, StreamId stream) {
        Result<Handle> handle = client.allocate(size, stream);
        EXPECT_TRUE(handle) << handle.error().report();
        return *handle;
    }
    static void fill(Client& client, const Handle& handle, std::uint8_t value,
                     std::optional<StreamId> stream = std::nullopt) {
        ASSERT_TRUE(client.launch(
            "fill", LaunchConfig::linear(std::max<std::uint64_t>(handle.size_in_use(), 1)),
            {out(handle)}, KernelArgs().u64(value), stream.value_or(client.default_stream())));
    }
    static void fail(Client& client, const Handle& handle, std::uint32_t code,
                     std::optional<StreamId> stream = std::nullopt) {
        ASSERT_TRUE(client.launch("fail", LaunchConfig::linear(1), {out(handle)},
                                  KernelArgs().u64(code),
                                  stream.value_or(client.default_stream())));
    }
    static void copy_kernel(Client& client, const Handle& from, const Handle& to,
                            std::optional<StreamId> stream = std::nullopt) {
        ASSERT_TRUE(client.launch(
            "copy", LaunchConfig::linear(std::max(from.size_in_use(), to.size_in_use())),
            {in(from), out(to)}, KernelArgs(), stream.value_or(client.default_stream())));
    }
    /// The error a read of `handle` fails with, or none when it reads.
    static std::optional<Error> read_error(Client& client, const Handle& handle) {
        Result<std::vector<std::byte>> read = client.read(handle);
        if (read) {
            return std::nullopt;
        }
        return read.error();
    }
    /// The bytes of `handle`, failing the test when the read fails.
    static std::vector<std::byte> read_bytes(Client& client, const Handle& handle) {
        Result<std::vector<std::byte>> read = client.read(handle);
        EXPECT_TRUE(read) << read.error().report();
        return read ? *read : std::vector<std::byte>{};
    }
    /// Shares `handle` of `owner` with `accessor` and grants it access (P7).
    static Handle share(Client& owner, const Handle& handle, const Client& accessor) {
        Result<Handle> shared = owner.share_with_peers(handle);
        EXPECT_TRUE(shared) << shared.error().report();
        EXPECT_TRUE(owner.grant_peer_access(accessor.service()));
        return *shared;
    }

    std::string why_not;
};

/// Makes `runtime`, a runtime of `devices` devices of the backend under test, or skips the test
/// naming what this machine lacks.
#define TANDEM_RUNTIME(runtime, devices)                                          \
    std::shared_ptr<Runtime> runtime = this->make(devices);                       \
    if (!runtime) {                                                               \
        GTEST_SKIP() << "needs " << (devices) << " device(s): " << this->why_not; \
    }

}  // namespace tandem::conformance
