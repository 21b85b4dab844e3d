#include "server/responses/responses_request.h"

#include <algorithm>

#include "base/logging.h"
#include "server/common/content_parts.h"
#include "server/common/image_parts.h"
#include "server/common/reasoning_signature.h"
#include "server/common/request_fields.h"

namespace qmlx::server {
namespace {

using json = nlohmann::ordered_json;

std::string at(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

const std::string& string_field(const json& object, const char* key, const std::string& path) {
  const json& value = required_field(object, key, path);
  if (!value.is_string()) bad_field(path, "must be a string");
  return value.get_ref<const std::string&>();
}

std::string optional_string(const json& object, const char* key, const std::string& path) {
  const json* value = optional_field(object, key);
  if (value == nullptr) return "";
  if (!value->is_string()) bad_field(path, "must be a string");
  return value->get<std::string>();
}

// An input_image part: its image_url, a data URL (file_id names an uploaded file, which this
// server does not keep).
json input_image(const json& part, const std::string& path, RequestImages& images) {
  if (const json* url = optional_field(part, "image_url")) {
    return images.from_url(*url, path, path + ".image_url");
  }
  if (optional_field(part, "file_id") != nullptr) {
    bad_field(path + ".file_id",
              "names an uploaded file: this server stores no files; send the "
              "image inline as a data URL in image_url");
  }
  bad_field(path + ".image_url", "is required");
}

// Message content or a tool output: a string, or parts whose text parts are joined by "\n" (as
// the chat route joins its parts) and, where `images` is given (user messages, tool outputs),
// input_image parts. Files and audio are refused by name. `where` names the place an image is
// refused in.
json parts_content(const json& content, const std::string& path, RequestImages* images,
                   const char* where = "") {
  if (content.is_string()) return content;
  if (!content.is_array()) bad_field(path, "must be a string or an array of content parts");
  ContentParts parts(ContentParts::Join::kBetweenParts);
  for (size_t i = 0; i < content.size(); ++i) {
    std::string p = at(path, i);
    const json& part = content[i];
    if (!part.is_object()) bad_field(p, "must be an object");
    const std::string& type = string_field(part, "type", p + ".type");
    if (type == "input_image") {
      if (images == nullptr) image_out_of_place(p, where);
      parts.add_image(input_image(part, p, *images));
      continue;
    }
    const char* key = type == "refusal" ? "refusal" : "text";
    if (type != "input_text" && type != "output_text" && type != "text" && type != "refusal") {
      bad_field(p + ".type", "is \"" + type + "\": this model reads text and image parts only");
    }
    parts.add_text(string_field(part, key, p + "." + key));
  }
  return parts.take();
}

// The reasoning text of a reasoning item: qmlx's own envelope when present (byte-exact), else
// its reasoning_text content, else its summary.
std::string reasoning_text(const json& item, const std::string& path) {
  if (std::string sealed = optional_string(item, "encrypted_content", path + ".encrypted_content");
      !sealed.empty()) {
    if (auto text = reasoning_from_signature(sealed)) return *text;
  }
  std::string text;
  for (const char* key : {"content", "summary"}) {
    const json* parts = optional_field(item, key);
    if (parts == nullptr) continue;
    if (!parts->is_array()) bad_field(path + "." + key, "must be an array");
    for (size_t i = 0; i < parts->size(); ++i) {
      const json& part = (*parts)[i];
      if (!part.is_object()) bad_field(at(path + "." + key, i), "must be an object");
      if (!text.empty()) text += "\n\n";
      text += string_field(part, "text", at(path + "." + key, i) + ".text");
    }
    if (!text.empty()) return text;
  }
  return text;
}

// Builds the OpenAI-shaped conversation from Responses items, one item at a time.
class MessageBuilder {
 public:
  explicit MessageBuilder(RequestImages& images) : images_(images) {}

  // The system prompt: place_system_messages (run on every chat route) merges it with the
  // developer/system items that open the input and decides how later ones are rendered.
  void instructions(const std::string& text) {
    if (!text.empty()) messages_.push_back({{"role", "system"}, {"content", text}});
  }

  void item(const json& item, const std::string& path) {
    if (!item.is_object()) bad_field(path, "must be an object");
    std::string type = optional_string(item, "type", path + ".type");
    if (type.empty() && item.contains("role")) type = "message";  // the short message form
    if (type == "message") {
      message(item, path);
    } else if (type == "reasoning") {
      if (!assistant_.content.empty() || !assistant_.tool_calls.empty()) flush();
      assistant_.reasoning += reasoning_text(item, path);
    } else if (type == "function_call") {
      json arguments = item.contains("arguments") ? item["arguments"] : json("{}");
      call(item, path, arguments_object(arguments, path + ".arguments"));
    } else if (type == "custom_tool_call") {
      call(item, path, {{"input", string_field(item, "input", path + ".input")}});
    } else if (type == "function_call_output" || type == "custom_tool_call_output") {
      flush();
      messages_.push_back(
          {{"role", "tool"},
           {"tool_call_id", string_field(item, "call_id", path + ".call_id")},
           {"content", parts_content(required_field(item, "output", path + ".output"),
                                     path + ".output", &images_)}});
    } else {
      bad_field(path + ".type", "is \"" + type +
                                    "\": input items must be message, reasoning, function_call, "
                                    "function_call_output, custom_tool_call or "
                                    "custom_tool_call_output");
    }
  }

  json finish() {
    flush();
    return std::move(messages_);
  }

 private:
  struct Assistant {
    std::string content, reasoning;
    json tool_calls = json::array();
  };

  void message(const json& item, const std::string& path) {
    const std::string& role = string_field(item, "role", path + ".role");
    const json& content = required_field(item, "content", path + ".content");
    if (role == "assistant") {
      const std::string text =
          parts_content(content, path + ".content", nullptr, "an assistant message")
              .get<std::string>();
      if (!assistant_.tool_calls.empty()) flush();
      if (!assistant_.content.empty()) assistant_.content += "\n";
      assistant_.content += text;
      return;
    }
    if (role != "user" && role != "developer" && role != "system") {
      bad_field(path + ".role", "must be user, assistant, system or developer");
    }
    const bool user = role == "user";
    json parts =
        parts_content(content, path + ".content", user ? &images_ : nullptr, "a system message");
    flush();
    messages_.push_back({{"role", user ? "user" : "system"}, {"content", std::move(parts)}});
  }

  void call(const json& item, const std::string& path, json arguments) {
    const std::string& name = string_field(item, "name", path + ".name");
    std::string name_space = optional_string(item, "namespace", path + ".namespace");
    assistant_.tool_calls.push_back(
        {{"id", string_field(item, "call_id", path + ".call_id")},
         {"type", "function"},
         {"function", {{"name", model_tool_name(name_space, name)}, {"arguments", arguments}}}});
  }

  // The assistant message in the shape canonical_history.cpp renders a reply as history.
  void flush() {
    if (assistant_.content.empty() && assistant_.reasoning.empty() &&
        assistant_.tool_calls.empty()) {
      return;
    }
    json message = {{"role", "assistant"}, {"content", assistant_.content}};
    if (!assistant_.reasoning.empty()) message["reasoning_content"] = assistant_.reasoning;
    if (!assistant_.tool_calls.empty()) message["tool_calls"] = assistant_.tool_calls;
    messages_.push_back(std::move(message));
    assistant_ = Assistant();
  }

  RequestImages& images_;
  json messages_ = json::array();
  Assistant assistant_;
};

json function_parameters(const json& tool, const std::string& path) {
  const json* parameters = optional_field(tool, "parameters");
  if (parameters == nullptr) return {{"type", "object"}, {"properties", json::object()}};
  if (!parameters->is_object()) bad_field(path + ".parameters", "must be an object");
  return *parameters;
}

// A custom (freeform) tool as a function the model can call: its raw text goes in `input`.
json custom_parameters(const json& tool, const std::string& path) {
  std::string about = "The raw input text of the tool (plain text, not JSON)";
  if (const json* format = optional_field(tool, "format")) {
    if (!format->is_object()) bad_field(path + ".format", "must be an object");
    if (optional_string(*format, "type", path + ".format.type") == "grammar") {
      std::string syntax = optional_string(*format, "syntax", path + ".format.syntax");
      about += ". It must match this " + (syntax.empty() ? "grammar" : syntax) + " grammar:\n" +
               optional_string(*format, "definition", path + ".format.definition");
    }
  }
  return {{"type", "object"},
          {"properties", {{"input", {{"type", "string"}, {"description", about}}}}},
          {"required", {"input"}}};
}

void add_tool(const json& tool, const std::string& path, const std::string& name_space,
              GenerationRequest& r, ResponsesRequest& info) {
  if (!tool.is_object()) bad_field(path, "must be an object");
  const std::string& type = string_field(tool, "type", path + ".type");
  if (type == "namespace" && name_space.empty()) {
    const std::string& inner_space = string_field(tool, "name", path + ".name");
    const json& tools = required_field(tool, "tools", path + ".tools");
    if (!tools.is_array()) bad_field(path + ".tools", "must be an array");
    for (size_t i = 0; i < tools.size(); ++i) {
      add_tool(tools[i], at(path + ".tools", i), inner_space, r, info);
    }
    return;
  }
  if (type != "function" && type != "custom") {
    if (!name_space.empty()) bad_field(path + ".type", "must be function or custom");
    log_info("responses: ignoring the built-in tool \"" + type +
             "\" (a local model cannot run it)");
    return;
  }
  const std::string& name = string_field(tool, "name", path + ".name");
  std::string visible = model_tool_name(name_space, name);
  bool custom = type == "custom";
  json fn = {{"name", visible}};
  if (const json* description = optional_field(tool, "description"))
    fn["description"] = *description;
  fn["parameters"] = custom ? custom_parameters(tool, path) : function_parameters(tool, path);
  auto kind = custom ? ResponsesTool::Kind::kCustom : ResponsesTool::Kind::kFunction;
  if (!info.tools.emplace(visible, ResponsesTool{kind, name_space, name}).second) {
    bad_field(path + ".name", "repeats the tool name \"" + visible + "\"");
  }
  // Only an explicit strict: true holds the calls to the schema (the Responses API defaults
  // strict to true for its own models; MCP tools' schemas often cannot be enforced).
  if (!custom && tool.value("strict", json()) == true) r.strict_tools.push_back(visible);
  r.tools.push_back({{"type", "function"}, {"function", std::move(fn)}});
}

void parse_tool_choice(const json& body, GenerationRequest& r) {
  const json* v = optional_field(body, "tool_choice");
  if (v == nullptr) return;
  std::string mode = v->is_string() ? v->get<std::string>() : "";
  if (v->is_object()) {
    std::string type = optional_string(*v, "type", "tool_choice.type");
    if (type == "function" || type == "custom") {
      r.tool_choice = ToolChoiceMode::kNamed;
      r.tool_choice_name =
          model_tool_name(optional_string(*v, "namespace", "tool_choice.namespace"),
                          string_field(*v, "name", "tool_choice.name"));
      return;
    }
    // allowed_tools narrows the set (not enforced: every tool stays offered); a built-in
    // tool type cannot be forced on a local model.
    mode = type == "allowed_tools" ? optional_string(*v, "mode", "tool_choice.mode") : "auto";
    if (mode.empty()) mode = "auto";
  } else if (!v->is_string()) {
    bad_field("tool_choice", "must be a string or an object");
  }
  auto parsed = tool_choice_mode(mode);
  if (!parsed) bad_field("tool_choice", "must be auto, none, required or a named tool");
  r.tool_choice = *parsed;
}

// reasoning.effort "none" turns thinking off in the template; other efforts leave the model's
// default (Qwen's thinking has no graded budget).
void parse_reasoning(const json& body, GenerationRequest& r) {
  const json* reasoning = optional_field(body, "reasoning");
  if (reasoning == nullptr) return;
  if (!reasoning->is_object()) bad_field("reasoning", "must be an object");
  if (optional_string(*reasoning, "effort", "reasoning.effort") == "none") {
    r.template_kwargs["enable_thinking"] = false;
  }
}

// text.format: free text, a JSON object or JSON for a schema (reply_format.h); text.verbosity
// is left to the model.
void parse_text(const json& body, GenerationRequest& r) {
  const json* text = optional_field(body, "text");
  if (text == nullptr) return;
  if (!text->is_object()) bad_field("text", "must be an object");
  if (const json* format = optional_field(*text, "format")) {
    r.reply_format = parse_responses_text_format(*format, "text.format");
  }
}

json conversation_items(const json& body, const ResponseStore& store, ResponsesRequest& info) {
  json items = json::array();
  if (const json* previous = optional_field(body, "previous_response_id")) {
    if (!previous->is_string()) bad_field("previous_response_id", "must be a string");
    info.previous_response_id = previous->get<std::string>();
    auto stored = store.get(info.previous_response_id);
    if (!stored) {
      throw ApiError(404,
                     "previous_response_id '" + info.previous_response_id +
                         "' is not a stored response: this server keeps the most recent " +
                         "responses in memory only (those sent with store not false)",
                     "previous_response_id");
    }
    items = std::move(*stored);
  }
  if (const json* input = optional_field(body, "input")) {
    if (input->is_string()) {
      items.push_back({{"type", "message"},
                       {"role", "user"},
                       {"content", {{{"type", "input_text"}, {"text", *input}}}}});
    } else if (input->is_array()) {
      for (const auto& item : *input) items.push_back(item);
    } else {
      bad_field("input", "must be a string or an array of items");
    }
  }
  if (items.empty()) bad_field("input", "is required");
  return items;
}

}  // namespace

ResponsesTool ResponsesRequest::tool(const std::string& model_name) const {
  auto it = tools.find(model_name);
  return it != tools.end() ? it->second
                           : ResponsesTool{ResponsesTool::Kind::kFunction, "", model_name};
}

std::string model_tool_name(const std::string& name_space, const std::string& name) {
  return name_space.empty() ? name : name_space + "." + name;
}

GenerationRequest parse_responses_request(const json& body, const SamplingDefaults& defaults,
                                          const ResponseStore& store,
                                          const ImageReading& image_reading) {
  GenerationRequest r;
  r.route = Route::kResponses;
  r.model = model_field(body);
  auto info = std::make_shared<ResponsesRequest>();
  info->conversation = conversation_items(body, store, *info);
  if (const json* tools = optional_field(body, "tools")) {
    if (!tools->is_array()) bad_field("tools", "must be an array");
    for (size_t i = 0; i < tools->size(); ++i) add_tool((*tools)[i], at("tools", i), "", r, *info);
  }
  RequestImages images(image_reading);
  MessageBuilder messages(images);
  messages.instructions(optional_string(body, "instructions", "instructions"));
  for (size_t i = 0; i < info->conversation.size(); ++i) {
    // Items from a stored response are named by their place in the whole conversation.
    messages.item(info->conversation[i], at("input", i));
  }
  r.messages = messages.finish();
  images.finish(r);
  parse_tool_choice(body, r);
  r.parallel_tool_calls = bool_field(body, "parallel_tool_calls", true);
  check_tool_choice(r);
  parse_reasoning(body, r);
  parse_text(body, r);
  r.stream = bool_field(body, "stream", false);
  if (auto limit = integer_field(body, "max_output_tokens", 1, INT32_MAX)) {
    r.max_tokens = capped_max_tokens(*limit);
  }
  r.sampling = parse_sampling(body, defaults);
  info->store = bool_field(body, "store", true);
  for (const char* key : {"instructions", "tools", "tool_choice", "parallel_tool_calls",
                          "reasoning", "text", "temperature", "top_p", "max_output_tokens",
                          "metadata", "prompt_cache_key", "truncation"}) {
    if (const json* v = optional_field(body, key)) info->echo[key] = *v;
  }
  r.responses = std::move(info);
  return r;
}

}  // namespace qmlx::server
