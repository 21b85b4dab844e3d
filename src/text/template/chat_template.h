// ChatTemplate: a model's chat template (from its folder) plus the message normalisation that
// OpenAI-style clients need before a Hugging Face template can render them. Rendering is
// byte-identical to transformers' apply_chat_template on the normalised messages.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "text/template/template.h"

namespace qmlx {

class ChatTemplate {
 public:
  // `chat_template.jinja` in `model_dir` if present, else tokenizer_config.json's
  // `chat_template` (a string, or a list of {name, template} from which "default" is used).
  // bos_token / eos_token (and pad_token / unk_token) come from tokenizer_config.json, and
  // are template variables like transformers' special-tokens map. Throws qmlx::Error naming
  // the file.
  // `model_dir` may also be a .gguf file (template from tokenizer.chat_template).
  static ChatTemplate from_model_dir(const std::string& model_dir);
  static ChatTemplate from_gguf(const std::string& path);

  ChatTemplate(std::string source, std::string name, std::string bos_token = "",
               std::string eos_token = "");

  // messages: OpenAI-style array; tools: array or null; extra: more template variables such
  // as {"enable_thinking": false}, overriding the defaults. Throws qmlx::Error on template
  // errors (including the template's own raise_exception) and content parts that are neither
  // text nor image.
  std::string render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                     bool add_generation_prompt,
                     const nlohmann::ordered_json& extra = nlohmann::ordered_json::object()) const;

  // What render() feeds the template: content given as text parts becomes them joined with
  // "\n" (as vLLM and llama.cpp do); content with {"type": "image"} parts stays as its parts
  // (text and image), which Qwen's vision templates render in place; null/missing content
  // becomes "", and tool-call
  // arguments given as a JSON string are parsed into an object (as vLLM does; the Qwen
  // templates serialise or iterate them).
  static nlohmann::ordered_json normalize_messages(const nlohmann::ordered_json& messages);

  const std::string& source() const { return source_; }
  const std::string& bos_token() const { return bos_token_; }
  const std::string& eos_token() const { return eos_token_; }

 private:
  std::string source_;
  jinja::Template template_;
  std::string bos_token_;
  std::string eos_token_;
  nlohmann::ordered_json special_tokens_ = nlohmann::ordered_json::object();  // pad, unk
};

}  // namespace qmlx
