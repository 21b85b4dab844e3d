#include "server/common/request_parser.h"

#include "base/json_depth.h"
#include "server/common/reasoning_signature.h"

namespace qmlx::server {

using json = nlohmann::ordered_json;

// The field helpers and parse_sampling are shared with the Responses parser (request_parser.h).
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

namespace {

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

// Text of OpenAI content: a string, or an array of parts whose text parts are joined by "\n".
std::string content_text(const json& content, const std::string& path) {
  if (content.is_null()) return "";
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) bad_field(path, "must be a string or an array of content parts");
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const json& part = content[i];
    std::string part_path = path + "[" + std::to_string(i) + "]";
    if (!part.is_object()) bad_field(part_path, "must be an object");
    const json& type = required_field(part, "type", part_path + ".type");
    if (type != "text" && type != "input_text") {
      bad_field(part_path + ".type", "is " + type.dump() + ": this model accepts text parts only");
    }
    const json& t = required_field(part, "text", part_path + ".text");
    if (!t.is_string()) bad_field(part_path + ".text", "must be a string");
    if (!text.empty()) text += "\n";
    text += t.get<std::string>();
  }
  return text;
}

}  // namespace

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

namespace {

json normalize_tool_calls(const json& calls, const std::string& path) {
  if (!calls.is_array()) bad_field(path, "must be an array");
  json out = json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    std::string p = path + "[" + std::to_string(i) + "]";
    const json& call = calls[i];
    if (!call.is_object()) bad_field(p, "must be an object");
    const json& fn = required_field(call, "function", p + ".function");
    if (!fn.is_object()) bad_field(p + ".function", "must be an object");
    const json& name = required_field(fn, "name", p + ".function.name");
    if (!name.is_string()) bad_field(p + ".function.name", "must be a string");
    const json* args = optional_field(fn, "arguments");
    json normalized = call;
    normalized["type"] = "function";
    normalized["function"]["arguments"] =
        args ? arguments_object(*args, p + ".function.arguments") : json::object();
    out.push_back(normalized);
  }
  return out;
}

json normalize_openai_messages(const json& messages) {
  if (!messages.is_array()) bad_field("messages", "must be an array");
  if (messages.empty()) bad_field("messages", "must not be empty");
  json out = json::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    std::string p = "messages[" + std::to_string(i) + "]";
    const json& m = messages[i];
    if (!m.is_object()) bad_field(p, "must be an object");
    const json& role = required_field(m, "role", p + ".role");
    if (!role.is_string()) bad_field(p + ".role", "must be a string");
    std::string r = role.get<std::string>();
    if (r == "developer") r = "system";
    if (r != "system" && r != "user" && r != "assistant" && r != "tool") {
      bad_field(p + ".role", "must be one of system, user, assistant, tool");
    }
    json msg = {{"role", r}, {"content", content_text(m.value("content", json()), p + ".content")}};
    if (const json* reasoning = optional_field(m, "reasoning_content")) {
      if (!reasoning->is_string()) bad_field(p + ".reasoning_content", "must be a string");
      msg["reasoning_content"] = *reasoning;
    }
    if (const json* calls = optional_field(m, "tool_calls")) {
      msg["tool_calls"] = normalize_tool_calls(*calls, p + ".tool_calls");
    }
    for (const char* key : {"tool_call_id", "name"}) {
      if (const json* v = optional_field(m, key)) msg[key] = *v;
    }
    out.push_back(std::move(msg));
  }
  return out;
}

json normalize_openai_tools(const json& tools) {
  if (!tools.is_array()) bad_field("tools", "must be an array");
  for (size_t i = 0; i < tools.size(); ++i) {
    std::string p = "tools[" + std::to_string(i) + "]";
    if (!tools[i].is_object()) bad_field(p, "must be an object");
    const json& fn = required_field(tools[i], "function", p + ".function");
    const json& name = required_field(fn, "name", p + ".function.name");
    if (!name.is_string()) bad_field(p + ".function.name", "must be a string");
  }
  return tools;
}

