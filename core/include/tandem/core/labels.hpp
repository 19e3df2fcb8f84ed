#pragma once

// Labels a program gives its allocations and streams, so that a report names them in the
// program's words: "memory #3 'weights'", "stream 2 'copy-in'". The id stays in front, so reports
// of two runs still compare by id; the label is for the reader.
//
// Reports are often built from ids alone (a claim key, a skip record, a kernel failure's device
// and stream), so the labels live in one table of the process, keyed by memory id and by device
// and stream. What it costs: a labelled allocation or stream takes a lock and a heap entry when
// it is made and when it goes; an unlabelled one, and every launch, pays nothing, since naming
// looks into the table only while some label is live (one atomic load otherwise).

#include "tandem/core/ids.hpp"
#include "tandem/core/result.hpp"

#include <cstddef>
#include <string>
#include <string_view>

namespace tandem {

/// The longest label, in bytes: a label names a thing in a report line, it is not a description.
inline constexpr std::size_t label_bytes_max = 64;

/// The most labels live in a process at once, of allocations and streams together: a bound on
/// what a program that labels without releasing holds. Past it, a labelled allocation or stream
/// is refused (`InvalidArgument`); unlabelled ones are not affected.
inline constexpr std::size_t labels_live_max = std::size_t{1} << 16;

/// Whether `label` may label an allocation or a stream: at most `label_bytes_max` bytes of
/// printable ASCII (space to tilde), with no single quote, which encloses a label in reports. The
/// empty label is allowed and means none. `InvalidArgument` naming the problem otherwise.
Status check_label(std::string_view label);

/// `stream` of `device` in words, with its label when the program gave it one
/// (`Client::create_stream(label)`): "stream 2 'copy-in'"; as `to_string(stream)` otherwise.
std::string stream_name(ServiceId device, StreamId stream);

}  // namespace tandem
