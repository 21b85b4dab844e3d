#include "server/anthropic/anthropic_request.h"

#include "server/common/content_parts.h"
#include "server/common/image_parts.h"
#include "server/common/reasoning_signature.h"
#include "server/common/request_fields.h"

namespace qmlx::server {

using json = nlohmann::ordered_json;

namespace {

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

// Blocks this server cannot read: PDFs, search results, uploads to a code container.
bool is_unreadable_block(const std::string& type) {
  return type == "document" || type == "search_result" || type == "container_upload";
}

[[noreturn]] void unreadable_block(const std::string& path, const std::string& type) {
  throw ApiError(
      400, "'" + path + "' is a " + type + " block: this model reads text and images only", path);
}

// An image block (its base64 `source`) into `parts`.
void add_image_block(const json& block, const std::string& path, RequestImages& images,
                     ContentParts& parts) {
  parts.add_image(
      images.from_anthropic_source(required_field(block, "source", path + ".source"), path));
}

// Anthropic content: a string, or text blocks (joined by "\n") and image blocks. Blocks'
// cache_control (prompt-caching hints) and citations are ignored: this server caches every
// prefix anyway. `images` null: a system prompt, where an image is refused (Qwen's template
// refuses one there too). `deferred` resolves tool_reference blocks (a tool search's result, see
// deferred_tool_text).
json anthropic_block_content(const json& content, const std::string& path, RequestImages* images,
                             const json* deferred = nullptr) {
  if (content.is_string()) return content;
  if (!content.is_array()) bad_field(path, "must be a string or an array of content blocks");
  ContentParts parts;
  for (size_t i = 0; i < content.size(); ++i) {
    std::string p = path + "[" + std::to_string(i) + "]";
    const json& block = content[i];
    if (!block.is_object()) bad_field(p, "must be an object");
    const json& type = required_field(block, "type", p + ".type");
    if (!type.is_string()) bad_field(p + ".type", "must be a string");
    if (type == "text") {
      const json& t = required_field(block, "text", p + ".text");
      if (!t.is_string()) bad_field(p + ".text", "must be a string");
      parts.add_text(t.get<std::string>());
    } else if (type == "tool_reference" && deferred != nullptr) {
      parts.add_text(deferred_tool_text(block, *deferred, p));
    } else if (type == "image") {
      if (images == nullptr) image_out_of_place(p, "a system prompt");
      add_image_block(block, p, *images, parts);
    } else if (is_unreadable_block(type.get<std::string>())) {
      unreadable_block(p, type.get<std::string>());
    } else {
      bad_field(p + ".type", "is " + type.dump() + ": expected text or image blocks here");
    }
  }
  return parts.take();
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
                              RequestImages& images, json& out) {
  if (!m.is_object()) bad_field(p, "must be an object");
  const json& role = required_field(m, "role", p + ".role");
  if (role != "user" && role != "assistant" && role != "system") {
    bad_field(p + ".role", "must be user, assistant or system");
  }
  const json& content = required_field(m, "content", p + ".content");
  if (role == "system") {
    out.push_back({{"role", "system"},
                   {"content", anthropic_block_content(content, p + ".content", nullptr)}});
    return;
  }
  if (content.is_string()) {
    out.push_back({{"role", role}, {"content", content}});
    return;
  }
  if (!content.is_array()) bad_field(p + ".content", "must be a string or an array of blocks");
  json msg = {{"role", role}, {"content", ""}};
  ContentParts text;
  std::string reasoning;
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
      text.add_text(s.get<std::string>());
    } else if (t == "image") {
      if (role != "user") image_out_of_place(bp, "an assistant turn");
      add_image_block(block, bp, images, text);
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
           {"content",
            result ? anthropic_block_content(*result, bp + ".content", &images, &deferred) : ""}});
    } else if (is_unreadable_block(t)) {
      unreadable_block(bp, t);
    } else {
      bad_field(bp + ".type", "is \"" + t +
                                  "\": this model accepts text, image, thinking, tool_use and "
                                  "tool_result blocks");
    }
  }
  if (text.empty() && reasoning.empty() && tool_calls.empty()) return;
  msg["content"] = text.take();
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
  r.parallel_tool_calls = !bool_field(*v, "disable_parallel_tool_use", false);
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

json anthropic_to_openai_messages(const json& body, RequestImages& images) {
  json out = json::array();
  if (const json* system = optional_field(body, "system")) {
    out.push_back(
        {{"role", "system"}, {"content", anthropic_block_content(*system, "system", nullptr)}});
  }
  const json& messages = required_field(body, "messages", "messages");
  if (!messages.is_array()) bad_field("messages", "must be an array");
  if (messages.empty()) bad_field("messages", "must not be empty");
  const json deferred = anthropic_deferred_tools(body);
  for (size_t i = 0; i < messages.size(); ++i) {
    append_anthropic_message(messages[i], "messages[" + std::to_string(i) + "]", deferred, images,
                             out);
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

void parse_anthropic_conversation(const json& body, GenerationRequest& r,
                                  const ImageReading& image_reading) {
  r.model = model_field(body);
  RequestImages images(image_reading);
  r.messages = anthropic_to_openai_messages(body, images);
  images.finish(r);
  if (const json* tools = optional_field(body, "tools")) {
    r.tools = anthropic_to_openai_tools(*tools);
    // Strict tools (Anthropic's strict tool use): their calls must match input_schema.
    for (const json& tool : *tools) {
      if (tool.is_object() && tool.value("strict", json()) == true && tool.contains("name")) {
        r.strict_tools.push_back(tool["name"].get<std::string>());
      }
    }
  }
  parse_anthropic_tool_choice(body, r);
  check_tool_choice(r);
  parse_anthropic_thinking(body, r);
}

GenerationRequest parse_messages_request(const json& body, const SamplingDefaults& defaults,
                                         const ImageReading& images) {
  GenerationRequest r;
  r.route = Route::kMessages;
  // Ignored, by design: metadata (a client's user id), output_config.effort (Qwen models have
  // no effort control; thinking on/off is the one switch), context_management (edits of
  // earlier thinking the client asks the API to make: the template already drops old
  // reasoning), service_tier, container, mcp_servers (no server-side tools here), and every
  // block's cache_control (this server caches every prefix).
  parse_anthropic_conversation(body, r, images);
  if (const json* config = optional_field(body, "output_config")) {
    if (!config->is_object()) bad_field("output_config", "must be an object");
    if (const json* format = optional_field(*config, "format")) {
      r.reply_format = parse_anthropic_output_format(*format, "output_config.format");
    }
  }
  r.stream = bool_field(body, "stream", false);
  r.return_progress = bool_field(body, "return_progress", false);
  required_field(body, "max_tokens", "max_tokens");
  parse_max_tokens(body, r, "max_tokens", nullptr);
  r.sampling = parse_sampling(body, defaults);
  r.stop = parse_stop(body, "stop_sequences");
  return r;
}

}  // namespace qmlx::server
