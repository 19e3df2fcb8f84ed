#include "tandem/core/copy_descriptor.hpp"

#include <algorithm>
#include <string>

namespace tandem {

namespace {

/// The offset, in elements, of the last element a strided view reaches; empty on overflow.
std::optional<std::uint64_t> last_element(const std::vector<std::uint64_t>& shape,
                                          const std::vector<std::uint64_t>& strides) {
    std::uint64_t last = 0;
    for (std::size_t dim = 0; dim < shape.size(); ++dim) {
        std::uint64_t step = 0;
        if (__builtin_mul_overflow(shape[dim] - 1, strides[dim], &step) ||
            __builtin_add_overflow(last, step, &last)) {
            return std::nullopt;
        }
    }
    return last;
}

/// Whether `reach_bytes` (computed without wrapping) fits the bytes the binding leaves.
Status check_reach(const BufferBinding& binding, std::optional<std::uint64_t> reach_bytes,
                   const char* what) {
    if (!reach_bytes || *reach_bytes > binding.size_in_use()) {
        return Error::invalid_argument(std::string(what) + " reaches past the " +
                                       std::to_string(binding.size_in_use()) +
                                       " bytes of its binding");
    }
    return {};
}

}  // namespace

CopyDescriptor::CopyDescriptor(BufferBinding binding, std::vector<std::uint64_t> shape,
                               std::vector<std::uint64_t> strides, std::uint64_t elem_size_bytes)
    : binding_(std::move(binding)),
      shape_(std::move(shape)),
      strides_(std::move(strides)),
      elem_size_bytes_(elem_size_bytes) {}

Result<CopyDescriptor> CopyDescriptor::make(BufferBinding binding, std::vector<std::uint64_t> shape,
                                            std::vector<std::uint64_t> strides,
                                            std::uint64_t elem_size_bytes) {
    if (shape.empty() || shape.size() > max_rank || shape.size() != strides.size()) {
        return Error::invalid_argument("a copy descriptor needs 1 to " + std::to_string(max_rank) +
                                       " dimensions and one stride per dimension; got " +
                                       std::to_string(shape.size()) + " dimensions and " +
                                       std::to_string(strides.size()) + " strides");
    }
    if (elem_size_bytes == 0) {
        return Error::invalid_argument("a copy descriptor's element size must not be zero");
    }
    bool empty = std::find(shape.begin(), shape.end(), 0) != shape.end();
    if (!empty) {
        std::optional<std::uint64_t> last = last_element(shape, strides);
        std::optional<std::uint64_t> reach;
        std::uint64_t bytes = 0;
        if (last && *last < UINT64_MAX &&
            !__builtin_mul_overflow(*last + 1, elem_size_bytes, &bytes)) {
            reach = bytes;
        }
        if (Status fits = check_reach(binding, reach, "the strided view"); !fits) {
            return fits.error();
        }
        // Strides may repeat elements (a stride of zero reads one element again and again), so
        // a view can yield far more bytes than it reaches: it may yield no more than the binding
        // holds, which also keeps the element count from wrapping.
        std::uint64_t count = 1;
        std::uint64_t yield_bytes = 0;
        bool wraps = false;
        for (std::uint64_t extent : shape) {
            wraps = wraps || __builtin_mul_overflow(count, extent, &count);
        }
        wraps = wraps || __builtin_mul_overflow(count, elem_size_bytes, &yield_bytes);
        if (wraps || yield_bytes > binding.size_in_use()) {
            return Error::invalid_argument(
                "a strided view yields at most the " + std::to_string(binding.size_in_use()) +
                " bytes of its binding; this one repeats elements past them");
        }
    }
    return CopyDescriptor(std::move(binding), std::move(shape), std::move(strides),
                          elem_size_bytes);
}

std::uint64_t CopyDescriptor::element_count() const {
    std::uint64_t count = 1;
    for (std::uint64_t extent : shape_) {
        count *= extent;  // Cannot wrap: a validated view yields at most its binding's bytes.
    }
    return count;
}

std::vector<std::uint64_t> CopyDescriptor::element_offsets() const {
    std::vector<std::uint64_t> offsets;
    std::uint64_t count = element_count();
    offsets.reserve(count);
    std::vector<std::uint64_t> index(shape_.size(), 0);
    for (std::uint64_t n = 0; n < count; ++n) {
        std::uint64_t element = 0;
        for (std::size_t dim = 0; dim < shape_.size(); ++dim) {
            element += index[dim] * strides_[dim];
        }
        offsets.push_back(binding_.offset_start() + element * elem_size_bytes_);
        for (std::size_t dim = shape_.size(); dim-- > 0;) {
            if (++index[dim] < shape_[dim]) {
                break;
            }
            index[dim] = 0;
        }
    }
    return offsets;
}

std::vector<ByteRange> CopyDescriptor::byte_ranges() const {
    std::vector<std::uint64_t> offsets = element_offsets();
    std::sort(offsets.begin(), offsets.end());
    std::vector<ByteRange> ranges;
    for (std::uint64_t offset : offsets) {
        ByteRange element{offset, offset + elem_size_bytes_};
        if (!ranges.empty() && ranges.back().end >= element.begin) {
            ranges.back().end = std::max(ranges.back().end, element.end);
        } else {
            ranges.push_back(element);
        }
    }
    return ranges;
}

TensorMapBinding::TensorMapBinding(BufferBinding binding, TensorMapDescriptor descriptor)
    : binding_(std::move(binding)), descriptor_(std::move(descriptor)) {}

Result<TensorMapBinding> TensorMapBinding::make(BufferBinding binding,
                                                TensorMapDescriptor descriptor) {
    const std::size_t rank = descriptor.dims.size();
    if (rank == 0 || rank > TensorMapDescriptor::max_rank || descriptor.box.size() != rank ||
        descriptor.strides_bytes.size() + 1 != rank) {
        return Error::invalid_argument(
            "a tensor map needs 1 to 5 dimensions, a box extent per dimension and a stride for "
            "every dimension but the innermost");
    }
    const std::uint32_t elem = descriptor.elem_size_bytes;
    if (elem != 1 && elem != 2 && elem != 4 && elem != 8) {
        return Error::invalid_argument("a tensor map's element size must be 1, 2, 4 or 8 bytes");
    }
    for (std::size_t dim = 0; dim < rank; ++dim) {
        // The tensor memory accelerator limits a box to 256 elements per dimension; the simulator
        // keeps the same limit so a descriptor valid on one backend is valid on the other.
        if (descriptor.dims[dim] == 0 || descriptor.box[dim] == 0 || descriptor.box[dim] > 256 ||
            descriptor.box[dim] > descriptor.dims[dim]) {
            return Error::invalid_argument("tensor map dimension " + std::to_string(dim) +
                                           " needs 1 <= box <= min(dim, 256)");
        }
    }
    for (std::uint64_t stride : descriptor.strides_bytes) {
        if (stride % 16 != 0) {
            return Error::invalid_argument("tensor map strides must be multiples of 16 bytes");
        }
    }
    std::optional<std::uint64_t> reach;
    std::uint64_t bytes = 0;
    if (!__builtin_mul_overflow(descriptor.dims[0], elem, &bytes)) {
        reach = bytes;
        for (std::size_t dim = 1; dim < rank && reach; ++dim) {
            std::uint64_t step = 0;
            if (__builtin_mul_overflow(descriptor.dims[dim] - 1, descriptor.strides_bytes[dim - 1],
                                       &step) ||
                __builtin_add_overflow(*reach, step, &*reach)) {
                reach.reset();
            }
        }
    }
    if (Status fits = check_reach(binding, reach, "the tensor map"); !fits) {
        return fits.error();
    }
    return TensorMapBinding(std::move(binding), std::move(descriptor));
}

std::vector<ClaimKey> CopyDescriptor::element_keys() const {
    std::vector<ClaimKey> keys;
    for (std::uint64_t offset : element_offsets()) {
        keys.push_back(ClaimKey{binding_.memory_id(), {offset, offset + elem_size_bytes_}});
    }
    return keys;
}

ByteRange CopyDescriptor::extent() const {
    const std::vector<ByteRange> ranges = byte_ranges();
    if (ranges.empty()) {
        return ByteRange{binding_.offset_start(), binding_.offset_start()};
    }
    return ByteRange{ranges.front().begin, ranges.back().end};
}

bool CopyDescriptor::elements_disjoint() const {
    std::uint64_t covered = 0;
    for (const ByteRange& range : byte_ranges()) {
        covered += range.size_bytes();
    }
    return covered == element_count() * elem_size_bytes_;
}

Result<std::vector<std::byte>> CopyDescriptor::gather(
    std::span<const std::byte> extent_bytes) const {
    const ByteRange whole = extent();
    if (extent_bytes.size() < whole.size_bytes()) {
        return Error::invalid_argument("a strided view's extent holds " +
                                       std::to_string(whole.size_bytes()) + " bytes; " +
                                       std::to_string(extent_bytes.size()) + " were given");
    }
    std::vector<std::byte> bytes;
    bytes.reserve(element_count() * elem_size_bytes_);
    for (std::uint64_t offset : element_offsets()) {
        const std::byte* element = extent_bytes.data() + (offset - whole.begin);
        bytes.insert(bytes.end(), element, element + elem_size_bytes_);
    }
    return bytes;
}

Status CopyDescriptor::scatter(std::span<const std::byte> elements,
                               std::span<std::byte> extent_bytes) const {
    const ByteRange whole = extent();
    if (elements.size() != element_count() * elem_size_bytes_ ||
        extent_bytes.size() < whole.size_bytes()) {
        return Error::invalid_argument(
            "a strided view of " + std::to_string(element_count()) + " elements of " +
            std::to_string(elem_size_bytes_) + " bytes over an extent of " +
            std::to_string(whole.size_bytes()) + " bytes was given " + std::to_string(elements.size()) +
            " bytes into " + std::to_string(extent_bytes.size()));
    }
    const std::byte* next = elements.data();
    for (std::uint64_t offset : element_offsets()) {
        std::copy_n(next, elem_size_bytes_, extent_bytes.data() + (offset - whole.begin));
        next += elem_size_bytes_;
    }
    return {};
}

}  // namespace tandem
