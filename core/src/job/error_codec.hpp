#pragma once

// An error in bytes, so that a report crosses from one rank's process to another's whole.
//
// When a rank reads memory another rank owns and a byte of it is claimed by a failure, the owner
// sends the error itself: kind, message, typed details, the chain of skipped work, the root and
// every cause. A reader on the other side acts on the same fields a local reader would, so nothing
// is flattened to text on the way. Integers are fixed-width little-endian, strings a 32-bit length
// and their bytes, every list a 32-bit count and its entries. The encoding is canonical: an input
// the decoder accepts encodes back to the same bytes.
//
// The bytes come from another process, so the decoder trusts none of them: every length and count
// is checked against the bytes that remain before anything is reserved, lists and nesting are
// bounded by the constants below, and anything else (a truncation, trailing bytes, an unknown
// kind or details type) is refused whole. Decoding costs one pass and memory in proportion to the
// input.

#include "tandem/core/error.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace tandem::job_detail {

/// The most errors nested inside one another, the outermost counted: an `Unwritten`'s root and
/// each error of a `Several` are one level deeper than the error holding them (causes are not:
/// a cause chain is a list). A report forwarded from rank to rank grows a level a hop.
constexpr std::size_t error_nesting_max = 16;
/// The most entries of any one list: skip records of a chain, keys a skipped launch produced,
/// errors of a `Several`, and links of a cause chain (the error itself counted). Far above what
/// a failure graph keeps (16 skip records).
constexpr std::size_t error_list_entries_max = 1024;

/// `error` as bytes: every field of its details, its root and its cause chain. An error past the
/// bounds above encodes all the same, and its receiver refuses it.
std::string encode(const Error& error);
/// The error `bytes` encode; nullopt when they are anything but one whole error within the
/// bounds above.
std::optional<Error> decode_error(std::string_view bytes);
/// One hop of skipped work as bytes (what a peer rank's skipped work records on the owner).
std::string encode(const SkipRecord& hop);
/// The hop `bytes` encode; nullopt when they are anything but one whole hop.
std::optional<SkipRecord> decode_skip_record(std::string_view bytes);

}  // namespace tandem::job_detail
