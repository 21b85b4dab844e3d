#include "server/common/request_fields.h"

#include "base/json_depth.h"

namespace qmlx::server {

using json = nlohmann::ordered_json;

[[noreturn]] void bad_field(const std::string& field, const std::string& what) {
  throw ApiError(400, "'" + field + "' " + what, field);
}

const json* optional_field(const json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

const json& required_field(const json& object, const char* key, const std::string& path) {
  const json* value = optional_field(object, key);
  if (value == nullptr) bad_field(path, "is required");
  return *value;
}

std::optional<double> number_field(const json& body, const char* key, double lo, double hi) {
  const json* v = optional_field(body, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) bad_field(key, "must be a number");
  double x = v->get<double>();
  if (x < lo || x > hi) {
    bad_field(key, "must be between " + json(lo).dump() + " and " + json(hi).dump());
  }
  return x;
}

// The range is checked on the value as sent (an unsigned above INT64_MAX is out of range, not
// wrapped to a negative), so callers may narrow the result to any type that holds [lo, hi].
std::optional<int64_t> integer_field(const json& body, const char* key, int64_t lo, int64_t hi) {
  const json* v = optional_field(body, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number_integer()) bad_field(key, "must be an integer");
  const bool above_int64 =
      v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX);
  const int64_t x = above_int64 ? 0 : v->get<int64_t>();
  if (above_int64 || x < lo || x > hi) {
    bad_field(key, "must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
  }
  return x;
}

std::string too_deep_text() {
  return "nests arrays and objects more than " + std::to_string(kMaxJsonDepth) +
         " levels deep (the limit)";
}

int capped_max_tokens(int64_t value) { return static_cast<int>(std::min<int64_t>(value, 1 << 30)); }

bool bool_field(const json& body, const char* key, bool fallback) {
  const json* v = optional_field(body, key);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) bad_field(key, "must be a boolean");
  return v->get<bool>();
}

std::string model_field(const json& body) {
  const json* v = optional_field(body, "model");
  if (v == nullptr) return "";
  if (!v->is_string()) bad_field("model", "must be a string");
  return v->get<std::string>();
}

SamplingParams parse_sampling(const json& body, const SamplingDefaults& d) {
  SamplingParams s;
  s.temperature = number_field(body, "temperature", 0, 100).value_or(d.temperature);
  s.top_p = number_field(body, "top_p", 0, 1).value_or(d.top_p);
  s.top_k = static_cast<int>(integer_field(body, "top_k", 0, INT32_MAX).value_or(d.top_k));
  s.min_p = number_field(body, "min_p", 0, 1).value_or(d.min_p);
  s.repetition_penalty =
      number_field(body, "repetition_penalty", 0, 100).value_or(d.repetition_penalty);
  s.presence_penalty = number_field(body, "presence_penalty", -2, 2).value_or(d.presence_penalty);
  s.frequency_penalty =
      number_field(body, "frequency_penalty", -2, 2).value_or(d.frequency_penalty);
  // Any 64-bit integer: the seed is a bit pattern (a negative one is taken as its two's
  // complement), as OpenAI's int64 seed.
  if (const json* seed = optional_field(body, "seed")) {
    if (!seed->is_number_integer()) bad_field("seed", "must be an integer");
    s.seed = seed->is_number_unsigned() ? seed->get<uint64_t>()
                                        : static_cast<uint64_t>(seed->get<int64_t>());
  }
  return s;
}


std::vector<std::string> parse_stop(const json& body, const char* key) {
  const json* v = optional_field(body, key);
  if (v == nullptr) return {};
  if (v->is_string()) return {v->get<std::string>()};
  if (!v->is_array()) bad_field(key, "must be a string or an array of strings");
  std::vector<std::string> stops;
  for (const auto& s : *v) {
    if (!s.is_string()) bad_field(key, "must be a string or an array of strings");
    if (!s.get<std::string>().empty()) stops.push_back(s.get<std::string>());
  }
  return stops;
}

void parse_max_tokens(const json& body, GenerationRequest& r, const char* primary,
                      const char* alternative) {
  auto value = integer_field(body, primary, 1, INT32_MAX);
  if (!value && alternative) value = integer_field(body, alternative, 1, INT32_MAX);
  if (value) r.max_tokens = capped_max_tokens(*value);
}


// Chat templates iterate tool-call arguments as a mapping; clients send a JSON string.
json arguments_object(const json& arguments, const std::string& path) {
  if (arguments.is_object()) return arguments;
  if (!arguments.is_string()) bad_field(path, "must be a JSON string");
  const std::string& text = arguments.get_ref<const std::string&>();
  if (!json_depth_within_limit(text)) bad_field(path, too_deep_text());
  json parsed = json::parse(text, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) return arguments;
  return parsed;
}

std::optional<ToolChoiceMode> tool_choice_mode(const std::string& name) {
  if (name == "auto") return ToolChoiceMode::kAuto;
  if (name == "none") return ToolChoiceMode::kNone;
  if (name == "required") return ToolChoiceMode::kRequired;
  return std::nullopt;
}

void check_tool_choice(const GenerationRequest& r) {
  if (r.tool_choice == ToolChoiceMode::kRequired && r.tools.empty()) {
    bad_field("tool_choice", "asks for a tool call, but the request has no tools");
  }
  if (r.tool_choice != ToolChoiceMode::kNamed) return;
  for (const json& tool : r.tools) {
    const json* fn = optional_field(tool, "function");
    if (fn && fn->is_object() && fn->value("name", json()) == r.tool_choice_name) return;
  }
  bad_field("tool_choice", "names the tool \"" + r.tool_choice_name +
                               "\", which is not among the request's tools");
}

TokenizeRequest parse_tokenize_request(const json& body) {
  TokenizeRequest r;
  const json& content = required_field(body, "content", "content");
  if (!content.is_string()) bad_field("content", "must be a string");
  r.content = content.get<std::string>();
  r.parse_special = bool_field(body, "parse_special", true);
  r.with_pieces = bool_field(body, "with_pieces", false);
  return r;
}

std::vector<int32_t> parse_detokenize_request(const json& body, int64_t vocab_size) {
  const json& tokens = required_field(body, "tokens", "tokens");
  if (!tokens.is_array()) bad_field("tokens", "must be an array of token ids");
  std::vector<int32_t> ids;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const json& id = tokens[i];
    const bool in_vocab = id.is_number_unsigned() ? id.get<uint64_t>() < uint64_t(vocab_size)
                          : id.is_number_integer()
                              ? id.get<int64_t>() >= 0 && id.get<int64_t>() < vocab_size
                              : false;
    if (!in_vocab) {
      throw ApiError(400, "tokens[" + std::to_string(i) + "] is not a token id of this model",
                     "tokens");
    }
    ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  return ids;
}

std::string requested_model(const json& body) {
  auto it = body.find("model");
  return it != body.end() && it->is_string() ? it->get<std::string>() : "";
}

json parse_body(const std::string& body) {
  if (!json_depth_within_limit(body)) {
    throw ApiError(400, "the request body " + too_deep_text());
  }
  json parsed = json::parse(body, nullptr, false);
  if (parsed.is_discarded()) throw ApiError(400, "malformed JSON in the request body");
  if (!parsed.is_object()) throw ApiError(400, "the request body must be a JSON object");
  return parsed;
}

}  // namespace qmlx::server
