#include "text/template/chat_template.h"

#include "model/gguf_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "base/json_depth.h"

namespace qmlx {
namespace {

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// tokenizer_config.json writes special tokens as a string or as {"content": ...}.
std::string token_field(const nlohmann::ordered_json& config, const char* key) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
    return (*it)["content"].get<std::string>();
  }
  return "";
}

std::string template_from_config(const nlohmann::ordered_json& config, const std::string& file) {
  auto it = config.find("chat_template");
  if (it == config.end() || it->is_null()) throw Error(file + ": no chat_template field");
  if (it->is_string()) return it->get<std::string>();
  if (it->is_array()) {
    for (const auto& entry : *it) {
      if (entry.value("name", "") == "default" && entry.contains("template")) {
        return entry["template"].get<std::string>();
      }
    }
    throw Error(file + ": chat_template list has no entry named \"default\"");
  }
  throw Error(file + ": chat_template must be a string or a list of {name, template}");
}

bool is_image_part(const nlohmann::ordered_json& part) {
  return part.is_object() && part.value("type", "") == "image";
}

// Content given as parts: its text parts joined with "\n", or, when it holds an image, the parts
// as they are (the template renders each image where it stands).
nlohmann::ordered_json normalize_parts(const nlohmann::ordered_json& parts) {
  std::string text;
  bool first = true;
  bool images = false;
  for (const auto& part : parts) {
    if (is_image_part(part)) {
      images = true;
      continue;
    }
    std::string type = part.is_object() ? part.value("type", "") : "";
    if (type != "text" || !part.contains("text") || !part["text"].is_string()) {
      throw Error("message content part of type '" + (type.empty() ? "?" : type) +
                  "' is not supported: only text and image parts are");
    }
    if (!first) text += "\n";
    first = false;
    text += part["text"].get<std::string>();
  }
  if (images) return parts;
  return text;
}

void parse_string_arguments(nlohmann::ordered_json& call) {
  nlohmann::ordered_json& function =
      call.contains("function") && call["function"].is_object() ? call["function"] : call;
  auto it = function.find("arguments");
  if (it == function.end() || !it->is_string()) return;
  auto parsed = parse_json_bounded<nlohmann::ordered_json>(it->get<std::string>());
  if (!parsed.is_discarded()) *it = std::move(parsed);  // unparsable: left as the string
}

}  // namespace

ChatTemplate ChatTemplate::from_model_dir(const std::string& model_dir) {
  if (is_gguf_path(model_dir)) return from_gguf(model_dir);
  std::filesystem::path dir(model_dir);
  std::filesystem::path config_path = dir / "tokenizer_config.json";
  nlohmann::ordered_json config = nlohmann::ordered_json::object();
  if (std::filesystem::exists(config_path)) {
    try {
      config = nlohmann::ordered_json::parse(read_text(config_path));
    } catch (const nlohmann::json::exception& e) {
      throw Error(config_path.string() + ": invalid JSON: " + e.what());
    }
  }
  std::filesystem::path jinja_path = dir / "chat_template.jinja";
  std::string source;
  std::string name;
  if (std::filesystem::exists(jinja_path)) {
    source = read_text(jinja_path);
    name = jinja_path.string();
  } else if (std::filesystem::exists(config_path)) {
    source = template_from_config(config, config_path.string());
    name = config_path.string();
  } else {
    throw Error(model_dir + ": no chat_template.jinja or tokenizer_config.json");
  }
  ChatTemplate result(std::move(source), std::move(name), token_field(config, "bos_token"),
                      token_field(config, "eos_token"));
  // transformers passes the whole special-tokens map; pad/unk complete the usual set.
  for (const char* key : {"pad_token", "unk_token"}) {
    std::string token = token_field(config, key);
    if (!token.empty()) result.special_tokens_[key] = token;
  }
  return result;
}

// A GGUF model carries its template as tokenizer.chat_template and the bos/eos tokens as ids.
ChatTemplate ChatTemplate::from_gguf(const std::string& path) {
  const GgufFile file(path);
  const auto& m = file.metadata();
  const auto source = m.find("tokenizer.chat_template");
  if (source == m.end() || !source->is_string())
    throw Error(path + ": GGUF metadata has no tokenizer.chat_template");
  const auto token_text = [&](const char* key) -> std::string {
    const auto id = m.find(key);
    const auto tokens = m.find("tokenizer.ggml.tokens");
    if (id == m.end() || tokens == m.end() || !id->is_number_integer()) return "";
    const auto i = id->get<int64_t>();
    return i >= 0 && size_t(i) < tokens->size() ? (*tokens)[size_t(i)].get<std::string>() : "";
  };
  ChatTemplate result(source->get<std::string>(), path, token_text("tokenizer.ggml.bos_token_id"),
                      token_text("tokenizer.ggml.eos_token_id"));
  const std::string pad = token_text("tokenizer.ggml.padding_token_id");
  if (!pad.empty()) result.special_tokens_["pad_token"] = pad;
  return result;
}

ChatTemplate::ChatTemplate(std::string source, std::string name, std::string bos_token,
                           std::string eos_token)
    : source_(std::move(source)),
      template_(source_, std::move(name)),
      bos_token_(std::move(bos_token)),
      eos_token_(std::move(eos_token)) {}

nlohmann::ordered_json ChatTemplate::normalize_messages(const nlohmann::ordered_json& messages) {
  if (!messages.is_array()) throw Error("messages must be an array");
  nlohmann::ordered_json out = messages;
  for (auto& message : out) {
    if (!message.is_object()) throw Error("each message must be an object");
    auto content = message.find("content");
    if (content == message.end() || content->is_null()) {
      message["content"] = "";
    } else if (content->is_array()) {
      *content = normalize_parts(*content);
    }
    auto calls = message.find("tool_calls");
    if (calls != message.end() && calls->is_array()) {
      for (auto& call : *calls) {
        if (call.is_object()) parse_string_arguments(call);
      }
    }
  }
  return out;
}

std::string ChatTemplate::render(const nlohmann::ordered_json& messages,
                                 const nlohmann::ordered_json& tools, bool add_generation_prompt,
                                 const nlohmann::ordered_json& extra) const {
  nlohmann::ordered_json variables = nlohmann::ordered_json::object();
  variables["messages"] = normalize_messages(messages);
  variables["tools"] = tools;
  variables["add_generation_prompt"] = add_generation_prompt;
  variables["documents"] = nullptr;  // transformers always defines it
  if (!bos_token_.empty()) variables["bos_token"] = bos_token_;
  if (!eos_token_.empty()) variables["eos_token"] = eos_token_;
  for (const auto& [key, value] : special_tokens_.items()) variables[key] = value;
  if (!extra.is_null()) {
    if (!extra.is_object()) throw Error("template kwargs must be a JSON object");
    for (const auto& [key, value] : extra.items()) variables[key] = value;
  }
  return template_.render(variables);
}

}  // namespace qmlx
