#include "server/chat/chat_request.h"

#include "server/common/content_parts.h"
#include "server/common/image_parts.h"
#include "server/common/request_fields.h"

namespace qmlx::server {

using json = nlohmann::ordered_json;

namespace {

// OpenAI content: a string, or an array of text parts (joined by "\n") and, in user and tool
// messages, image_url parts (a data URL, as a string or {"url": ...}).
json message_content(const json& content, const std::string& path, const std::string& role,
                     RequestImages& images) {
  if (content.is_null()) return "";
  if (content.is_string()) return content;
  if (!content.is_array()) bad_field(path, "must be a string or an array of content parts");
  ContentParts parts;
  for (size_t i = 0; i < content.size(); ++i) {
    const json& part = content[i];
    std::string part_path = path + "[" + std::to_string(i) + "]";
    if (!part.is_object()) bad_field(part_path, "must be an object");
    const json& type = required_field(part, "type", part_path + ".type");
    if (type == "image_url") {
      if (role != "user" && role != "tool") image_out_of_place(part_path, "a " + role + " message");
      const json& url = required_field(part, "image_url", part_path + ".image_url");
      if (url.is_object()) {
        const std::string url_path = part_path + ".image_url.url";
        parts.add_image(images.from_url(required_field(url, "url", url_path), part_path, url_path));
      } else {
        parts.add_image(images.from_url(url, part_path, part_path + ".image_url"));
      }
      continue;
    }
    if (type != "text" && type != "input_text") {
      bad_field(part_path + ".type",
                "is " + type.dump() + ": this model accepts text and image_url parts");
    }
    const json& t = required_field(part, "text", part_path + ".text");
    if (!t.is_string()) bad_field(part_path + ".text", "must be a string");
    parts.add_text(t.get<std::string>());
  }
  return parts.take();
}

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

json normalize_openai_messages(const json& messages, RequestImages& images) {
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
    json msg = {
        {"role", r},
        {"content", message_content(m.value("content", json()), p + ".content", r, images)}};
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

// response_format (OpenAI; vLLM on completions too) or grammar (as llama.cpp's server takes
// its own), not both.
void parse_reply_format(const json& body, GenerationRequest& r) {
  const json* format = optional_field(body, "response_format");
  const json* grammar = optional_field(body, "grammar");
  if (format) r.reply_format = parse_response_format(*format, "response_format");
  if (grammar) {
    if (r.reply_format.constrained())
      bad_field("grammar", "cannot be combined with a response_format that constrains the reply");
    r.reply_format = parse_grammar_field(*grammar, "grammar");
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

GenerationRequest parse_chat_request(const json& body, const SamplingDefaults& defaults,
                                     const ImageReading& image_reading) {
  GenerationRequest r;
  r.route = Route::kChatCompletions;
  r.model = model_field(body);
  RequestImages images(image_reading);
  r.messages = normalize_openai_messages(required_field(body, "messages", "messages"), images);
  images.finish(r);
  if (const json* tools = optional_field(body, "tools")) r.tools = normalize_openai_tools(*tools);
  parse_openai_tool_choice(body, r);
  check_tool_choice(r);
  for (const json& tool : r.tools) {
    if (tool["function"].value("strict", json()) == true) {
      r.strict_tools.push_back(tool["function"]["name"].get<std::string>());
    }
  }
  r.parallel_tool_calls = bool_field(body, "parallel_tool_calls", true);
  parse_choice_count(body);
  parse_reply_format(body, r);
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
  parse_reply_format(body, r);
  r.echo = bool_field(body, "echo", false);
  return r;
}

}  // namespace qmlx::server
