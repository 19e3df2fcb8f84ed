// Kernels of a program's own: launched typed (resolved at compile time) or by name once
// registered, they get what a catalog kernel gets on every backend: the same claims, the same
// skip of a consumer of failed work (C9, C13 on the device), the same refusal of what cannot run
// (C10) with a report that says what to do.

#include "support.hpp"
#include "user_kernels.hpp"

#include "tandem/core/host_kernels.hpp"

namespace tandem::conformance {

TANDEM_REGISTER_KERNEL(AddByte);

namespace {

template <typename Backend>
class UserKernels : public Conformance<Backend> {};
TYPED_TEST_SUITE(UserKernels, Backends, BackendNames);

TYPED_TEST(UserKernels, a_typed_launch_of_a_kernel_of_the_program_computes_and_releases) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle input = this->allocate(client, 256);
    Handle output = this->allocate(client, 256);
    this->fill(client, input, 40);
    this->fail(client, output, 3);  // Claimed: the typed launch's success must release it (C3).
    ASSERT_TRUE(client.launch<AddByte>(LaunchConfig::linear(256), {in(input), out(output)},
                                       KernelArgs().u64(2)));
    EXPECT_EQ(this->read_bytes(client, output), filled(256, 42));
}

TYPED_TEST(UserKernels, a_registered_kernel_of_the_program_launches_by_name) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle input = this->allocate(client, 64);
    Handle output = this->allocate(client, 64);
    this->fill(client, input, 7);
    ASSERT_TRUE(client.launch(AddByte::name, LaunchConfig::linear(64), {in(input), out(output)},
                              KernelArgs().u64(1)));
    EXPECT_EQ(this->read_bytes(client, output), filled(64, 8));
}

TYPED_TEST(UserKernels, c9_a_kernel_of_the_program_reading_failed_bytes_is_skipped) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle input = this->allocate(client, 64);
    Handle output = this->allocate(client, 64);
    this->fill(client, output, 9);
    this->fail(client, input, 17);
    ASSERT_TRUE(client.launch<AddByte>(LaunchConfig::linear(64), {in(input), out(output)},
                                       KernelArgs().u64(1)));
    std::optional<Error> error = this->read_error(client, output);
    ASSERT_TRUE(error);
    EXPECT_EQ(root_code(*error), 17u) << error->report();
    const UnwrittenDetails* details = unwritten(*error);
    ASSERT_NE(details, nullptr);
    ASSERT_FALSE(details->chain.empty()) << error->report();
    EXPECT_EQ(details->chain.back().kernel, AddByte::name) << error->report();
}

TYPED_TEST(UserKernels, c10_a_misspelt_name_is_refused_naming_the_closest_registered_kernel) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle input = this->allocate(client, 64);
    Handle output = this->allocate(client, 64);
    this->fill(client, input, 1);
    const Status launched = client.launch("conformance_add_bite", LaunchConfig::linear(64),
                                          {in(input), out(output)}, KernelArgs().u64(1));
    ASSERT_FALSE(launched);
    EXPECT_NE(launched.error().message().find("did you mean 'conformance_add_byte'"),
              std::string::npos)
        << launched.error().report();
    std::optional<Error> error = this->read_error(client, output);
    ASSERT_TRUE(error);
    const Error& root = *root_of(*error);
    EXPECT_EQ(root.kind(), ErrorKind::LaunchRefused) << root.report();
    EXPECT_NE(root.message().find("did you mean 'conformance_add_byte'"), std::string::npos)
        << root.message();
    EXPECT_NE(root.message().find(" fill"), std::string::npos) << root.message();  // The list.
    EXPECT_EQ(this->read_bytes(client, input), filled(64, 1));  // Inputs stay readable.
}

TYPED_TEST(UserKernels, c10_a_kernel_with_no_build_for_the_backend_is_refused_saying_so) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle output = this->allocate(client, 64);
    ASSERT_TRUE(client.launch<HostOnly>(LaunchConfig::linear(64), {out(output)}));
    if (runtime->backend() != "cuda") {
        EXPECT_EQ(this->read_bytes(client, output), filled(64, 1));  // A host build runs.
        return;
    }
    std::optional<Error> error = this->read_error(client, output);
    ASSERT_TRUE(error);
    const Error& root = *root_of(*error);
    EXPECT_EQ(root.kind(), ErrorKind::LaunchRefused) << root.report();
    EXPECT_NE(root.message().find("TANDEM_REGISTER_CUDA_KERNEL"), std::string::npos)
        << root.message();
}

/// A kernel of the program that takes a catalog kernel's name.
struct Impostor {
    static constexpr const char* name = "fill";
    template <typename Context>
    void operator()(Context&) const {}
};

TYPED_TEST(UserKernels, registering_another_kernel_under_a_taken_name_is_invalid) {
    Status registered = register_kernel<Impostor>();
    ASSERT_FALSE(registered);
    EXPECT_EQ(registered.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_TRUE(register_kernel<AddByte>());  // The same kernel again changes nothing.
}

}  // namespace
}  // namespace tandem::conformance
