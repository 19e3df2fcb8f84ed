// A kernel of the program's own (scale_kernel.hpp), launched typed and by name on the installed
// package: on the simulator, or on the backend TANDEM_BACKEND names (reference; cuda where this
// program was built with its CUDA kernels). A misspelt name is refused, naming the closest
// registered kernel.
#include "scale_kernel.hpp"

#include "example_runtime.hpp"

#include <cstdio>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

// By name too, for scenarios and launches by name (the CUDA registration unit also does it).
TANDEM_REGISTER_KERNEL(Scale);

namespace {

using namespace tandem;

/// Whether `handle` reads as `expected`, every element.
bool reads_as(Client& client, const Handle& handle, const std::vector<float>& expected) {
    Result<std::vector<std::byte>> bytes = client.read(handle);
    if (!bytes) {
        std::printf("read failed: %s", bytes.error().report().c_str());
        return false;
    }
    return *bytes == as_bytes(expected);
}

}  // namespace

int main() {
    int exit_code = 0;
    std::shared_ptr<Runtime> runtime = open_example_runtime(&exit_code, {.devices = 1});
    if (!runtime) {
        return exit_code;
    }
    Client client = runtime->client(0);
    constexpr std::size_t count = 1024;
    Handle in = *client.allocate(count * sizeof(float));
    Handle typed = *client.allocate(count * sizeof(float));
    Handle named = *client.allocate(count * sizeof(float));
    std::vector<float> values(count);
    std::vector<float> tripled(count);
    for (std::size_t i = 0; i < count; ++i) {
        values[i] = static_cast<float>(i);
        tripled[i] = 3.0f * static_cast<float>(i);
    }
    (void)client.write(in, as_bytes(values));
    const std::vector<LaunchArgument> arguments = {{in, AccessMode::Read, std::nullopt},
                                                   {typed, AccessMode::Write, std::nullopt}};
    (void)client.launch<Scale>(LaunchConfig::linear(count), arguments, KernelArgs().f64(3.0));
    (void)client.launch("example_scale", LaunchConfig::linear(count),
                        {{in, AccessMode::Read, std::nullopt},
                         {named, AccessMode::Write, std::nullopt}},
                        KernelArgs().f64(3.0));
    if (!reads_as(client, typed, tripled) || !reads_as(client, named, tripled)) {
        std::puts("the kernel did not compute what it should");
        return 1;
    }
    std::printf("example_scale ran on %s, typed and by name\n",
                std::string(runtime->backend()).c_str());
    // The call says so, and what it declared it writes is claimed (C10).
    const Status misspelt = client.launch("example_scal", LaunchConfig::linear(count), arguments,
                                          KernelArgs().f64(3.0));
    if (misspelt ||
        std::strstr(misspelt.error().report().c_str(), "did you mean 'example_scale'") == nullptr) {
        std::puts("a misspelt kernel should have been refused by the launch, naming the closest");
        return 1;
    }
    Result<std::vector<std::byte>> refused = client.read(typed);
    if (refused || std::strstr(refused.error().report().c_str(), "did you mean 'example_scale'") ==
                       nullptr) {
        std::puts("a misspelt kernel should have been refused, naming the closest");
        return 1;
    }
    std::printf("%s", refused.error().report().c_str());
    return 0;
}
