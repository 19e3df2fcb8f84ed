// Errors as bytes and back. The format, and what the decoder refuses, are in error_codec.hpp.

#include "error_codec.hpp"

#include <cassert>
#include <concepts>
#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace tandem::job_detail {
namespace {

// The fewest bytes an entry of each kind of list takes, so that a count is checked against the
// bytes that remain before a single entry is reserved.
constexpr std::size_t length_bytes = 4;
constexpr std::size_t service_id_bytes = 8 + 4 + 4 + 4;
constexpr std::size_t claim_key_bytes = 8 + 8 + 8;
constexpr std::size_t skip_record_bytes_min =
    length_bytes + service_id_bytes + claim_key_bytes + length_bytes;
// A kind, an empty message and the index of no details.
constexpr std::size_t error_link_bytes_min = 1 + length_bytes + 1;
constexpr std::size_t error_bytes_min = length_bytes + error_link_bytes_min;

template <std::unsigned_integral Integer>
void append_integer(std::string& out, Integer value) {
    for (std::size_t byte = 0; byte < sizeof(Integer); ++byte) {
        out.push_back(static_cast<char>((value >> (8 * byte)) & 0xff));
    }
}

void append_length(std::string& out, std::size_t length) {
    assert(length <= std::numeric_limits<std::uint32_t>::max());
    append_integer(out, static_cast<std::uint32_t>(length));
}

void append_text(std::string& out, std::string_view text) {
    append_length(out, text.size());
    out += text;
}

void append(std::string& out, const ServiceId& service) {
    append_integer(out, service.runtime_id);
    append_integer(out, service.device_index);
    append_integer(out, service.runtime_number);
    append_integer(out, service.rank);
}

void append(std::string& out, const ClaimKey& key) {
    append_integer(out, key.memory.value);
    append_integer(out, key.range.begin);
    append_integer(out, key.range.end);
}

void append(std::string& out, const SkipRecord& hop) {
    append_text(out, hop.kernel);
    append(out, hop.device);
    append(out, hop.needed);
    append_length(out, hop.produced.size());
    for (const ClaimKey& key : hop.produced) {
        append(out, key);
    }
}

void append_error(std::string& out, const Error& error);

void append_details(std::string&, std::monostate) {}

void append_details(std::string& out, const OutOfMemoryDetails& details) {
    append_integer(out, details.requested_bytes);
    append_integer(out, details.free_bytes);
    append_integer(out, details.reserved_bytes);
    append_integer(out, details.largest_free_block_bytes);
}

void append_details(std::string& out, const WrongServiceDetails& details) {
    append(out, details.expected);
    append(out, details.actual);
}

void append_details(std::string& out, const LaunchRefusedDetails& details) {
    append_text(out, details.kernel);
}

void append_details(std::string& out, const KernelFailedDetails& details) {
    append_text(out, details.kernel);
    append(out, details.device);
    append_integer(out, details.stream.value);
    append_integer(out, details.code);
    append_integer(out, static_cast<std::uint8_t>(details.injected ? 1 : 0));
    append_integer(out, details.fault_entry);
}

void append_details(std::string& out, const UnwrittenDetails& details) {
    assert(details.root && "an Unwritten error always names its root");
    append_integer(out, details.failure.value);
    append_integer(out, details.allocations);
    append_length(out, details.chain.size());
    for (const SkipRecord& hop : details.chain) {
        append(out, hop);
    }
    append_integer(out, details.dropped_records);
    append_error(out, *details.root);
}

void append_details(std::string& out, const SeveralDetails& details) {
    append_length(out, details.errors.size());
    for (const Error& each : details.errors) {
        append_error(out, each);
    }
}

void append_details(std::string& out, const DeviceLostDetails& details) {
    append(out, details.device);
}

void append_details(std::string& out, const PeerUnreachableDetails& details) {
    append(out, details.from);
    append(out, details.to);
}

// The cause chain goes as a list of links rather than one error inside another, so that a long
// chain costs neither side any depth of recursion.
void append_error(std::string& out, const Error& error) {
    std::size_t links = 0;
    for (const Error* link = &error; link != nullptr; link = link->cause()) {
        ++links;
    }
    append_length(out, links);
    for (const Error* link = &error; link != nullptr; link = link->cause()) {
        append_integer(out, static_cast<std::uint8_t>(link->kind()));
        append_text(out, link->message());
        append_integer(out, static_cast<std::uint8_t>(link->details().index()));
        std::visit([&out](const auto& details) { append_details(out, details); }, link->details());
    }
}

/// The bytes of an encoding not read yet. Any read that fails refuses the whole input and every
/// later read fails too (returning zeros), so a reader checks `ok()` only before it trusts what
/// it read: to build an error, to go on to the next entry of a list.
class Reader {
public:
    explicit Reader(std::string_view bytes) : rest_(bytes) {}

