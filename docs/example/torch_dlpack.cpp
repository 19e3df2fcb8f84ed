// PyTorch tensors through tandem without a copy (DLPack). A Python program (torch_dlpack.py)
// loads this library and hands it tensors: tandem adopts each tensor's own memory, runs kernels
// on it (the program's own `Scale`, the catalog's `axpy`), and gives results back to PyTorch as
// tensors over tandem's memory. On CUDA, tensors on the GPU; on the simulator and the reference
// backend, tensors on the CPU.
//
// The calls take a `DLManagedTensor*` whose capsule the caller has marked used: tandem owns the
// tensor from then on, and calls its deleter once the last handle of it is gone (or at once, when
// the tensor is refused). A tensor handed in must be complete (`torch.cuda.synchronize()`): tandem
// orders its work after its own, not after PyTorch's stream.
#include "scale_kernel.hpp"

#include "example_runtime.hpp"

#include <tandem/core/dlpack.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace tandem;

std::shared_ptr<Runtime> runtime;
std::string last_error;

int fail(const Error& error) {
    last_error = error.report();
    return 1;
}

/// `tensor` adopted as a handle of device 0; the tensor is deleted when it cannot be.
Result<Handle> take(Client& client, DLManagedTensor* tensor) {
    Result<Handle> handle = from_dlpack(client, tensor);
    if (!handle && tensor != nullptr && tensor->deleter != nullptr) {
        tensor->deleter(tensor);  // Refused, and still ours: the caller gave it up.
    }
    return handle;
}

constexpr DLDataType float32{kDLFloat, 32, 1};

}  // namespace

extern "C" {

/// Opens a runtime of one device on `backend` (cuda, sim, reference): 0 on success, 77 where
/// that backend cannot run here, 1 for anything else.
int tandem_torch_open(const char* backend) {
    int exit_code = 0;
    runtime = open_example_runtime(&exit_code, {.backend = backend, .devices = 1});
    return runtime ? 0 : exit_code;
}

/// Drops the runtime; every tensor tandem gave out must be gone first.
void tandem_torch_close() { runtime.reset(); }

/// The report of the last call that failed.
const char* tandem_torch_error() { return last_error.c_str(); }

/// `*output` = `factor` * `input` (a compact float32 tensor of the runtime's device), computed by
/// the program's own kernel from the input's own memory into a new tandem buffer, given out as a
/// tensor over that buffer. `*input_address` and `*output_address` say where tandem found and put
/// the bytes, for the caller to compare with its tensors' data pointers.
int tandem_torch_scale(DLManagedTensor* input, double factor, DLManagedTensor** output,
                       std::uint64_t* input_address, std::uint64_t* output_address) {
    Client client = runtime->client(0);
    Result<Handle> in = take(client, input);
    if (!in) {
        return fail(in.error());
    }
    const std::vector<std::int64_t> shape(input->dl_tensor.shape,
                                          input->dl_tensor.shape + input->dl_tensor.ndim);
    Result<Handle> out = client.allocate(in->size_in_use());
    if (!out) {
        return fail(out.error());
    }
    const std::uint64_t count = in->size_in_use() / sizeof(float);
    (void)client.launch<Scale>(
        LaunchConfig::linear(count),
        {{*in, AccessMode::Read, std::nullopt}, {*out, AccessMode::Write, std::nullopt}},
        KernelArgs().f64(factor));
    const Handle written[] = {*out};
    if (Status synced = client.sync(written); !synced) {
        return fail(synced.error());  // The bytes must be there before the caller reads them.
    }
    *input_address = reinterpret_cast<std::uint64_t>(client.native(*in)->pointer);
    *output_address = reinterpret_cast<std::uint64_t>(client.native(*out)->pointer);
    Result<DLManagedTensor*> exported = to_dlpack(client, *out, float32, shape);
    if (!exported) {
        return fail(exported.error());
    }
    *output = *exported;
    return 0;
}

/// `y` = `alpha` * `x` + `y`, in place in the memory of the caller's `y` (the catalog's axpy).
int tandem_torch_axpy(DLManagedTensor* x, DLManagedTensor* y, double alpha) {
    Client client = runtime->client(0);
    Result<Handle> in = take(client, x);
    Result<Handle> in_out = take(client, y);
    if (!in || !in_out) {
        return fail(!in ? in.error() : in_out.error());
    }
    const std::uint64_t count = in_out->size_in_use() / sizeof(float);
    (void)client.launch(
        "axpy", LaunchConfig::linear(count),
        {{*in, AccessMode::Read, std::nullopt}, {*in_out, AccessMode::ReadWrite, std::nullopt}},
        KernelArgs().f64(alpha));
    const Handle written[] = {*in_out};
    if (Status synced = client.sync(written); !synced) {
        return fail(synced.error());
    }
    return 0;
}

}  // extern "C"
