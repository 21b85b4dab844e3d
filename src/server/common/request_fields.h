// What every API's request parser shares: the body itself, field helpers that throw
// ApiError(400) naming the field that is missing or has the wrong type, sampling, stop and
// max_tokens, tool_choice and reply-format checks, and the info routes' small bodies. Each
// API's own parser sits with its format: chat/chat_request.h, anthropic/anthropic_request.h,
// responses/responses_request.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/common/generation_request.h"
#include "server/config/options.h"

namespace qmlx::server {

// Parses the raw body; malformed JSON or a non-object body is a 400.
nlohmann::ordered_json parse_body(const std::string& body);

// POST /tokenize: {"content": string, "parse_special": true, "with_pieces": false}.
struct TokenizeRequest {
  std::string content;
  bool parse_special = true;
  bool with_pieces = false;
};
TokenizeRequest parse_tokenize_request(const nlohmann::ordered_json& body);
// POST /detokenize: {"tokens": [ids]}, each id below `vocab_size`.
std::vector<int32_t> parse_detokenize_request(const nlohmann::ordered_json& body,
                                              int64_t vocab_size);

// The body's `model` when it is a string, else empty (the parsers report a wrong type). Routes
// check it before parsing the rest, so a request for another model is told that first.
std::string requested_model(const nlohmann::ordered_json& body);

// OpenAI's string tool_choice ("auto", "none", "required"); nullopt for any other name.
std::optional<ToolChoiceMode> tool_choice_mode(const std::string& name);

// A 400 when tool_choice cannot be met: a required call (Anthropic's "any") with no tools, or a
// named tool that is not among r.tools. Every chat route checks it once tools are parsed.
void check_tool_choice(const GenerationRequest& r);

// Field helpers shared by the route parsers (the Responses parser too). Each throws
// ApiError(400) naming the field: `path` / `key` is the name the message uses.
[[noreturn]] void bad_field(const std::string& field, const std::string& what);
// Null when absent or JSON null.
const nlohmann::ordered_json* optional_field(const nlohmann::ordered_json& object, const char* key);
const nlohmann::ordered_json& required_field(const nlohmann::ordered_json& object, const char* key,
                                             const std::string& path);
std::optional<double> number_field(const nlohmann::ordered_json& body, const char* key, double lo,
                                   double hi);
// An integer in [lo, hi]; anything outside (2^32+5 included) is a 400, never narrowed.
std::optional<int64_t> integer_field(const nlohmann::ordered_json& body, const char* key,
                                     int64_t lo, int64_t hi);
// A token limit (already checked to be 1..INT32_MAX) capped at 2^30, so adding it to a prompt
// length cannot overflow an int; the context limit caps it further.
int capped_max_tokens(int64_t value);
// "nests arrays and objects more than 256 levels deep (the limit)", for JSON over kMaxJsonDepth.
std::string too_deep_text();
bool bool_field(const nlohmann::ordered_json& body, const char* key, bool fallback);
// "model" as a string, "" when absent.
std::string model_field(const nlohmann::ordered_json& body);
// temperature, top_p, top_k, min_p, penalties and seed, with the server's defaults.
SamplingParams parse_sampling(const nlohmann::ordered_json& body, const SamplingDefaults& d);
// "stop" / "stop_sequences": a string or an array of strings (empty ones dropped).
std::vector<std::string> parse_stop(const nlohmann::ordered_json& body, const char* key);
// The token limit from `primary`, else `alternative` (may be null), into r.max_tokens.
void parse_max_tokens(const nlohmann::ordered_json& body, GenerationRequest& r,
                      const char* primary, const char* alternative);
// Tool-call arguments as the chat templates want them: an object when the JSON string parses
// to one, else the string unchanged.
nlohmann::ordered_json arguments_object(const nlohmann::ordered_json& arguments,
                                        const std::string& path);

}  // namespace qmlx::server
