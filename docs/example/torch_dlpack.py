#!/usr/bin/env python3
"""PyTorch tensors in and out of tandem without a copy, through DLPack.

    torch_dlpack.py <path of libtandem_torch_dlpack.so> <backend: cuda, sim or reference>

On cuda the tensors live on GPU 0; on the simulator and the reference backend, on the CPU. The
library (torch_dlpack.cpp) adopts a tensor's own memory, runs kernels on it and hands results
back as tensors over tandem's memory. The checks: the values, that no byte was copied (the data
pointers tandem used are the tensors' own), that tandem writes in place into PyTorch's memory,
and that a strided tensor is refused with a specific error and left as it was. Exits 77
(skipped) where PyTorch, or a GPU for cuda, is missing.
"""
import ctypes
import gc
import sys

SKIPPED = 77

try:
    import torch
    import torch.utils.dlpack
except ImportError:
    print("PyTorch is not installed here")
    sys.exit(SKIPPED)

# The capsule names of the DLPack protocol. Kept alive for the life of the capsules named by
# them: a capsule keeps the pointer to its name, not a copy.
DLTENSOR = ctypes.c_char_p(b"dltensor")
USED_DLTENSOR = ctypes.c_char_p(b"used_dltensor")

get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
get_pointer.restype = ctypes.c_void_p
get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
set_name = ctypes.pythonapi.PyCapsule_SetName
set_name.restype = ctypes.c_int
set_name.argtypes = [ctypes.py_object, ctypes.c_char_p]
new_capsule = ctypes.pythonapi.PyCapsule_New
new_capsule.restype = ctypes.py_object
new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


def hand_in(tensor):
    """`tensor` as a `DLManagedTensor*` that tandem now owns (its capsule is marked used)."""
    capsule = torch.utils.dlpack.to_dlpack(tensor)
    pointer = get_pointer(capsule, DLTENSOR)
    set_name(capsule, USED_DLTENSOR)
    return ctypes.c_void_p(pointer)


def take_out(pointer):
    """The `DLManagedTensor*` tandem gave out, as a PyTorch tensor over the same memory."""
    return torch.utils.dlpack.from_dlpack(new_capsule(pointer, DLTENSOR, None))


def check(condition, what):
    if not condition:
        print(f"FAILED: {what}")
        sys.exit(1)


def main():
    library_path, backend = sys.argv[1], sys.argv[2]
    on_gpu = backend == "cuda"
    if on_gpu and not torch.cuda.is_available():
        print("no GPU visible to PyTorch")
        return SKIPPED
    device = torch.device("cuda:0" if on_gpu else "cpu")
    library = ctypes.CDLL(library_path)
    library.tandem_torch_error.restype = ctypes.c_char_p
    library.tandem_torch_scale.argtypes = [ctypes.c_void_p, ctypes.c_double,
                                           ctypes.POINTER(ctypes.c_void_p),
                                           ctypes.POINTER(ctypes.c_uint64),
                                           ctypes.POINTER(ctypes.c_uint64)]
    library.tandem_torch_axpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_double]
    opened = library.tandem_torch_open(backend.encode())
    if opened != 0:
        return opened

    x = torch.arange(4096, dtype=torch.float32, device=device)
    if on_gpu:
        torch.cuda.synchronize()  # tandem orders its work after its own, not after PyTorch's.
    output = ctypes.c_void_p()
    input_address = ctypes.c_uint64()
    output_address = ctypes.c_uint64()
    status = library.tandem_torch_scale(hand_in(x), 3.0, ctypes.byref(output),
                                        ctypes.byref(input_address), ctypes.byref(output_address))
    check(status == 0, f"scale: {library.tandem_torch_error().decode()}")
    y = take_out(output.value)
    check(y.device == device, f"the result is on {y.device}, not {device}")
    check(torch.equal(y, 3 * x), "the result is 3 x")
    check(input_address.value == x.data_ptr(), "tandem read x's own memory, not a copy")
    check(output_address.value == y.data_ptr(), "the result is tandem's memory, not a copy")
    print(f"scale: 3 x computed by tandem on {backend} from PyTorch's memory, handed back in place")

    z = torch.ones(4096, dtype=torch.float32, device=device)
    if on_gpu:
        torch.cuda.synchronize()
    status = library.tandem_torch_axpy(hand_in(x), hand_in(z), 2.0)
    check(status == 0, f"axpy: {library.tandem_torch_error().decode()}")
    check(torch.equal(z, 2 * x + 1), "tandem wrote 2 x + 1 into PyTorch's own z")
    print("axpy: z = 2 x + z written by tandem into PyTorch's memory")

    strided = torch.zeros(4096, dtype=torch.float32, device=device)[::2]
    status = library.tandem_torch_scale(hand_in(strided), 3.0, ctypes.byref(output),
                                        ctypes.byref(input_address), ctypes.byref(output_address))
    error = library.tandem_torch_error().decode()
    check(status != 0 and "compact" in error, f"a strided tensor is refused as not compact: {error}")
    check(torch.count_nonzero(strided).item() == 0, "the refused tensor is left as it was")
    print("a strided tensor is refused:", error.splitlines()[0])

    del y, z, strided, x
    gc.collect()  # Every tensor tandem gave out goes before its runtime does.
    library.tandem_torch_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
