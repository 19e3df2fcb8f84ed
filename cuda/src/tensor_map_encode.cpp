#include "tensor_map_encode.hpp"

#include "driver_entry_point.hpp"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <cstring>

namespace tandem::cuda {

namespace {

static_assert(sizeof(EncodedTensorMap) == sizeof(CUtensorMap));
static_assert(alignof(EncodedTensorMap) >= alignof(CUtensorMap));

constexpr std::uint64_t max_stride_bytes = std::uint64_t{1} << 40;
constexpr std::uint64_t max_dim = (std::uint64_t{1} << 31) - 1;  // Coordinates are signed 32-bit.
constexpr std::uint32_t max_box = 256;

/// The driver's encoder, looked up once; null when the driver does not provide it.
PFN_cuTensorMapEncodeTiled_v12000 encoder() {
    static const auto function =
        driver_function<PFN_cuTensorMapEncodeTiled_v12000>("cuTensorMapEncodeTiled", 12000);
    return function;
}

bool element_type(std::uint32_t elem_size_bytes, CUtensorMapDataType& type) {
    switch (elem_size_bytes) {
        case 1:
            type = CU_TENSOR_MAP_DATA_TYPE_UINT8;
            return true;
        case 2:
            type = CU_TENSOR_MAP_DATA_TYPE_UINT16;
            return true;
        case 4:
            type = CU_TENSOR_MAP_DATA_TYPE_UINT32;
            return true;
        case 8:
            type = CU_TENSOR_MAP_DATA_TYPE_UINT64;
            return true;
        default:
            return false;
    }
}

bool qualifies(const TensorMapDescriptor& descriptor, const std::uint8_t* pointer) {
    const std::size_t rank = descriptor.dims.size();
    if (rank == 0 || rank > TensorMapDescriptor::max_rank || descriptor.box.size() != rank ||
        descriptor.strides_bytes.size() + 1 != rank ||
        reinterpret_cast<std::uintptr_t>(pointer) % 16 != 0) {
        return false;
    }
    for (std::size_t dim = 0; dim < rank; ++dim) {
        if (descriptor.dims[dim] == 0 || descriptor.dims[dim] > max_dim ||
            descriptor.box[dim] == 0 || descriptor.box[dim] > max_box) {
            return false;
        }
    }
    for (std::uint64_t stride : descriptor.strides_bytes) {
        if (stride % 16 != 0 || stride >= max_stride_bytes) {
            return false;
        }
    }
    return std::uint64_t{descriptor.box[0]} * descriptor.elem_size_bytes % 16 == 0;
}

}  // namespace

bool tma_encoder_available() { return encoder() != nullptr; }

bool encode_for_tma(const TensorMapDescriptor& descriptor, const std::uint8_t* pointer,
                    EncodedTensorMap& encoded) {
    CUtensorMapDataType type{};
    if (!element_type(descriptor.elem_size_bytes, type) || !qualifies(descriptor, pointer) ||
        encoder() == nullptr) {
        return false;
    }
    const auto rank = static_cast<cuuint32_t>(descriptor.dims.size());
    cuuint64_t dims[TensorMapDescriptor::max_rank] = {};
    cuuint64_t strides[TensorMapDescriptor::max_rank] = {};
    cuuint32_t box[TensorMapDescriptor::max_rank] = {};
    cuuint32_t element_strides[TensorMapDescriptor::max_rank] = {};
    for (cuuint32_t dim = 0; dim < rank; ++dim) {
        dims[dim] = descriptor.dims[dim];
        box[dim] = descriptor.box[dim];
        element_strides[dim] = 1;
        if (dim + 1 < rank) {
            strides[dim] = descriptor.strides_bytes[dim];
        }
    }
    CUtensorMap map{};
    const CUresult result =
        encoder()(&map, type, rank, const_cast<std::uint8_t*>(pointer), dims, strides, box,
                  element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                  CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (result != CUDA_SUCCESS) {
        return false;
    }
    std::memcpy(&encoded, &map, sizeof map);
    return true;
}

std::uint32_t tma_slot_bytes(const TensorMapDescriptor& descriptor) {
    std::uint64_t bytes = descriptor.elem_size_bytes;
    for (std::uint32_t box : descriptor.box) {
        bytes *= box;  // At most 256^5 * 8 bytes: no wrap.
    }
    bytes = (bytes + 127) / 128 * 128;
    return bytes > UINT32_MAX ? UINT32_MAX : static_cast<std::uint32_t>(bytes);
}

}  // namespace tandem::cuda