void parse_openai_tool_choice(const json& body, GenerationRequest& r) {
  const json* v = optional_field(body, "tool_choice");
  if (v == nullptr) return;
  if (v->is_string()) {
    auto mode = tool_choice_mode(v->get<std::string>());
    if (!mode) bad_field("tool_choice", "must be auto, none, required or a named function");
    r.tool_choice = *mode;
    return;
  }
  if (!v->is_object()) bad_field("tool_choice", "must be a string or an object");
  const json& fn = required_field(*v, "function", "tool_choice.function");
  const json& name = required_field(fn, "name", "tool_choice.function.name");
  if (!name.is_string()) bad_field("tool_choice.function.name", "must be a string");
  r.tool_choice = ToolChoiceMode::kNamed;
  r.tool_choice_name = name.get<std::string>();
}

// OpenAI's `n` (choices per request): this server generates one.
void parse_choice_count(const json& body) {
  const json* v = optional_field(body, "n");
  if (v != nullptr && !(v->is_number_integer() && *v == 1)) {
    bad_field("n", "must be 1: this server answers with one choice per request");
  }
}

void parse_logprobs(const json& body, GenerationRequest& r, bool completions) {
  if (completions) {
    // Legacy completions: `logprobs` is the number of alternatives (0..20).
    if (const json* v = optional_field(body, "logprobs")) {
      if (v->is_boolean()) {
        r.logprobs = v->get<bool>();
      } else {
        r.logprobs = true;
        r.top_logprobs = static_cast<int>(*integer_field(body, "logprobs", 0, 20));
      }
    }
    return;
  }
  r.logprobs = bool_field(body, "logprobs", false);
  r.top_logprobs = static_cast<int>(integer_field(body, "top_logprobs", 0, 20).value_or(0));
  if (r.top_logprobs > 0) r.logprobs = true;
}

void parse_stream(const json& body, GenerationRequest& r) {
  r.stream = bool_field(body, "stream", false);
  r.return_progress = bool_field(body, "return_progress", false);
  if (const json* options = optional_field(body, "stream_options")) {
    if (!options->is_object()) bad_field("stream_options", "must be an object");
    r.include_usage = bool_field(*options, "include_usage", false);
  }
}

// Claude Code's tool search: tools marked defer_loading are left out of the prompt, and a
// tool_reference block in a tool result loads one. Its definition is written where the
// reference is (not added to the tool list at the top), so the earlier prompt stays a prefix.
bool is_deferred_tool(const json& tool) {
  const json* defer = optional_field(tool, "defer_loading");
  return defer != nullptr && defer->is_boolean() && defer->get<bool>() && tool.contains("name") &&
         tool["name"].is_string();
}

std::string deferred_tool_text(const json& block, const json& deferred, const std::string& path) {
  const json& name = required_field(block, "tool_name", path + ".tool_name");
  if (!name.is_string()) bad_field(path + ".tool_name", "must be a string");
  auto it = deferred.find(name.get<std::string>());
  if (it == deferred.end()) bad_field(path + ".tool_name", "names no deferred tool in tools");
  json fn = {{"name", name}, {"parameters", it->value("input_schema", json{{"type", "object"}})}};
  if (it->contains("description")) fn["description"] = (*it)["description"];
  return "Tool loaded: " + json{{"type", "function"}, {"function", fn}}.dump();
}

// Blocks whose content is not text: images, PDFs and the like, which a text-only model cannot read.
bool is_unreadable_block(const std::string& type) {
  return type == "image" || type == "document" || type == "search_result" ||
         type == "container_upload";
}

[[noreturn]] void unreadable_block(const std::string& path, const std::string& type) {
  throw ApiError(400,
                 "'" + path + "' is " + (type == "image" ? "an " : "a ") + type +
                     " block: this model reads text only",
                 path);
}

// Text of Anthropic content: a string or text blocks, joined by "\n". Blocks' cache_control
// (prompt-caching hints) and citations are ignored: this server caches every prefix anyway.
// `deferred` resolves tool_reference blocks (a tool search's result, see deferred_tool_text).
std::string anthropic_block_text(const json& content, const std::string& path,
                                 const json* deferred = nullptr) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) bad_field(path, "must be a string or an array of content blocks");
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    std::string p = path + "[" + std::to_string(i) + "]";
    const json& block = content[i];
    if (!block.is_object()) bad_field(p, "must be an object");
    const json& type = required_field(block, "type", p + ".type");
    if (!type.is_string()) bad_field(p + ".type", "must be a string");
    std::string piece;
    if (type == "text") {
      const json& t = required_field(block, "text", p + ".text");
      if (!t.is_string()) bad_field(p + ".text", "must be a string");
      piece = t.get<std::string>();
    } else if (type == "tool_reference" && deferred != nullptr) {
      piece = deferred_tool_text(block, *deferred, p);
    } else if (is_unreadable_block(type.get<std::string>())) {
      unreadable_block(p, type.get<std::string>());
    } else {
      bad_field(p + ".type", "is " + type.dump() + ": expected text blocks here");
    }
    if (!text.empty()) text += "\n";
    text += piece;
  }
  return text;
}

