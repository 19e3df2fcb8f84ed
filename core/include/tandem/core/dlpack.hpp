#pragma once

// DLPack interop, without a copy: a handle out as a `DLManagedTensor` (to PyTorch, CuPy, JAX),
// and a `DLManagedTensor` in as a handle of a device. Header-only: it needs `dlpack/dlpack.h`
// (Debian's libdlpack-dev) where it is included, and nothing where it is not.
//
// Tensors are compact and row-major (no strides, or the compact ones); tandem's memory is bytes,
// so the caller says the element type and shape of what goes out.

#include "tandem/core/client.hpp"

#include <dlpack/dlpack.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tandem {
namespace detail {

/// What an exported tensor keeps alive: a handle of its bytes, and its shape.
struct ExportedTensor {
    DLManagedTensor tensor{};
    Handle handle;
    std::vector<std::int64_t> shape;
};

/// The deleter of the tensors `to_dlpack` makes: it drops the handle they hold.
inline void delete_exported(DLManagedTensor* self) {
    delete static_cast<ExportedTensor*>(self->manager_ctx);
}

/// The bytes a compact tensor of `dtype` and `shape` spans, or none when it overflows or a
/// dimension is negative.
inline std::optional<std::uint64_t> compact_bytes(DLDataType dtype, const std::int64_t* shape,
                                                  int ndim) {
    std::uint64_t bytes = (std::uint64_t{dtype.bits} * dtype.lanes + 7) / 8;
    for (int dimension = 0; dimension < ndim; ++dimension) {
        if (shape[dimension] < 0) {
            return std::nullopt;
        }
        const auto extent = static_cast<std::uint64_t>(shape[dimension]);
        if (extent != 0 && bytes > UINT64_MAX / extent) {
            return std::nullopt;
        }
        bytes *= extent;
    }
    return bytes;
}

/// The bytes `tensor` spans compact, or `InvalidArgument` when its coordinates cannot be taken
/// at all: a dimension count below zero, a shape missing, no bytes or more than 2^64, or a first
/// byte whose address wraps.
inline Result<std::uint64_t> spanned_bytes(const DLTensor& tensor) {
    if (tensor.ndim < 0 || (tensor.ndim > 0 && tensor.shape == nullptr)) {
        return Error::invalid_argument("a DLPack tensor with " + std::to_string(tensor.ndim) +
                                       " dimensions and " +
                                       (tensor.shape == nullptr ? "no shape" : "a shape"));
    }
    const std::optional<std::uint64_t> bytes = compact_bytes(tensor.dtype, tensor.shape, tensor.ndim);
    if (!bytes || *bytes == 0) {
        return Error::invalid_argument("a DLPack tensor of no bytes, or of more than 2^64");
    }
    if (tensor.byte_offset > UINT64_MAX - reinterpret_cast<std::uint64_t>(tensor.data)) {
        return Error::invalid_argument(
            "a DLPack tensor whose byte offset " + std::to_string(tensor.byte_offset) +
            " takes its first byte past the end of the address space");
    }
    return *bytes;
}

/// Whether `tensor` has no strides or the compact row-major ones; its shape spans some bytes and
/// at most 2^64 (`spanned_bytes` took it), so the running product does not overflow.
inline bool compact(const DLTensor& tensor) {
    if (tensor.strides == nullptr) {
        return true;
    }
    std::uint64_t expected = 1;  // Unsigned: the extents' product may pass 2^63.
    for (int dimension = tensor.ndim; dimension-- > 0;) {
        if (tensor.shape[dimension] != 1 &&
            (tensor.strides[dimension] < 0 ||
             static_cast<std::uint64_t>(tensor.strides[dimension]) != expected)) {
            return false;
        }
        expected *= static_cast<std::uint64_t>(tensor.shape[dimension]);
    }
    return true;
}

}  // namespace detail

