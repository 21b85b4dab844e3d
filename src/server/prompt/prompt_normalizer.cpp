#include "server/prompt/prompt_normalizer.h"

#include <algorithm>
#include <cctype>

#include "base/error.h"
#include "server/metrics/server_metrics.h"

namespace qmlx::server {
namespace {

using ordered_json = nlohmann::ordered_json;

constexpr std::string_view kBillingHeader = "x-anthropic-billing-header:";

bool is_key_char(char c) { return (c >= 'a' && c <= 'z') || c == '_'; }

bool is_system_role(const ordered_json& message) {
  const std::string role = message.value("role", "");
  return role == "system" || role == "developer";
}

// Removes an attribution line from the start of `text`; true when there was one.
bool strip_billing_header_from(std::string& text) {
  const size_t length = billing_header_length(text);
  if (length == 0) return false;
  text.erase(0, length);
  return true;
}

// Claude Code (2.1.x) sends as the first block of `system` an attribution line,
// "x-anthropic-billing-header: cc_version=2.1.332.0b8; cc_entrypoint=sdk-cli;", which the
// Anthropic parser joins into the system message. The suffix of cc_version is a fingerprint
// of the session's first prompt and other versions add a per-request "cch=" value, so every
// new session (and every side request) diverges right there, after the tools the template
// renders first: about 21k tokens of Claude Code's prompt. The line says nothing to the
// model. Only that exact form is removed, and only at the start of a system message (as a
// string or as the first text part), wherever the client puts the system message.
bool strip_claude_code_billing_header(GenerationRequest& request) {
  bool changed = false;
  ordered_json kept = ordered_json::array();
  for (ordered_json& message : request.messages) {
    if (!message.is_object() || !is_system_role(message)) {
      kept.push_back(std::move(message));
      continue;
    }
    ordered_json& content = message["content"];
    bool stripped = false;
    if (content.is_string()) {
      std::string text = content.get<std::string>();
      stripped = strip_billing_header_from(text);
      if (stripped) content = text;
    } else if (content.is_array() && !content.empty() && content[0].is_object() &&
               content[0].value("type", "") == "text" && content[0].contains("text") &&
               content[0]["text"].is_string()) {
      std::string text = content[0]["text"].get<std::string>();
      stripped = strip_billing_header_from(text);
      if (stripped && text.empty()) {
        content.erase(content.begin());
      } else if (stripped) {
        content[0]["text"] = text;
      }
    }
    changed = changed || stripped;
    // A system message that was only the header would render as an empty block: drop it.
    const bool now_empty = (content.is_string() && content.get<std::string>().empty()) ||
                           (content.is_array() && content.empty());
    if (!(stripped && now_empty)) kept.push_back(std::move(message));
  }
  request.messages = std::move(kept);
  return changed;
}

std::string tool_name(const ordered_json& tool) {
  const ordered_json* fn = &tool;
  if (tool.contains("function") && tool["function"].is_object()) fn = &tool["function"];
  auto name = fn->find("name");
  return name != fn->end() && name->is_string() ? name->get<std::string>() : "";
}

// For clients whose tool list changes order between requests (none of the measured ones
// does): sorting by name (stable: unnamed tools and equal names keep their order) gives every
// request one rendering of its tools, which the template puts before everything else. Off by
// default. Measured on Qwen Code 0.24.4 and Claude Code 2.1.332 it changes no request's
// prefill: Qwen Code's main requests already list their tools sorted, and the background
// request it sends after every turn (read in issue 14 as the same prompt with the tools
// reordered) is its memory-extraction subagent, with another system prompt and another tool
// set. And it can cost: a tool that a client appends mid-conversation lands inside the sorted
// list, so the prompt diverges inside the tools instead of after them.
bool canonical_tool_order(GenerationRequest& request) {
  if (!request.tools.is_array() || request.tools.size() < 2) return false;
  std::vector<std::pair<std::string, size_t>> order;
  order.reserve(request.tools.size());
  for (size_t i = 0; i < request.tools.size(); ++i) {
    order.emplace_back(tool_name(request.tools[i]), i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  bool moved = false;
  for (size_t i = 0; i < order.size(); ++i) moved = moved || order[i].second != i;
  if (!moved) return false;
  ordered_json sorted = ordered_json::array();
  for (const auto& entry : order) sorted.push_back(std::move(request.tools[entry.second]));
  request.tools = std::move(sorted);
  return true;
}

const PromptNormalizationRule kRules[] = {
    {"strip_claude_code_billing_header", true,
     "remove Claude Code's \"x-anthropic-billing-header: cc_version=...;\" line from the start "
     "of system messages (it differs per session and per request)",
     strip_claude_code_billing_header},
    {"canonical_tool_order", false,
     "sort the request's tools by function name, for clients that list the same tools in "
     "another order from one request to the next (none measured does)",
     canonical_tool_order},
};

}  // namespace

size_t billing_header_length(std::string_view text) {
  if (!text.starts_with(kBillingHeader)) return 0;
  size_t at = kBillingHeader.size();
  int fields = 0;
  // One or more " key=value;" fields, then the end of the line.
  while (at < text.size() && text[at] == ' ') {
    size_t key_end = at + 1;
    while (key_end < text.size() && is_key_char(text[key_end])) ++key_end;
    if (key_end == at + 1 || key_end >= text.size() || text[key_end] != '=') return 0;
    const size_t value_end = text.find_first_of(";\n", key_end + 1);
    if (value_end == std::string_view::npos || text[value_end] != ';' || value_end == key_end + 1) {
      return 0;
    }
    at = value_end + 1;
    ++fields;
  }
  if (fields == 0) return 0;
  if (at == text.size()) return at;
  return text[at] == '\n' ? at + 1 : 0;
}

std::span<const PromptNormalizationRule> prompt_normalization_rules() { return kRules; }

PromptNormalizationOptions::PromptNormalizationOptions() {
  for (const PromptNormalizationRule& rule : kRules) enabled_[rule.name] = rule.on_by_default;
}

bool PromptNormalizationOptions::enabled(std::string_view rule) const {
  auto it = enabled_.find(rule);
  return it != enabled_.end() && it->second;
}

void PromptNormalizationOptions::set(std::string_view rule, bool on) {
  auto it = enabled_.find(rule);
  if (it == enabled_.end()) throw Error("unknown prompt normalization rule " + std::string(rule));
  it->second = on;
}

std::vector<std::string> normalize_prompt(GenerationRequest& request,
                                          const PromptNormalizationOptions& options) {
  std::vector<std::string> fired;
  if (request.route == Route::kCompletions) return fired;  // a raw prompt is the client's own
  for (const PromptNormalizationRule& rule : kRules) {
    if (options.enabled(rule.name) && rule.apply(request)) fired.emplace_back(rule.name);
  }
  return fired;
}

void normalize_and_record(GenerationRequest& request, const PromptNormalizationOptions& options,
                          ServerMetrics& metrics) {
  request.normalized = normalize_prompt(request, options);
  metrics.record_normalization(request.normalized);
}

}  // namespace qmlx::server