// The reasoning of a thinking block. A client that hides reasoning (thinking.display
// "omitted") gets an empty `thinking` and sends back only the `signature`, in which this server
// put the reasoning (reasoning_signature.h), so the next prompt renders the same tokens either way.
std::string thinking_text(const json& block, const std::string& path) {
  const json& s = required_field(block, "thinking", path + ".thinking");
  if (!s.is_string()) bad_field(path + ".thinking", "must be a string");
  if (!s.get<std::string>().empty()) return s.get<std::string>();
  if (const json* signature = optional_field(block, "signature");
      signature && signature->is_string()) {
    if (auto reasoning = reasoning_from_signature(signature->get<std::string>())) return *reasoning;
  }
  return "";
}

// One Anthropic message may become several OpenAI ones: tool_result blocks are tool messages.
// A `system` message (Claude Code sends its environment block as one, after the first user
// message) is kept in place as a system message; place_system_messages decides how the
// model's template can take it.
void append_anthropic_message(const json& m, const std::string& p, const json& deferred,
                              json& out) {
  if (!m.is_object()) bad_field(p, "must be an object");
  const json& role = required_field(m, "role", p + ".role");
  if (role != "user" && role != "assistant" && role != "system") {
    bad_field(p + ".role", "must be user, assistant or system");
  }
  const json& content = required_field(m, "content", p + ".content");
  if (role == "system") {
    out.push_back({{"role", "system"}, {"content", anthropic_block_text(content, p + ".content")}});
    return;
  }
  if (content.is_string()) {
    out.push_back({{"role", role}, {"content", content}});
    return;
  }
  if (!content.is_array()) bad_field(p + ".content", "must be a string or an array of blocks");
  json msg = {{"role", role}, {"content", ""}};
  std::string text, reasoning;
  json tool_calls = json::array();
  for (size_t i = 0; i < content.size(); ++i) {
    std::string bp = p + ".content[" + std::to_string(i) + "]";
    const json& block = content[i];
    if (!block.is_object()) bad_field(bp, "must be an object");
    const json& type = required_field(block, "type", bp + ".type");
    if (!type.is_string()) bad_field(bp + ".type", "must be a string");
    std::string t = type.get<std::string>();
    if (t == "text") {
      const json& s = required_field(block, "text", bp + ".text");
      if (!s.is_string()) bad_field(bp + ".text", "must be a string");
      if (!text.empty()) text += "\n";
      text += s.get<std::string>();
    } else if (t == "thinking") {
      reasoning += thinking_text(block, bp);
    } else if (t == "redacted_thinking") {
      continue;  // another server's encrypted reasoning: nothing this model can read
    } else if (t == "tool_use" || t == "server_tool_use") {
      const json& id = required_field(block, "id", bp + ".id");
      const json& name = required_field(block, "name", bp + ".name");
      if (!name.is_string()) bad_field(bp + ".name", "must be a string");
      json input = block.value("input", json::object());
      if (!input.is_object()) bad_field(bp + ".input", "must be an object");
      tool_calls.push_back(
          {{"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", input}}}});
    } else if (t == "tool_result") {
      const json& id = required_field(block, "tool_use_id", bp + ".tool_use_id");
      const json* result = optional_field(block, "content");
      out.push_back(
          {{"role", "tool"},
           {"tool_call_id", id},
           {"content", result ? anthropic_block_text(*result, bp + ".content", &deferred) : ""}});
    } else if (is_unreadable_block(t)) {
      unreadable_block(bp, t);
    } else {
      bad_field(bp + ".type", "is \"" + t +
                                  "\": this model accepts text, thinking, tool_use and "
                                  "tool_result blocks");
    }
  }
  if (text.empty() && reasoning.empty() && tool_calls.empty()) return;
  msg["content"] = text;
  if (!reasoning.empty()) msg["reasoning_content"] = reasoning;
  if (!tool_calls.empty()) msg["tool_calls"] = tool_calls;
  out.push_back(std::move(msg));
}