    template <std::unsigned_integral Integer>
    Integer integer() {
        if (rest_.size() < sizeof(Integer)) {
            refuse();
            return 0;
        }
        Integer value = 0;
        for (std::size_t byte = sizeof(Integer); byte-- > 0;) {
            value = static_cast<Integer>((value << 8) | static_cast<unsigned char>(rest_[byte]));
        }
        rest_.remove_prefix(sizeof(Integer));
        return value;
    }
    std::uint8_t u8() { return integer<std::uint8_t>(); }
    std::uint32_t u32() { return integer<std::uint32_t>(); }
    std::uint64_t u64() { return integer<std::uint64_t>(); }

    std::string text() {
        const std::uint32_t length = u32();
        if (length > rest_.size()) {
            refuse();
            return {};
        }
        std::string value(rest_.substr(0, length));
        rest_.remove_prefix(length);
        return value;
    }

    /// A list's count of entries of at least `entry_bytes_min` each: refused past
    /// `error_list_entries_max` or past what the bytes left could hold, so that reserving it
    /// never takes more than the input accounts for.
    std::size_t count(std::size_t entry_bytes_min) {
        const std::size_t entries = u32();
        if (entries > error_list_entries_max || entries * entry_bytes_min > rest_.size()) {
            refuse();
            return 0;
        }
        return entries;
    }

