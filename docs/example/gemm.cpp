// A cuBLAS GEMM under tandem's claims (external work): on CUDA it is one cublasSgemm on the
// stream tandem hands over; on the simulator and the reference backend a plain host loop stands
// in. Then the same GEMM on an input whose producer failed: it is never called, and the read of
// its output names the root cause and the skipped GEMM.
#include "example_runtime.hpp"
#include "gemm.hpp"

#include <cmath>
#include <cstring>
#include <vector>

namespace {

using namespace tandem;

/// The host implementation: the reference the CUDA result is checked against, too.
Status host_gemm(GemmShape shape, HostKernelContext& context) {
    auto a = context.buffer<float>(0);
    auto b = context.buffer<float>(1);
    auto c = context.buffer<float>(2);
    for (std::uint32_t row = 0; row < shape.m; ++row) {
        for (std::uint32_t column = 0; column < shape.n; ++column) {
            float sum = 0.0f;
            for (std::uint32_t inner = 0; inner < shape.k; ++inner) {
                sum += a.load(std::uint64_t{row} * shape.k + inner) *
                       b.load(std::uint64_t{inner} * shape.n + column);
            }
            c.store(std::uint64_t{row} * shape.n + column, sum);
        }
    }
    return {};
}

ExternalWork gemm(GemmShape shape, const Handle& a, const Handle& b, const Handle& c) {
    ExternalWork work{"example_gemm",
                      {{a, AccessMode::Read, std::nullopt},
                       {b, AccessMode::Read, std::nullopt},
                       {c, AccessMode::Write, std::nullopt}},
                      {}};
    work.run.host = [shape](HostKernelContext& context) { return host_gemm(shape, context); };
#if TANDEM_HAS_CUDA_KERNELS
    work.run.cuda = cublas_gemm(shape);
#endif
    return work;
}

/// Whether `bytes` holds `expected` within float rounding (cuBLAS sums in another order).
bool close_to(const std::vector<std::byte>& bytes, const std::vector<float>& expected) {
    std::vector<float> got(expected.size());
    if (bytes.size() != got.size() * sizeof(float)) {
        return false;
    }
    std::memcpy(got.data(), bytes.data(), bytes.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
        if (std::fabs(got[i] - expected[i]) > 1e-3f * (1.0f + std::fabs(expected[i]))) {
            std::printf("element %zu: %g, expected %g\n", i, got[i], expected[i]);
            return false;
        }
    }
    return true;
}

}  // namespace

int main() {
    int exit_code = 0;
    std::shared_ptr<Runtime> runtime = open_example_runtime(&exit_code, {.devices = 1});
    if (!runtime) {
        return exit_code;
    }
    Client client = runtime->client(0);
    const GemmShape shape{96, 64, 48};
    Handle a = *client.allocate(std::uint64_t{shape.m} * shape.k * sizeof(float));
    Handle b = *client.allocate(std::uint64_t{shape.k} * shape.n * sizeof(float));
    Handle c = *client.allocate(std::uint64_t{shape.m} * shape.n * sizeof(float));
    std::vector<float> va(std::size_t{shape.m} * shape.k);
    std::vector<float> vb(std::size_t{shape.k} * shape.n);
    std::vector<float> expected(std::size_t{shape.m} * shape.n, 0.0f);
    for (std::size_t i = 0; i < va.size(); ++i) {
        va[i] = static_cast<float>(i % 7) - 3.0f;
    }
    for (std::size_t i = 0; i < vb.size(); ++i) {
        vb[i] = static_cast<float>(i % 5) * 0.5f;
    }
    for (std::uint32_t r = 0; r < shape.m; ++r) {
        for (std::uint32_t col = 0; col < shape.n; ++col) {
            for (std::uint32_t x = 0; x < shape.k; ++x) {
                expected[r * shape.n + col] += va[r * shape.k + x] * vb[x * shape.n + col];
            }
        }
    }
    (void)client.write(a, as_bytes(va));
    (void)client.write(b, as_bytes(vb));
    (void)client.enqueue(gemm(shape, a, b, c));
    Result<std::vector<std::byte>> product = client.read(c);
    if (!product || !close_to(*product, expected)) {
        std::printf("the GEMM did not compute C = A B%s\n",
                    product ? "" : (": " + product.error().report()).c_str());
        return 1;
    }
    std::printf("example_gemm (%ux%ux%u) ran on %s\n", shape.m, shape.n, shape.k,
                std::string(runtime->backend()).c_str());
    // A producer of A fails: the GEMM is skipped, never called, and C reads as unwritten.
    (void)client.launch("fail", LaunchConfig::linear(1), {{a, AccessMode::Write, std::nullopt}},
                        KernelArgs().u64(13));
    (void)client.enqueue(gemm(shape, a, b, c));
    Result<std::vector<std::byte>> skipped = client.read(c);
    if (skipped || skipped.error().report().find("example_gemm") == std::string::npos) {
        std::puts("the GEMM on a failed input should have been skipped, and named");
        return 1;
    }
    std::printf("%s", skipped.error().report().c_str());
    return 0;
}
