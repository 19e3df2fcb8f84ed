// What the examples share: the runtime they run on, as `tandem::open_runtime` gives it (the
// simulator, or the backend TANDEM_BACKEND names: tandem/open_runtime.hpp), and floats as the
// bytes a write takes. An example that cannot run where it is (asked for CUDA where no GPU is
// visible) exits with `skipped_exit_code`, which ctest counts as skipped.
#pragma once

#include <tandem/open_runtime.hpp>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

/// The exit code of an example that cannot run where it is (no GPU).
inline constexpr int skipped_exit_code = 77;

/// The runtime `tandem::open_runtime(options)` opens, or null after printing why there is none;
/// `*exit_code` is then what the example returns: skipped where no GPU is visible (`DeviceLost`),
/// 1 for anything else (a misspelt TANDEM_BACKEND, say).
inline std::shared_ptr<tandem::Runtime> open_example_runtime(int* exit_code,
                                                             tandem::RuntimeOptions options = {}) {
    tandem::Result<std::shared_ptr<tandem::Runtime>> runtime = tandem::open_runtime(options);
    if (!runtime) {
        std::printf("%s", runtime.error().report().c_str());
        *exit_code = runtime.error().kind() == tandem::ErrorKind::DeviceLost ? skipped_exit_code : 1;
        return nullptr;
    }
    return *runtime;
}

/// The bytes of `values`, as a write takes them.
inline std::vector<std::byte> as_bytes(const std::vector<float>& values) {
    std::vector<std::byte> bytes(values.size() * sizeof(float));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return bytes;
}
