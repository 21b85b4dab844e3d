// `qmlx tokenize`: shows exactly what the model would see for a raw text or a conversation:
// the rendered prompt (the model's own chat template), its token ids, and the token offsets
// of the message boundaries where the cache writes checkpoints. For users debugging prompts,
// and for tests.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "cli/command.h"
#include "text/template/chat_prompt.h"
#include "text/template/chat_template.h"
#include "text/tokenizer/tokenizer.h"

namespace qmlx::cli {
namespace {

using ordered_json = nlohmann::ordered_json;

ordered_json parse_json(const std::string& text, const std::string& what) {
  try {
    return ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(what + ": invalid JSON: " + e.what());
  }
}

ordered_json read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return parse_json(text.str(), path);
}

// A messages file holds either the array itself or a request body {"messages": [...], ...}.
ordered_json messages_from(const ordered_json& document, const std::string& path) {
  if (document.is_array()) return document;
  if (document.is_object() && document.contains("messages")) return document["messages"];
  throw Error(path + ": expected an array of messages or an object with \"messages\"");
}

std::string ids_text(const std::vector<int32_t>& ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? ", " : "") + std::to_string(ids[i]);
  return out + "]";
}

void print(const ChatPrompt& prompt, bool json, bool has_offsets) {
  if (json) {
    ordered_json out = {{"prompt", prompt.text}, {"ids", prompt.ids}};
    if (has_offsets) {
      out["last_message_end"] = prompt.last_message_end;
      out["last_user_start"] = prompt.last_user_start;
      out["edit_points"] = prompt.edit_points;
    }
    std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return;
  }
  std::printf("prompt:\n");
  std::fwrite(prompt.text.data(), 1, prompt.text.size(), stdout);
  std::printf("\nids (%zu): %s\n", prompt.ids.size(), ids_text(prompt.ids).c_str());
  if (has_offsets) {
    std::printf("last_message_end: %zu\nlast_user_start: %zu\n", prompt.last_message_end,
                prompt.last_user_start);
    std::string points;
    for (size_t p : prompt.edit_points) points += (points.empty() ? "" : ", ") + std::to_string(p);
    std::printf("edit_points: [%s]\n", points.c_str());
  }
}

int run_tokenize(int argc, char** argv) {
  CLI::App app("Render a conversation with the model's chat template and tokenize it",
               "qmlx tokenize");
  std::string model, text, messages_path, tools_path, kwargs_text;
  bool no_generation_prompt = false, json = false;
  app.add_option("--model", model, "model folder (tokenizer.json, tokenizer_config.json)")
      ->required();
  auto* text_option =
      app.add_option("--text", text, "raw text to tokenize (special tokens are recognised)");
  auto* messages_option =
      app.add_option("--messages", messages_path, "JSON file: messages array or request body");
  text_option->excludes(messages_option);
  app.add_option("--tools", tools_path, "JSON file: tools array")->needs(messages_option);
  app.add_flag("--no-generation-prompt", no_generation_prompt,
               "do not append the assistant generation prompt")
      ->needs(messages_option);
  app.add_option("--template-kwargs", kwargs_text,
                 "JSON object of extra template variables, e.g. {\"enable_thinking\":false}")
      ->needs(messages_option);
  app.add_flag("--json", json,
               "print {\"prompt\",\"ids\",\"last_message_end\",\"last_user_start\","
               "\"edit_points\"} (offsets only with --messages)");
  CLI11_PARSE(app, argc, argv);
  if (text_option->count() == 0 && messages_option->count() == 0) {
    throw Error("one of --text or --messages is required");
  }

  auto tokenizer = Tokenizer::from_file(model);
  if (text_option->count()) {
    ChatPrompt prompt;
    prompt.text = text;
    prompt.ids = tokenizer->encode(text, /*parse_special=*/true);
    print(prompt, json, /*has_offsets=*/false);
    return 0;
  }
  ordered_json document = read_json_file(messages_path);
  ordered_json messages = messages_from(document, messages_path);
  ordered_json tools = nullptr;
  if (!tools_path.empty()) {
    tools = read_json_file(tools_path);
  } else if (document.is_object() && document.contains("tools")) {
    tools = document["tools"];
  }
  ordered_json kwargs =
      kwargs_text.empty() ? ordered_json::object() : parse_json(kwargs_text, "--template-kwargs");
  ChatTemplate chat_template = ChatTemplate::from_model_dir(model);
  ChatPrompt prompt =
      render_chat_prompt(chat_template, *tokenizer, messages, tools, !no_generation_prompt, kwargs);
  print(prompt, json, /*has_offsets=*/true);
  return 0;
}

}  // namespace

QMLX_COMMAND(tokenize, "tokenize",
             "render a conversation with the chat template and tokenize it (--model DIR)",
             run_tokenize);

}  // namespace qmlx::cli
