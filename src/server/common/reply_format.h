// ReplyFormat: what the client asked the reply to be: free text, any JSON object, JSON valid
// for a schema, or text matching a grammar. Each API names it its own way; these parsers turn
// each into the one form the decode loop constrains by (scheduling/reply_constraint.h):
//   chat completions, completions  response_format {"type": "text" | "json_object" |
//                                  "json_schema", "json_schema": {"name", "schema", "strict"}}
//                                  (vLLM takes the same on /v1/completions)
//   chat completions, completions  "grammar": a grammar in our syntax (docs/grammar.md), as
//                                  llama.cpp's server takes its own
//   Responses                      text.format {"type": "text" | "json_object" | "json_schema",
//                                  "name", "schema", "strict"}
//   Anthropic Messages             output_config.format {"type": "json_schema", "schema"}
//                                  (structured outputs: always strict)
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace qmlx::server {

struct ReplyFormat {
  enum class Kind { kText, kJsonObject, kJsonSchema, kGrammar };
  Kind kind = Kind::kText;
  nlohmann::ordered_json schema;  // kJsonSchema (kJsonObject: {"type": "object"})
  std::string grammar;            // kGrammar
  // The reply must conform whatever the schema says: a keyword the engine cannot enforce is
  // then a 400 naming it, instead of being dropped from the constraint with a warning.
  bool strict = false;
  std::string name;  // the schema's name, for the log ("" when none)
  std::string path;  // where the request set it ("response_format", "text.format", ...)

  bool constrained() const { return kind != Kind::kText; }
  // "text", "json_object", "json_schema" or "grammar" (the request log's format=).
  const char* kind_name() const;
};

// Chat completions' and completions' response_format (`path` names it in errors).
ReplyFormat parse_response_format(const nlohmann::ordered_json& format, const std::string& path);
// Responses' text.format.
ReplyFormat parse_responses_text_format(const nlohmann::ordered_json& format,
                                        const std::string& path);
// Anthropic's output_config.format.
ReplyFormat parse_anthropic_output_format(const nlohmann::ordered_json& format,
                                          const std::string& path);
// llama.cpp's "grammar" field: a string in our grammar syntax (checked when compiled).
ReplyFormat parse_grammar_field(const nlohmann::ordered_json& grammar, const std::string& path);

}  // namespace qmlx::server