/// `handle` (of `client`'s device) as a DLPack tensor of `dtype` and `shape`, sharing its bytes.
/// The tensor holds a copy of the handle: the bytes stay alive until the consumer calls its
/// deleter. `InvalidArgument` when the shape does not span exactly the handle's bytes. The
/// consumer must order its reads after tandem's writes (a `sync` first, or the same stream).
inline Result<DLManagedTensor*> to_dlpack(Client& client, const Handle& handle, DLDataType dtype,
                                          std::span<const std::int64_t> shape) {
    Result<NativeView> view = client.native(handle);
    if (!view) {
        return view.error();
    }
    const std::optional<std::uint64_t> bytes =
        detail::compact_bytes(dtype, shape.data(), static_cast<int>(shape.size()));
    if (!bytes || *bytes != view->size_bytes) {
        return Error::invalid_argument("a tensor of that type and shape does not span the " +
                                       std::to_string(view->size_bytes) + " bytes of the handle");
    }
    auto* exported = new detail::ExportedTensor{{}, handle, {shape.begin(), shape.end()}};
    DLTensor& tensor = exported->tensor.dl_tensor;
    tensor.data = view->pointer;
    tensor.device = DLDevice{view->on_gpu ? kDLCUDA : kDLCPU, view->on_gpu ? view->ordinal : 0};
    tensor.ndim = static_cast<int>(exported->shape.size());
    tensor.dtype = dtype;
    tensor.shape = exported->shape.data();
    exported->tensor.manager_ctx = exported;
    exported->tensor.deleter = &detail::delete_exported;
    return &exported->tensor;
}

/// `tensor` as a handle of `client`'s device, adopted without a copy (`Client::adopt`): its
/// deleter is called when the last handle and binding are gone. A tensor `to_dlpack` made from a
/// handle of this device comes back as that handle (the tensor is deleted at once).
/// `InvalidArgument` for a null, malformed (dimensions below zero, no shape, no bytes, an offset
/// that wraps) or strided tensor, one on another device (`kDLCUDA` of the client's GPU on CUDA,
/// `kDLCPU` on the simulator and the reference backend), or one whose bytes tandem already holds
/// (a tensor of another device's handle); the tensor is then still the caller's.
inline Result<Handle> from_dlpack(Client& client, DLManagedTensor* tensor) {
    if (tensor == nullptr || tensor->dl_tensor.data == nullptr) {
        return Error::invalid_argument("a DLPack tensor with no data");
    }
    if (tensor->deleter == &detail::delete_exported) {
        const Handle& handle = static_cast<detail::ExportedTensor*>(tensor->manager_ctx)->handle;
        if (handle.service() == client.service()) {
            Handle back = handle;
            tensor->deleter(tensor);
            return back;
        }
    }
    const DLTensor& view = tensor->dl_tensor;
    const Result<std::uint64_t> bytes = detail::spanned_bytes(view);
    if (!bytes) {
        return bytes.error();
    }
    if (!detail::compact(view)) {
        return Error::invalid_argument("only compact row-major DLPack tensors can be adopted");
    }
    Result<NativeView> native = client.native(client.default_stream());
    if (!native) {
        return native.error();
    }
    const DLDevice expected{native->on_gpu ? kDLCUDA : kDLCPU, native->on_gpu ? native->ordinal : 0};
    if (view.device.device_type != expected.device_type ||
        view.device.device_id != expected.device_id) {
        return Error::invalid_argument("the DLPack tensor is on device type " +
                                       std::to_string(view.device.device_type) + " id " +
                                       std::to_string(view.device.device_id) +
                                       ", not this client's device");
    }
    // The first byte's address as a number: a pointer moved past the end of its object is not
    // one a program may form.
    const std::uint64_t first = reinterpret_cast<std::uint64_t>(view.data) + view.byte_offset;
    return client.adopt(AdoptedMemory{
        reinterpret_cast<void*>(first), *bytes, [tensor] {
            if (tensor->deleter != nullptr) {
                tensor->deleter(tensor);
            }
        }});
}

}  // namespace tandem
