// error_codec: an error crosses to another rank whole. The oracle: a decoded error equals the one
// encoded field by field (and so prints the same report); any input that is not one whole error
// within the bounds decodes to nothing; and whatever the decoder accepts encodes back to exactly
// the bytes it came from.

#include "error_codec.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace tandem::job_detail {
namespace {

ServiceId service(std::uint32_t device, std::uint32_t rank) {
    return ServiceId{.runtime_id = 0x0123'4567'89ab'cdefULL + device,
                     .device_index = device,
                     .runtime_number = 3,
                     .rank = rank};
}

ClaimKey key(std::uint64_t memory, std::uint64_t begin, std::uint64_t end) {
    return ClaimKey{.memory = MemoryId{memory}, .range = ByteRange{.begin = begin, .end = end}};
}

Error kernel_failure() {
    return Error::kernel_failed({.kernel = "saxpy",
                                 .device = service(1, 2),
                                 .stream = StreamId{7},
                                 .code = 42,
                                 .injected = true,
                                 .fault_entry = 3});
}

/// An Unwritten with two hops, dropped records and a root that has a cause of its own.
Error skipped_read() {
    UnwrittenDetails details;
    details.failure = FailureId{9};
    details.allocations = 4;
    details.chain = {
        SkipRecord{"scale", service(0, 2), key(11, 0, 64), {key(12, 0, 64), key(13, 64, 128)}},
        SkipRecord{"reduce", service(1, 2), key(10, 8, 16), {key(11, 0, 64)}},
    };
    details.dropped_records = 5;
    details.root = std::make_shared<const Error>(
        kernel_failure().caused_by(Error::device_lost(service(1, 2), "trap")));
    return Error::unwritten(std::move(details));
}

std::vector<Error> one_of_every_kind() {
    return {
        Error::out_of_memory("pool empty", {.requested_bytes = 1 << 20,
                                            .free_bytes = 4096,
                                            .reserved_bytes = 1 << 24,
                                            .largest_free_block_bytes = 512}),
        Error::invalid_argument("offset past the size"),
        Error::wrong_service(service(0, 1), service(1, ServiceId::no_rank)),
        Error::launch_refused(std::string("nul\0and\xff", 8), "block size 2048"),
        kernel_failure(),
        skipped_read(),
        Error::several({Error::invalid_argument("first"), Error::torn_down("second")}),
        Error::device_lost(service(2, 0), "sticky fault"),
        Error::peer_unreachable(service(0, 0), service(3, 1), "no access path"),
        Error::torn_down("host kernel threw").caused_by(Error::invalid_argument("bad input")),
        // The public constructor pairs any kind with any details; the codec keeps both as sent.
        Error(ErrorKind::TornDown, "", OutOfMemoryDetails{1, 2, 3, 4}),
    };
}

void expect_same(const Error& sent, const Error& got);

void expect_same(const ServiceId& sent, const ServiceId& got) {
    EXPECT_EQ(sent.runtime_id, got.runtime_id);
    EXPECT_EQ(sent.device_index, got.device_index);
    EXPECT_EQ(sent.runtime_number, got.runtime_number);
    EXPECT_EQ(sent.rank, got.rank);
}

void expect_same(const SkipRecord& sent, const SkipRecord& got) {
    EXPECT_EQ(sent.kernel, got.kernel);
    expect_same(sent.device, got.device);
    EXPECT_EQ(sent.needed, got.needed);
    EXPECT_EQ(sent.produced, got.produced);
}

void expect_same(std::monostate, std::monostate) {}

void expect_same(const OutOfMemoryDetails& sent, const OutOfMemoryDetails& got) {
    EXPECT_EQ(sent.requested_bytes, got.requested_bytes);
    EXPECT_EQ(sent.free_bytes, got.free_bytes);
    EXPECT_EQ(sent.reserved_bytes, got.reserved_bytes);
    EXPECT_EQ(sent.largest_free_block_bytes, got.largest_free_block_bytes);
}

void expect_same(const WrongServiceDetails& sent, const WrongServiceDetails& got) {
    expect_same(sent.expected, got.expected);
    expect_same(sent.actual, got.actual);
}

void expect_same(const LaunchRefusedDetails& sent, const LaunchRefusedDetails& got) {
    EXPECT_EQ(sent.kernel, got.kernel);
}

void expect_same(const KernelFailedDetails& sent, const KernelFailedDetails& got) {
    EXPECT_EQ(sent.kernel, got.kernel);
    expect_same(sent.device, got.device);
    EXPECT_EQ(sent.stream, got.stream);
    EXPECT_EQ(sent.code, got.code);
    EXPECT_EQ(sent.injected, got.injected);
    EXPECT_EQ(sent.fault_entry, got.fault_entry);
}

void expect_same(const UnwrittenDetails& sent, const UnwrittenDetails& got) {
    EXPECT_EQ(sent.failure, got.failure);
    EXPECT_EQ(sent.allocations, got.allocations);
    ASSERT_EQ(sent.chain.size(), got.chain.size());
    for (std::size_t hop = 0; hop < sent.chain.size(); ++hop) {
        expect_same(sent.chain[hop], got.chain[hop]);
    }
    EXPECT_EQ(sent.dropped_records, got.dropped_records);
    ASSERT_NE(got.root, nullptr);
    expect_same(*sent.root, *got.root);
}

void expect_same(const SeveralDetails& sent, const SeveralDetails& got) {
    ASSERT_EQ(sent.errors.size(), got.errors.size());
    for (std::size_t each = 0; each < sent.errors.size(); ++each) {
        expect_same(sent.errors[each], got.errors[each]);
    }
}

void expect_same(const DeviceLostDetails& sent, const DeviceLostDetails& got) {
    expect_same(sent.device, got.device);
}

void expect_same(const PeerUnreachableDetails& sent, const PeerUnreachableDetails& got) {
    expect_same(sent.from, got.from);
    expect_same(sent.to, got.to);
}

/// Kind, message, every details field and every link of the cause chain.
void expect_same(const Error& sent, const Error& got) {
    EXPECT_EQ(sent.kind(), got.kind());
    EXPECT_EQ(sent.message(), got.message());
    ASSERT_EQ(sent.details().index(), got.details().index());
    std::visit(
        [&got](const auto& details) {
            expect_same(details, std::get<std::decay_t<decltype(details)>>(got.details()));
        },
        sent.details());
    ASSERT_EQ(sent.cause() == nullptr, got.cause() == nullptr);
    if (sent.cause() != nullptr) {
        expect_same(*sent.cause(), *got.cause());
    }
}

/// `error` encoded and decoded, checked equal to it field by field and in its report.
void expect_round_trip(const Error& error) {
    std::optional<Error> decoded = decode_error(encode(error));
    ASSERT_TRUE(decoded.has_value()) << error.report();
    expect_same(error, *decoded);
    EXPECT_EQ(error.report(), decoded->report());
}

/// `levels` errors nested in one another through an Unwritten's root, the outermost counted.
Error nested(std::size_t levels) {
    Error error = Error::invalid_argument("innermost");
    for (std::size_t level = 1; level < levels; ++level) {
        error = Error::unwritten({.failure = FailureId{level},
                                  .allocations = 1,
                                  .chain = {},
                                  .dropped_records = 0,
                                  .root = std::make_shared<const Error>(error)});
    }
    return error;
}

/// Where an encoding's details begin, for an error without a cause: past the link count, the
/// kind and the message.
std::size_t details_offset(const Error& error) { return 4 + 1 + 4 + error.message().size(); }

void put_u32(std::string& bytes, std::size_t at, std::uint32_t value) {
    for (std::size_t byte = 0; byte < 4; ++byte) {
        bytes[at + byte] = static_cast<char>((value >> (8 * byte)) & 0xff);
    }
}

TEST(ErrorCodec, every_kind_and_every_details_type_round_trips_field_by_field) {
    for (const Error& error : one_of_every_kind()) {
        SCOPED_TRACE(error.report());
        expect_round_trip(error);
    }
}

TEST(ErrorCodec, an_unwritten_keeps_its_chain_its_dropped_records_and_a_root_with_its_cause) {
    const Error sent = skipped_read().caused_by(Error::torn_down("the reader gave up"));
    std::optional<Error> got = decode_error(encode(sent));
    ASSERT_TRUE(got.has_value());
    expect_same(sent, *got);
    const auto* details = got->details_as<UnwrittenDetails>();
    ASSERT_NE(details, nullptr);
    ASSERT_EQ(details->chain.size(), 2u);
    EXPECT_EQ(details->chain[1].kernel, "reduce");
    EXPECT_EQ(details->chain[0].produced.size(), 2u);
    EXPECT_EQ(details->chain[0].device.rank, 2u);
    EXPECT_EQ(details->chain[0].device.runtime_number, 3u);
    EXPECT_EQ(details->dropped_records, 5u);
    ASSERT_NE(details->root->cause(), nullptr);
    EXPECT_EQ(details->root->cause()->kind(), ErrorKind::DeviceLost);
    ASSERT_NE(got->cause(), nullptr);
    EXPECT_EQ(got->cause()->message(), "the reader gave up");
    EXPECT_EQ(sent.report(), got->report());
}

TEST(ErrorCodec, a_several_of_two_keeps_both_in_order_with_their_details) {
    const Error sent =
        Error::several({skipped_read(), Error::wrong_service(service(0, 0), service(1, 4))});
    std::optional<Error> got = decode_error(encode(sent));
    ASSERT_TRUE(got.has_value());
    expect_same(sent, *got);
    const auto* details = got->details_as<SeveralDetails>();
    ASSERT_NE(details, nullptr);
    ASSERT_EQ(details->errors.size(), 2u);
    EXPECT_EQ(details->errors[0].kind(), ErrorKind::Unwritten);
    EXPECT_EQ(details->errors[1].kind(), ErrorKind::WrongService);
    EXPECT_EQ(sent.report(), got->report());
}

TEST(ErrorCodec, every_prefix_of_an_encoding_and_a_trailing_byte_are_refused) {
    const std::string bytes = encode(Error::several({skipped_read(), kernel_failure()}));
    for (std::size_t size = 0; size < bytes.size(); ++size) {
        EXPECT_FALSE(decode_error(std::string_view(bytes).substr(0, size)).has_value())
            << "a prefix of " << size << " of " << bytes.size() << " bytes was accepted";
    }
    EXPECT_TRUE(decode_error(bytes).has_value());
    EXPECT_FALSE(decode_error(bytes + '\0').has_value());
}

TEST(ErrorCodec, an_unknown_kind_details_type_or_flag_byte_is_refused) {
    const Error invalid = Error::invalid_argument("x");
    std::string unknown_kind = encode(invalid);
    unknown_kind[4] = static_cast<char>(static_cast<std::uint8_t>(ErrorKind::TornDown) + 1);
    EXPECT_FALSE(decode_error(unknown_kind).has_value());

    std::string unknown_details = encode(invalid);
    unknown_details[details_offset(invalid)] = static_cast<char>(std::variant_size_v<ErrorDetails>);
    EXPECT_FALSE(decode_error(unknown_details).has_value());

    // `injected` comes just before the fault's number, the last four bytes of a KernelFailed
    // without a cause: only 0 and 1 encode a bool.
    std::string odd_flag = encode(kernel_failure());
    odd_flag[odd_flag.size() - 5] = 2;
    EXPECT_FALSE(decode_error(odd_flag).has_value());
}

TEST(ErrorCodec, a_length_or_count_past_the_bytes_left_is_refused) {
    const Error several = Error::several({Error::invalid_argument("a"), Error::torn_down("b")});
    const std::size_t count_at = details_offset(several);
    for (std::uint32_t count : {0xffff'ffffu, 1000u, 3u}) {
        std::string bytes = encode(several);
        put_u32(bytes, count_at, count);
        EXPECT_FALSE(decode_error(bytes).has_value()) << "a count of " << count;
    }
    std::string huge_message = encode(several);
    put_u32(huge_message, 5, 0xffff'ffffu);
    EXPECT_FALSE(decode_error(huge_message).has_value());
    std::string huge_chain = encode(several);
    put_u32(huge_chain, 0, 0xffff'ffffu);
    EXPECT_FALSE(decode_error(huge_chain).has_value());
    std::string no_link = encode(several);
    put_u32(no_link, 0, 0);
    EXPECT_FALSE(decode_error(no_link).has_value());
}

TEST(ErrorCodec, nesting_up_to_the_bound_is_kept_and_one_level_past_it_refused) {
    expect_round_trip(nested(error_nesting_max));
    EXPECT_FALSE(decode_error(encode(nested(error_nesting_max + 1))).has_value());

    Error several = Error::several({nested(error_nesting_max), Error::torn_down("b")});
    EXPECT_FALSE(decode_error(encode(several)).has_value());
}

TEST(ErrorCodec, a_list_up_to_the_bound_is_kept_and_one_entry_past_it_refused) {
    std::vector<Error> errors(error_list_entries_max, Error::torn_down("one of many"));
    expect_round_trip(Error::several(errors));
    errors.push_back(Error::torn_down("one too many"));
    EXPECT_FALSE(decode_error(encode(Error::several(errors))).has_value());

    // Built from the far end, so each link is added in one step.
    Error chain = Error::invalid_argument("the first cause");
    for (std::size_t link = 1; link < error_list_entries_max; ++link) {
        chain = Error::torn_down("link " + std::to_string(link)).caused_by(chain);
    }
    expect_round_trip(chain);
    EXPECT_FALSE(
        decode_error(encode(Error::torn_down("one link too many").caused_by(chain))).has_value());
}

TEST(ErrorCodec, a_flipped_byte_decodes_to_nothing_or_to_an_error_that_encodes_to_those_bytes) {
    const std::string bytes =
        encode(Error::several({skipped_read(), Error::out_of_memory("full", {1, 2, 3, 4})})
                   .caused_by(Error::peer_unreachable(service(0, 1), service(1, 2), "gone")));
    std::size_t accepted = 0;
    std::size_t refused = 0;
    for (std::size_t at = 0; at < bytes.size(); ++at) {
        for (const unsigned mask : {0x01u, 0x80u, 0xffu}) {
            std::string flipped = bytes;
            flipped[at] = static_cast<char>(static_cast<unsigned char>(flipped[at]) ^ mask);
            std::optional<Error> decoded = decode_error(flipped);
            if (!decoded) {
                ++refused;
                continue;
            }
            ++accepted;
            // The encoding is canonical, so an accepted input is the encoding of what it decoded
            // to.
            EXPECT_EQ(encode(*decoded), flipped) << "byte " << at << " flipped by " << mask;
            EXPECT_FALSE(decoded->report().empty());
        }
    }
    // Flips in messages and figures are accepted, flips in kinds and counts mostly refused: both
    // halves of the oracle ran.
    EXPECT_GT(accepted, 0u);
    EXPECT_GT(refused, 0u);
}

}  // namespace
}  // namespace tandem::job_detail
