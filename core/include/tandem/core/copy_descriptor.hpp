#pragma once

// Strided views of a buffer, for reads and writes of non-contiguous tensors, and the tiled view a
// kernel binds as a tensor map.

#include "tandem/core/handle.hpp"
#include "tandem/core/result.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace tandem {

/// A binding seen as an n-dimensional strided array. Strides count elements. Every byte the view
/// reaches lies inside the binding's range: `make` refuses any other view.
class CopyDescriptor {
public:
    /// Bounded so that validation and enumeration stay cheap and a hostile shape is refused.
    static constexpr std::size_t max_rank = 8;

    /// The view of `shape` elements of `elem_size_bytes` each, `strides` elements apart in each
    /// dimension, over `binding`. `InvalidArgument` for a rank of 0 or over `max_rank`, an element
    /// size of 0, a shape and strides of different ranks, or a view that reaches past the binding's
    /// range or whose size wraps.
    static Result<CopyDescriptor> make(BufferBinding binding, std::vector<std::uint64_t> shape,
                                       std::vector<std::uint64_t> strides,
                                       std::uint64_t elem_size_bytes);

    /// The buffer the view is over.
    [[nodiscard]] const BufferBinding& binding() const { return binding_; }
    /// Elements in each dimension, outermost first.
    [[nodiscard]] const std::vector<std::uint64_t>& shape() const { return shape_; }
    /// Elements between neighbours in each dimension, outermost first.
    [[nodiscard]] const std::vector<std::uint64_t>& strides() const { return strides_; }
    /// The size of one element.
    [[nodiscard]] std::uint64_t elem_size_bytes() const { return elem_size_bytes_; }
    /// How many elements the view holds.
    [[nodiscard]] std::uint64_t element_count() const;
    /// The bytes the view covers, as sorted, disjoint, non-empty ranges of the allocation
    /// (adjacent elements fused), in allocation offsets.
    [[nodiscard]] std::vector<ByteRange> byte_ranges() const;
    /// The allocation offset of each element's first byte, in row-major order of the view.
    [[nodiscard]] std::vector<std::uint64_t> element_offsets() const;
    /// The claim key of each element, in view order: what a strided read checks (C6).
    [[nodiscard]] std::vector<ClaimKey> element_keys() const;
    /// The smallest range of allocation offsets that holds every byte of the view (empty, at the
    /// binding's first byte, for a view of no element): what a backend copies to read the view.
    [[nodiscard]] ByteRange extent() const;
    /// Whether no two elements share a byte: a view a write may take (the order of two writes of
    /// one byte would be undefined).
    [[nodiscard]] bool elements_disjoint() const;
    /// The view's elements, in view order, out of `extent_bytes`: the bytes of `extent()`, from
    /// its first. `InvalidArgument` when it holds fewer.
    [[nodiscard]] Result<std::vector<std::byte>> gather(
        std::span<const std::byte> extent_bytes) const;
    /// Places `elements` (the view's elements in view order, `element_count() *
    /// elem_size_bytes()` bytes) into `extent_bytes`, the bytes of `extent()` from its first;
    /// bytes of the extent no element covers are left as they are. `InvalidArgument` for sizes
    /// that do not match.
    Status scatter(std::span<const std::byte> elements, std::span<std::byte> extent_bytes) const;

private:
    CopyDescriptor(BufferBinding binding, std::vector<std::uint64_t> shape,
                   std::vector<std::uint64_t> strides, std::uint64_t elem_size_bytes);
    BufferBinding binding_;
    std::vector<std::uint64_t> shape_;
    std::vector<std::uint64_t> strides_;
    std::uint64_t elem_size_bytes_;
};

/// The tiled view of a tensor map: a tensor of `dims` elements (innermost first) with
/// `strides_bytes` for every dimension but the innermost, read or written in tiles of `box`.
/// On cuda it is encoded for the tensor memory accelerator; on sim it is checked like any access.
struct TensorMapDescriptor {
    /// The most dimensions a tensor map may have, as the tensor memory accelerator allows.
    static constexpr std::size_t max_rank = 5;
    /// Elements in each dimension, innermost first.
    std::vector<std::uint64_t> dims;
    /// Bytes between neighbours in each dimension but the innermost, innermost first.
    std::vector<std::uint64_t> strides_bytes;
    /// The tile's elements in each dimension, innermost first.
    std::vector<std::uint32_t> box;
    /// The size of one element.
    std::uint32_t elem_size_bytes = 0;
};

/// A binding with the descriptor a kernel uses to address it in tiles.
class TensorMapBinding {
public:
    /// `InvalidArgument` unless the descriptor is well formed and every byte it reaches lies in
    /// the binding's range.
    static Result<TensorMapBinding> make(BufferBinding binding, TensorMapDescriptor descriptor);

    /// The buffer the map is over.
    [[nodiscard]] const BufferBinding& binding() const { return binding_; }
    /// The tensor's shape and its tiles.
    [[nodiscard]] const TensorMapDescriptor& descriptor() const { return descriptor_; }

private:
    TensorMapBinding(BufferBinding binding, TensorMapDescriptor descriptor);
    BufferBinding binding_;
    TensorMapDescriptor descriptor_;
};

}  // namespace tandem