    void refuse() {
        refused_ = true;
        rest_ = {};
    }
    [[nodiscard]] bool ok() const { return !refused_; }
    [[nodiscard]] bool finished() const { return !refused_ && rest_.empty(); }

private:
    std::string_view rest_;
    bool refused_ = false;
};

// Aggregates below are read in braced initializers, which evaluate in the order written.

ServiceId read_service(Reader& in) {
    return ServiceId{.runtime_id = in.u64(),
                     .device_index = in.u32(),
                     .runtime_number = in.u32(),
                     .rank = in.u32()};
}

ClaimKey read_claim_key(Reader& in) {
    return ClaimKey{.memory = MemoryId{in.u64()},
                    .range = ByteRange{.begin = in.u64(), .end = in.u64()}};
}

SkipRecord read_skip_record(Reader& in) {
    SkipRecord hop;
    hop.kernel = in.text();
    hop.device = read_service(in);
    hop.needed = read_claim_key(in);
    const std::size_t produced = in.count(claim_key_bytes);
    hop.produced.reserve(produced);
    for (std::size_t index = 0; index < produced && in.ok(); ++index) {
        hop.produced.push_back(read_claim_key(in));
    }
    return hop;
}

std::optional<Error> read_error(Reader& in, std::size_t depth);

template <typename Details>
using As = std::type_identity<Details>;

std::monostate read_details(Reader&, As<std::monostate>, std::size_t) { return {}; }

OutOfMemoryDetails read_details(Reader& in, As<OutOfMemoryDetails>, std::size_t) {
    return OutOfMemoryDetails{.requested_bytes = in.u64(),
                              .free_bytes = in.u64(),
                              .reserved_bytes = in.u64(),
                              .largest_free_block_bytes = in.u64()};
}

WrongServiceDetails read_details(Reader& in, As<WrongServiceDetails>, std::size_t) {
    return WrongServiceDetails{.expected = read_service(in), .actual = read_service(in)};
}

LaunchRefusedDetails read_details(Reader& in, As<LaunchRefusedDetails>, std::size_t) {
    return LaunchRefusedDetails{.kernel = in.text()};
}

KernelFailedDetails read_details(Reader& in, As<KernelFailedDetails>, std::size_t) {
    KernelFailedDetails details{.kernel = in.text(),
                                .device = read_service(in),
                                .stream = StreamId{in.u64()},
                                .code = in.u32()};
    const std::uint8_t injected = in.u8();
    if (injected > 1) {  // Any other byte would not encode back to itself.
        in.refuse();
    }
    details.injected = injected == 1;
    details.fault_entry = in.u32();
    return details;
}

UnwrittenDetails read_details(Reader& in, As<UnwrittenDetails>, std::size_t depth) {
    UnwrittenDetails details;
    details.failure = FailureId{in.u64()};
    details.allocations = in.u64();
    const std::size_t hops = in.count(skip_record_bytes_min);
    details.chain.reserve(hops);
    for (std::size_t index = 0; index < hops && in.ok(); ++index) {
        details.chain.push_back(read_skip_record(in));
    }
    details.dropped_records = in.u64();
    // Without a root the input is refused, and the details are dropped with it.
    if (std::optional<Error> root = read_error(in, depth + 1)) {
        details.root = std::make_shared<const Error>(std::move(*root));
    }
    return details;
}

SeveralDetails read_details(Reader& in, As<SeveralDetails>, std::size_t depth) {
    SeveralDetails details;
    const std::size_t errors = in.count(error_bytes_min);
    details.errors.reserve(errors);
    for (std::size_t index = 0; index < errors; ++index) {
        std::optional<Error> each = read_error(in, depth + 1);
        if (!each) {
            break;
        }
        details.errors.push_back(std::move(*each));
    }
    return details;
}

DeviceLostDetails read_details(Reader& in, As<DeviceLostDetails>, std::size_t) {
    return DeviceLostDetails{.device = read_service(in)};
}

PeerUnreachableDetails read_details(Reader& in, As<PeerUnreachableDetails>, std::size_t) {
    return PeerUnreachableDetails{.from = read_service(in), .to = read_service(in)};
}

template <std::size_t Index>
bool read_details_if(Reader& in, std::size_t index, std::size_t depth, ErrorDetails& details) {
    if (index != Index) {
        return false;
    }
    details.emplace<Index>(
        read_details(in, As<std::variant_alternative_t<Index, ErrorDetails>>{}, depth));
    return true;
}

// A details type is named by its index in `ErrorDetails` on both sides: one added to the variant
// fails to build here until it has a reader, and in `append_error` until it has a writer.
template <std::size_t... Index>
ErrorDetails read_details_at(Reader& in, std::size_t index, std::size_t depth,
                             std::index_sequence<Index...>) {
    ErrorDetails details;
    if (!(read_details_if<Index>(in, index, depth, details) || ...)) {
        in.refuse();
    }
    return details;
}

// A switch over every kind, so that a kind added to `ErrorKind` warns here until it is accepted.
bool is_known(ErrorKind kind) {
    switch (kind) {
        case ErrorKind::OutOfMemory:
        case ErrorKind::InvalidArgument:
        case ErrorKind::WrongService:
        case ErrorKind::LaunchRefused:
        case ErrorKind::KernelFailed:
        case ErrorKind::Unwritten:
        case ErrorKind::Several:
        case ErrorKind::DeviceLost:
        case ErrorKind::PeerUnreachable:
        case ErrorKind::TornDown:
            return true;
    }
    return false;
}

/// One link of a cause chain: the error without its cause.
std::optional<Error> read_link(Reader& in, std::size_t depth) {
    const auto kind = static_cast<ErrorKind>(in.u8());
    if (!is_known(kind)) {
        in.refuse();
        return std::nullopt;
    }
    std::string message = in.text();
    const std::uint8_t index = in.u8();
    ErrorDetails details = read_details_at(
        in, index, depth, std::make_index_sequence<std::variant_size_v<ErrorDetails>>{});
    if (!in.ok()) {
        return std::nullopt;
    }
    return Error(kind, std::move(message), std::move(details));
}

/// An error `depth` levels deep (the outermost is 1) with its cause chain; nullopt exactly when
/// the input is refused.
std::optional<Error> read_error(Reader& in, std::size_t depth) {
    if (depth > error_nesting_max) {
        in.refuse();
        return std::nullopt;
    }
    const std::size_t links = in.count(error_link_bytes_min);
    if (links == 0) {  // Every error is at least itself; a refused count reads as 0 too.
        in.refuse();
        return std::nullopt;
    }
    std::vector<Error> chain;
    chain.reserve(links);
    for (std::size_t index = 0; index < links; ++index) {
        std::optional<Error> link = read_link(in, depth);
        if (!link) {
            return std::nullopt;
        }
        chain.push_back(std::move(*link));
    }
    // Linked from the far end, each link taking the chain behind it as its cause: a link has no
    // cause of its own yet, so each step is one copy of that link, not of the chain.
    Error error = std::move(chain.back());
    for (auto link = chain.rbegin() + 1; link != chain.rend(); ++link) {
        error = link->caused_by(std::move(error));
    }
    return error;
}

}  // namespace

std::string encode(const Error& error) {
    std::string bytes;
    append_error(bytes, error);
    return bytes;
}

std::optional<Error> decode_error(std::string_view bytes) {
    Reader in(bytes);
    std::optional<Error> error = read_error(in, 1);
    assert(error.has_value() == in.ok());
    if (!in.finished()) {
        return std::nullopt;
    }
    return error;
}

std::string encode(const SkipRecord& hop) {
    std::string bytes;
    append(bytes, hop);
    return bytes;
}

std::optional<SkipRecord> decode_skip_record(std::string_view bytes) {
    Reader in(bytes);
    SkipRecord hop = read_skip_record(in);
    if (!in.finished()) {
        return std::nullopt;
    }
    return hop;
}

}  // namespace tandem::job_detail
