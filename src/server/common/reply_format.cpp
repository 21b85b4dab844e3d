#include "server/common/reply_format.h"

#include "server/common/request_fields.h"

namespace qmlx::server {
namespace {

using json = nlohmann::ordered_json;

// Any JSON object: json_object mode's whole promise.
json any_object() { return {{"type", "object"}}; }

const json& schema_object(const json& holder, const std::string& path) {
  const json& schema = required_field(holder, "schema", path + ".schema");
  // A schema is an object or a boolean (true: anything, false: nothing can match).
  if (!schema.is_object() && !schema.is_boolean()) bad_field(path + ".schema", "must be an object");
  return schema;
}

std::string optional_name(const json& holder, const std::string& path) {
  const json* name = optional_field(holder, "name");
  if (name == nullptr) return "";
  if (!name->is_string()) bad_field(path + ".name", "must be a string");
  return name->get<std::string>();
}

bool optional_strict(const json& holder, const std::string& path) {
  const json* strict = optional_field(holder, "strict");
  if (strict == nullptr) return false;
  if (!strict->is_boolean()) bad_field(path + ".strict", "must be true or false");
  return strict->get<bool>();
}

// The "type" of a format object, checked against the kinds this API has.
std::string format_type(const json& format, const std::string& path, const char* allowed) {
  if (!format.is_object()) bad_field(path, "must be an object");
  const json& type = required_field(format, "type", path + ".type");
  if (!type.is_string()) bad_field(path + ".type", std::string("must be ") + allowed);
  return type.get<std::string>();
}

}  // namespace

namespace {

// OpenAI's two shapes differ only in where the json_schema's fields sit: in a "json_schema"
// object (chat, completions) or beside "type" (Responses).
ReplyFormat parse_openai_format(const json& format, const std::string& path, bool nested) {
  const std::string type = format_type(format, path, "text, json_object or json_schema");
  ReplyFormat out;
  out.path = path;
  if (type == "text") return out;
  if (type == "json_object") {
    out.kind = ReplyFormat::Kind::kJsonObject;
    out.schema = any_object();
    return out;
  }
  if (type != "json_schema") bad_field(path + ".type", "must be text, json_object or json_schema");
  const std::string spec_path = nested ? path + ".json_schema" : path;
  const json& spec = nested ? required_field(format, "json_schema", spec_path) : format;
  if (!spec.is_object()) bad_field(spec_path, "must be an object");
  out.kind = ReplyFormat::Kind::kJsonSchema;
  out.schema = schema_object(spec, spec_path);
  out.name = optional_name(spec, spec_path);
  out.strict = optional_strict(spec, spec_path);
  return out;
}

}  // namespace

const char* ReplyFormat::kind_name() const {
  switch (kind) {
    case Kind::kText:
      return "text";
    case Kind::kJsonObject:
      return "json_object";
    case Kind::kJsonSchema:
      return "json_schema";
    case Kind::kGrammar:
      return "grammar";
  }
  return "text";
}

ReplyFormat parse_response_format(const json& format, const std::string& path) {
  return parse_openai_format(format, path, true);
}

ReplyFormat parse_responses_text_format(const json& format, const std::string& path) {
  return parse_openai_format(format, path, false);
}

ReplyFormat parse_anthropic_output_format(const json& format, const std::string& path) {
  const std::string type = format_type(format, path, "json_schema");
  if (type != "json_schema") bad_field(path + ".type", "must be json_schema");
  ReplyFormat out;
  out.path = path;
  out.kind = ReplyFormat::Kind::kJsonSchema;
  out.schema = schema_object(format, path);
  out.strict = true;  // Anthropic's structured outputs guarantee the schema
  return out;
}

ReplyFormat parse_grammar_field(const json& grammar, const std::string& path) {
  if (!grammar.is_string()) bad_field(path, "must be a string (a grammar in qmlx's syntax)");
  ReplyFormat out;
  out.path = path;
  if (grammar.get_ref<const std::string&>().empty()) return out;
  out.kind = ReplyFormat::Kind::kGrammar;
  out.grammar = grammar.get<std::string>();
  out.strict = true;  // a grammar has nothing to drop
  return out;
}

}  // namespace qmlx::server
