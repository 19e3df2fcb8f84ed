#pragma once

// The fields of the job's messages in bytes: fixed-width little-endian integers, strings as a
// 32-bit length and their bytes. A reader trusts nothing it reads: every read is checked against
// the bytes that remain, and the first short read fails the whole message.

#include "tandem/core/ids.hpp"

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace tandem::job_detail {

/// Appends fields to a message.
class WireWriter {
public:
    void u8(std::uint8_t value) { bytes_.push_back(static_cast<char>(value)); }
    void u32(std::uint32_t value) { put(value, 4); }
    void u64(std::uint64_t value) { put(value, 8); }
    void text(std::string_view value) {
        u32(static_cast<std::uint32_t>(value.size()));
        bytes_.append(value);
    }
    void service(const ServiceId& service) {
        u64(service.runtime_id);
        u32(service.device_index);
        u32(service.runtime_number);
        u32(service.rank);
    }
    void key(const ClaimKey& key) {
        u64(key.memory.value);
        u64(key.range.begin);
        u64(key.range.end);
    }
    /// Raw bytes, as the last field (a nested message: the reader takes the rest).
    void rest(std::string_view value) { bytes_.append(value); }
    [[nodiscard]] std::string take() { return std::move(bytes_); }

private:
    void put(std::uint64_t value, int width) {
        for (int index = 0; index < width; ++index) {
            bytes_.push_back(static_cast<char>((value >> (8 * index)) & 0xff));
        }
    }
    std::string bytes_;
};

/// Reads fields off a message; once a read runs past the end, `ok()` is false for good and
/// every read returns zeros.
class WireReader {
public:
    explicit WireReader(std::string_view bytes) : bytes_(bytes) {}

    std::uint8_t u8() { return static_cast<std::uint8_t>(get(1)); }
    std::uint32_t u32() { return static_cast<std::uint32_t>(get(4)); }
    std::uint64_t u64() { return get(8); }
    std::string text() {
        const std::uint32_t size = u32();
        if (!ok_ || size > bytes_.size() - at_) {
            ok_ = false;
            return {};
        }
        std::string value(bytes_.substr(at_, size));
        at_ += size;
        return value;
    }
    ServiceId service() {
        ServiceId value;
        value.runtime_id = u64();
        value.device_index = u32();
        value.runtime_number = u32();
        value.rank = u32();
        return value;
    }
    ClaimKey key() {
        ClaimKey value;
        value.memory.value = u64();
        value.range.begin = u64();
        value.range.end = u64();
        return value;
    }
    /// What is left of the message.
    std::string_view rest() {
        std::string_view value = ok_ ? bytes_.substr(at_) : std::string_view();
        at_ = bytes_.size();
        return value;
    }
    /// Whether every read so far was within the message.
    [[nodiscard]] bool ok() const { return ok_; }
    /// Whether every read was within the message and nothing is left.
    [[nodiscard]] bool done() const { return ok_ && at_ == bytes_.size(); }
    /// Whether `count` entries of at least `each` bytes can still be in the message.
    [[nodiscard]] bool holds(std::uint64_t count, std::uint64_t each) const {
        return ok_ && count <= (bytes_.size() - at_) / each;
    }

private:
    std::uint64_t get(std::size_t width) {
        if (!ok_ || width > bytes_.size() - at_) {
            ok_ = false;
            return 0;
        }
        std::uint64_t value = 0;
        for (std::size_t index = 0; index < width; ++index) {
            value |= std::uint64_t{static_cast<unsigned char>(bytes_[at_ + index])} << (8 * index);
        }
        at_ += width;
        return value;
    }
    std::string_view bytes_;
    std::size_t at_ = 0;
    bool ok_ = true;
};

}  // namespace tandem::job_detail