void parse_anthropic_tool_choice(const json& body, GenerationRequest& r) {
  const json* v = optional_field(body, "tool_choice");
  if (v == nullptr) return;
  if (!v->is_object()) bad_field("tool_choice", "must be an object");
  const json& type = required_field(*v, "type", "tool_choice.type");
  if (type == "auto")
    r.tool_choice = ToolChoiceMode::kAuto;
  else if (type == "any")
    r.tool_choice = ToolChoiceMode::kRequired;
  else if (type == "none")
    r.tool_choice = ToolChoiceMode::kNone;
  else if (type == "tool") {
    const json& name = required_field(*v, "name", "tool_choice.name");
    if (!name.is_string()) bad_field("tool_choice.name", "must be a string");
    r.tool_choice = ToolChoiceMode::kNamed;
    r.tool_choice_name = name.get<std::string>();
  } else {
    bad_field("tool_choice.type", "must be auto, any, tool or none");
  }
}

// thinking: {"type": "enabled" | "adaptive" | "disabled", "budget_tokens", "display"}.
// "adaptive" (the model decides how much to think, as Claude Code sends it) is thinking on:
// Qwen models decide the length themselves. budget_tokens is not enforced (max_tokens is).
// display "omitted" hides the reasoning text from the client (it still travels in the
// signature); "summarized", "updates" or any other value shows it whole (this server has no
// summaries).
void parse_anthropic_thinking(const json& body, GenerationRequest& r) {
  const json* v = optional_field(body, "thinking");
  if (v == nullptr) return;
  if (!v->is_object()) bad_field("thinking", "must be an object");
  const json& type = required_field(*v, "type", "thinking.type");
  if (type == "enabled" || type == "adaptive")
    r.template_kwargs["enable_thinking"] = true;
  else if (type == "disabled")
    r.template_kwargs["enable_thinking"] = false;
  else
    bad_field("thinking.type", "must be enabled, adaptive or disabled");
  if (const json* display = optional_field(*v, "display")) {
    // Claude Code 2.1.332 also sends "updates"; any other display shows the reasoning whole.
    if (!display->is_string()) bad_field("thinking.display", "must be a string");
    r.omit_reasoning_text = *display == "omitted";
  }
}

std::vector<int32_t> token_id_prompt(const json& prompt) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < prompt.size(); ++i) {
    if (!prompt[i].is_number_integer() || prompt[i].get<int64_t>() < 0 ||
        prompt[i].get<int64_t>() > INT32_MAX) {
      bad_field("prompt[" + std::to_string(i) + "]", "must be a token id");
    }
    ids.push_back(prompt[i].get<int32_t>());
  }
  return ids;
}

}  // namespace

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

