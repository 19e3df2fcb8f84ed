#pragma once

// The JSON the tool writes (`--json` results and Chrome traces), through nlohmann-json.
//
// Every document opens with `"schema": json_schema_version`, so a script that reads one can
// refuse a layout it does not know instead of misreading it. Keys keep the order they are written
// in (`ordered_json`), which a person reading the output expects and which costs nothing at these
// sizes.
//
// JSON text is UTF-8, and names and paths come from files and the command line, which need not
// be: nlohmann-json throws on such bytes by default, so every document is written with its
// replace handler, which writes each byte that does not belong to a well-formed UTF-8 sequence
// as U+FFFD. Every parser accepts the output.

#include <nlohmann/json.hpp>

#include <string>

namespace tandem::tool {

using Json = nlohmann::ordered_json;

/// The layout version of every JSON document the tool writes. Raised when a field is removed or
/// changes meaning; adding a field keeps it.
constexpr int json_schema_version = 1;

/// A document for `command`: `{"schema": 1, "command": "<command>"}`, to which the command adds
/// its fields.
inline Json json_document(const char* command) {
    return Json{{"schema", json_schema_version}, {"command", command}};
}

/// The document as text, bytes that are not UTF-8 written as U+FFFD. `indent` below zero writes
/// it on one line.
inline std::string json_text(const Json& document, int indent = -1) {
    return document.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace tandem::tool
