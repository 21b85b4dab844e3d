#include "text/template/chat_prompt.h"

#include <algorithm>
#include <optional>

#include "base/error.h"
#include "text/template/edit_points.h"

namespace qmlx {
namespace {

size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  auto mismatch = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  return static_cast<size_t>(mismatch.first - a.begin());
}

std::optional<std::string> try_render(const ChatTemplate& chat_template,
                                      const nlohmann::ordered_json& messages,
                                      const nlohmann::ordered_json& tools,
                                      const nlohmann::ordered_json& extra) {
  try {
    return chat_template.render(messages, tools, /*add_generation_prompt=*/false, extra);
  } catch (const Error&) {
    return std::nullopt;
  }
}

// Agreement of the full prompt with a shorter conversation's rendering, in tokens.
size_t agreement(const Tokenizer& tokenizer, const std::vector<int32_t>& ids,
                 const std::optional<std::string>& shorter_text) {
  if (!shorter_text) return 0;
  return common_prefix(tokenizer.encode(*shorter_text), ids);
}

std::optional<size_t> last_user_index(const nlohmann::ordered_json& messages) {
  for (size_t i = messages.size(); i-- > 0;) {
    if (messages[i].is_object() && messages[i].value("role", "") == "user") return i;
  }
  return std::nullopt;
}

// The text a normalised content starts with: the string, or its first part's when that is text.
std::string first_text(const nlohmann::ordered_json& content) {
  if (content.is_string()) return content.get<std::string>();
  if (content.is_array() && !content.empty() && content[0].value("type", "") == "text") {
    return content[0]["text"].get<std::string>();
  }
  return "";
}

size_t last_user_offset(const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                        const std::vector<int32_t>& ids, const nlohmann::ordered_json& messages,
                        const nlohmann::ordered_json& tools, const nlohmann::ordered_json& extra) {
  std::optional<size_t> user = last_user_index(messages);
  if (!user || *user == 0) return 0;
  nlohmann::ordered_json before = nlohmann::ordered_json::array();
  for (size_t i = 0; i < *user; ++i) before.push_back(messages[i]);
  if (auto text = try_render(chat_template, before, tools, extra)) {
    return agreement(tokenizer, ids, text);
  }
  // The template rejects the shorter conversation: use what does not depend on the last user
  // message's content (content that shares no first character with the real one).
  nlohmann::ordered_json altered = messages;
  altered[*user]["content"] = "\x01";
  nlohmann::ordered_json again = ChatTemplate::normalize_messages(messages);
  std::string real = first_text(again[*user]["content"]);
  if (!real.empty() && real[0] == '\x01') altered[*user]["content"] = "\x02";
  return agreement(tokenizer, ids, try_render(chat_template, altered, tools, extra));
}

}  // namespace

ChatPrompt render_chat_prompt(const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                              const nlohmann::ordered_json& messages,
                              const nlohmann::ordered_json& tools, bool add_generation_prompt,
                              const nlohmann::ordered_json& extra) {
  ChatPrompt prompt;
  prompt.text = chat_template.render(messages, tools, add_generation_prompt, extra);
  prompt.ids = tokenizer.encode(prompt.text);
  prompt.last_message_end =
      add_generation_prompt
          ? agreement(tokenizer, prompt.ids, try_render(chat_template, messages, tools, extra))
          : prompt.ids.size();
  prompt.last_user_start =
      last_user_offset(chat_template, tokenizer, prompt.ids, messages, tools, extra);
  prompt.edit_points = edit_points(tokenizer, prompt.text, prompt.ids, 0, prompt.last_message_end);
  return prompt;
}

}  // namespace qmlx
