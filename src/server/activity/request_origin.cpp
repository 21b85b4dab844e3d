#include "server/activity/request_origin.h"

#include <xxhash.h>

#include <cstdio>

namespace qmlx::server {
namespace {

// Client-chosen values are shown on the page and kept in memory: a bounded length each.
constexpr size_t kMaxClientChars = 200;
constexpr size_t kMaxSessionChars = 128;
constexpr size_t kCompletionPromptBytes = 512;

std::string bounded(std::string value, size_t limit) {
  if (value.size() > limit) value.resize(limit);
  return value;
}

// The text of a message's content: a string, or the text parts of a list (images and other
// parts by their JSON, which still tells two tasks apart).
std::string content_text(const nlohmann::ordered_json& content) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) return content.dump();
  std::string text;
  for (const auto& part : content) {
    if (part.is_object() && part.contains("text") && part["text"].is_string()) {
      text += part["text"].get<std::string>();
    } else {
      text += part.dump();
    }
  }
  return text;
}

std::string first_user_message(const GenerationRequest& r) {
  if (r.route == Route::kCompletions) {
    if (r.prompt_text) return r.prompt_text->substr(0, kCompletionPromptBytes);
    std::string ids;
    for (size_t i = 0; i < r.prompt_ids.size() && ids.size() < kCompletionPromptBytes; ++i) {
      ids += std::to_string(r.prompt_ids[i]) + ",";
    }
    return ids;
  }
  for (const auto& message : r.messages) {
    if (message.is_object() && message.value("role", "") == "user" &&
        message.contains("content")) {
      return content_text(message["content"]);
    }
  }
  return {};
}

}  // namespace

RequestOrigin header_origin(const HeaderLookup& header) {
  RequestOrigin origin;
  origin.client = bounded(header("User-Agent"), kMaxClientChars);
  for (const char* name : kSessionHeaders) {
    std::string value = header(name);
    if (!value.empty()) {
      origin.session = bounded(std::move(value), kMaxSessionChars);
      break;
    }
  }
  origin.conversation = origin.session;
  return origin;
}

RequestOrigin request_origin(const HeaderLookup& header, const GenerationRequest& request) {
  RequestOrigin origin = header_origin(header);
  if (!origin.session.empty()) return origin;
  std::string key = origin.client;
  key.push_back('\0');
  key += first_user_message(request);
  char hex[24];
  std::snprintf(hex, sizeof hex, "auto-%016llx",
                static_cast<unsigned long long>(XXH3_64bits(key.data(), key.size())));
  origin.conversation = hex;
  return origin;
}

}  // namespace qmlx::server