void check_text_format(const json& format, const std::string& path) {
  if (!format.is_object()) bad_field(path, "must be an object");
  const json& type = required_field(format, "type", path + ".type");
  if (type == "text") return;
  if (type == "json_object" || type == "json_schema") {
    bad_field(path, "type " + type.dump() +
                        " is not supported: this server does not constrain replies to JSON "
                        "(leave the field out or use {\"type\": \"text\"})");
  }
  bad_field(path + ".type", "must be text, json_object or json_schema");
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

GenerationRequest parse_chat_request(const json& body, const SamplingDefaults& defaults) {
  GenerationRequest r;
  r.route = Route::kChatCompletions;
  r.model = model_field(body);
  r.messages = normalize_openai_messages(required_field(body, "messages", "messages"));
  if (const json* tools = optional_field(body, "tools")) r.tools = normalize_openai_tools(*tools);
  parse_openai_tool_choice(body, r);
  check_tool_choice(r);
  parse_choice_count(body);
  if (const json* format = optional_field(body, "response_format")) {
    check_text_format(*format, "response_format");
  }
  parse_stream(body, r);
  parse_max_tokens(body, r, "max_completion_tokens", "max_tokens");
  r.sampling = parse_sampling(body, defaults);
  r.stop = parse_stop(body, "stop");
  parse_logprobs(body, r, false);
  if (const json* kwargs = optional_field(body, "chat_template_kwargs")) {
    if (!kwargs->is_object()) bad_field("chat_template_kwargs", "must be an object");
    r.template_kwargs = *kwargs;
  }
  return r;
}

GenerationRequest parse_completion_request(const json& body, const SamplingDefaults& defaults) {
  GenerationRequest r;
  r.route = Route::kCompletions;
  r.model = model_field(body);
  const json& prompt = required_field(body, "prompt", "prompt");
  if (prompt.is_string()) {
    r.prompt_text = prompt.get<std::string>();
  } else if (prompt.is_array() && prompt.size() == 1 && prompt[0].is_string()) {
    r.prompt_text = prompt[0].get<std::string>();
  } else if (prompt.is_array() && !prompt.empty()) {
    r.prompt_ids = token_id_prompt(prompt);
  } else {
    bad_field("prompt", "must be a string or a non-empty array of token ids");
  }
  parse_choice_count(body);
  parse_stream(body, r);
  parse_max_tokens(body, r, "max_tokens", nullptr);
  if (!r.max_tokens) r.max_tokens = 16;  // the OpenAI completions default
  r.sampling = parse_sampling(body, defaults);
  r.stop = parse_stop(body, "stop");
  parse_logprobs(body, r, true);
  r.echo = bool_field(body, "echo", false);
  return r;
}

namespace {

json anthropic_deferred_tools(const json& body) {
  json deferred = json::object();
  const json* tools = optional_field(body, "tools");
  if (tools == nullptr || !tools->is_array()) return deferred;
  for (const json& tool : *tools) {
    if (is_deferred_tool(tool)) deferred[tool["name"].get<std::string>()] = tool;
  }
  return deferred;
}

}  // namespace

json anthropic_to_openai_messages(const json& body) {
  json out = json::array();
  if (const json* system = optional_field(body, "system")) {
    out.push_back({{"role", "system"}, {"content", anthropic_block_text(*system, "system")}});
  }
  const json& messages = required_field(body, "messages", "messages");
  if (!messages.is_array()) bad_field("messages", "must be an array");
  if (messages.empty()) bad_field("messages", "must not be empty");
  const json deferred = anthropic_deferred_tools(body);
  for (size_t i = 0; i < messages.size(); ++i) {
    append_anthropic_message(messages[i], "messages[" + std::to_string(i) + "]", deferred, out);
  }
  return out;
}

json anthropic_to_openai_tools(const json& tools) {
  if (!tools.is_array()) bad_field("tools", "must be an array");
  json out = json::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    std::string p = "tools[" + std::to_string(i) + "]";
    const json& tool = tools[i];
    if (!tool.is_object()) bad_field(p, "must be an object");
    const json& name = required_field(tool, "name", p + ".name");
    if (!name.is_string()) bad_field(p + ".name", "must be a string");
    // Deferred tools stay out of the prompt until a tool search names them (tool_reference).
    if (is_deferred_tool(tool)) continue;
    // Anthropic's own server tools (web_search_*, code_execution_*...) run on Anthropic's
    // servers; nothing here can run them, so the model is not offered them.
    if (const json* type = optional_field(tool, "type"); type && *type != "custom") continue;
    json fn = {{"name", name},
               {"parameters", tool.value("input_schema", json{{"type", "object"}})}};
    if (tool.contains("description")) fn["description"] = tool["description"];
    out.push_back({{"type", "function"}, {"function", fn}});
  }
  return out;
}

void parse_anthropic_conversation(const json& body, GenerationRequest& r) {
  r.model = model_field(body);
  r.messages = anthropic_to_openai_messages(body);
  if (const json* tools = optional_field(body, "tools"))
    r.tools = anthropic_to_openai_tools(*tools);
  parse_anthropic_tool_choice(body, r);
  check_tool_choice(r);
  parse_anthropic_thinking(body, r);
}

GenerationRequest parse_messages_request(const json& body, const SamplingDefaults& defaults) {
  GenerationRequest r;
  r.route = Route::kMessages;
  // Ignored, by design: metadata (a client's user id), output_config.effort (Qwen models have
  // no effort control; thinking on/off is the one switch), context_management (edits of
  // earlier thinking the client asks the API to make: the template already drops old
  // reasoning), service_tier, container, mcp_servers (no server-side tools here), and every
  // block's cache_control (this server caches every prefix).
  parse_anthropic_conversation(body, r);
  r.stream = bool_field(body, "stream", false);
  r.return_progress = bool_field(body, "return_progress", false);
  required_field(body, "max_tokens", "max_tokens");
  parse_max_tokens(body, r, "max_tokens", nullptr);
  r.sampling = parse_sampling(body, defaults);
  r.stop = parse_stop(body, "stop_sequences");
  return r;
}

}  // namespace qmlx::server
