#pragma once

// Tensor maps for the GPU's tensor memory accelerator (TMA). The same descriptor the simulator
// checks is encoded with the driver's `cuTensorMapEncodeTiled`, found through the runtime's
// driver entry points, so the backend needs no link against the driver library.
//
// The TMA takes only some descriptors: elements of 1, 2, 4 or 8 bytes, a 16-byte aligned base,
// strides that are multiples of 16 bytes, boxes of at most 256 elements per dimension whose
// innermost row is a multiple of 16 bytes, coordinates that fit 32 bits. A launch whose maps do
// not all qualify moves its tiles with plain loads and stores instead, with the same result.

#include "tandem/core/copy_descriptor.hpp"
#include "tandem/cuda/launch_params.hpp"

#include <cstdint>

namespace tandem::cuda {

/// Encodes `descriptor` over the bytes at `pointer` (device memory) into `encoded`; false when
/// the TMA cannot take the descriptor or the driver has no encoder. Changes nothing on false.
bool encode_for_tma(const TensorMapDescriptor& descriptor, const std::uint8_t* pointer,
                    EncodedTensorMap& encoded);

/// Whether the driver provides `cuTensorMapEncodeTiled`.
bool tma_encoder_available();

/// The bytes of one box of `descriptor`, rounded up to the 128-byte alignment a TMA copy into
/// shared memory needs.
std::uint32_t tma_slot_bytes(const TensorMapDescriptor& descriptor);

}  // namespace tandem::cuda
