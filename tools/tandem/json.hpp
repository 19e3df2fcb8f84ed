#pragma once

// The little JSON the tool writes (results and Chrome traces): strings escaped per RFC 8259.
// JSON text is UTF-8, and names and paths come from files and the command line, which need not
// be: a byte that does not belong to a well-formed UTF-8 sequence is written as U+FFFD, so every
// parser accepts the output.

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace tandem::tool {

/// The length of the well-formed UTF-8 sequence at the start of `text`, or 0 if none starts there
/// (a stray continuation byte, a truncated sequence, an overlong form, a surrogate, or a code
/// point past U+10FFFF).
inline std::size_t utf8_sequence_length(std::string_view text) {
    const auto byte = [&](std::size_t index) { return static_cast<unsigned char>(text[index]); };
    const unsigned char lead = byte(0);
    std::size_t length = 0;
    std::uint32_t low = 0;
    if (lead < 0x80) {
        return 1;
    } else if (lead >= 0xc2 && lead <= 0xdf) {
        length = 2;
        low = 0x80;
    } else if (lead >= 0xe0 && lead <= 0xef) {
        length = 3;
        low = 0x800;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
        length = 4;
        low = 0x10000;
    } else {
        return 0;
    }
    if (text.size() < length) {
        return 0;
    }
    std::uint32_t code = lead & (0x7f >> length);
    for (std::size_t index = 1; index < length; ++index) {
        if ((byte(index) & 0xc0) != 0x80) {
            return 0;
        }
        code = (code << 6) | (byte(index) & 0x3f);
    }
    const bool surrogate = code >= 0xd800 && code <= 0xdfff;
    return code >= low && code <= 0x10ffff && !surrogate ? length : 0;
}

inline std::string json_string(std::string_view text) {
    std::string out = "\"";
    for (std::size_t at = 0; at < text.size();) {
        const char c = text[at];
        const std::size_t length = utf8_sequence_length(text.substr(at));
        if (length == 0) {
            out += "\\ufffd";  // Not UTF-8: the replacement character.
            ++at;
            continue;
        }
        if (length > 1) {
            out.append(text.substr(at, length));
            at += length;
            continue;
        }
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    char escaped[8];
                    std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
                    out += escaped;
                } else {
                    out += c;
                }
        }
        ++at;
    }
    return out + "\"";
}

}  // namespace tandem::tool
