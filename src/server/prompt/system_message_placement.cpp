#include "server/prompt/system_message_placement.h"

#include "base/error.h"

namespace qmlx::server {
namespace {

using json = nlohmann::ordered_json;

bool is_system(const json& message) { return message.value("role", "") == "system"; }

std::string text_of(const json& message) {
  auto it = message.find("content");
  return it != message.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

void place_system_messages(json& messages, bool template_takes_later_system) {
  if (!messages.is_array()) return;
  json placed = json::array();
  size_t i = 0;
  if (!messages.empty() && is_system(messages[0])) {
    std::string prompt = text_of(messages[0]);
    for (i = 1; i < messages.size() && is_system(messages[i]); ++i) {
      std::string more = text_of(messages[i]);
      if (more.empty()) continue;
      prompt += prompt.empty() ? more : "\n\n" + more;
    }
    placed.push_back({{"role", "system"}, {"content", prompt}});
  }
  for (; i < messages.size(); ++i) {
    if (is_system(messages[i]) && !template_takes_later_system) {
      placed.push_back({{"role", "user"}, {"content", text_of(messages[i])}});
    } else {
      placed.push_back(std::move(messages[i]));
    }
  }
  messages = std::move(placed);
}

bool template_takes_later_system(const ModelRuntime& runtime) {
  const json probe = json::array({{{"role", "user"}, {"content", "a"}},
                                  {{"role", "system"}, {"content", "b"}},
                                  {{"role", "user"}, {"content", "c"}}});
  try {
    if (runtime.render_text) {
      runtime.render_text(probe, json::array(), true, json::object());
    } else {
      runtime.render_chat(probe, json::array(), true, json::object());
    }
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace qmlx::server
