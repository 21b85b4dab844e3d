// PromptNormalizer: named rules that rewrite a parsed chat request before its prompt is
// rendered, so that what a client varies from request to request without changing what it
// asks (an attribution header, the order of its tools) does not break the prefix the cache
// keeps warm. Each rule is switched under "prompt_normalization" in cache_config.json,
// counted in metrics by name, and named in the request's log line when it changed a request.
// The rules see only the server's own request form (OpenAI-shaped messages and tools), so
// they hold for every route.
#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "server/common/generation_request.h"

namespace qmlx::server {

class ServerMetrics;

struct PromptNormalizationRule {
  const char* name;  // the config key, the metrics label and the log line's word
  bool on_by_default;
  const char* help;                           // one line for `qmlx cache --help`
  bool (*apply)(GenerationRequest& request);  // true when it changed the request
};

// Every rule, in the order they are applied.
std::span<const PromptNormalizationRule> prompt_normalization_rules();

// Which rules are on, by name. Starts from each rule's default.
class PromptNormalizationOptions {
 public:
  PromptNormalizationOptions();
  bool enabled(std::string_view rule) const;
  // `rule` must be one of prompt_normalization_rules().
  void set(std::string_view rule, bool on);

 private:
  std::map<std::string, bool, std::less<>> enabled_;
};

// Applies the enabled rules in order; returns the names of those that changed `request`.
std::vector<std::string> normalize_prompt(GenerationRequest& request,
                                          const PromptNormalizationOptions& options);

// normalize_prompt, with the rules that fired kept on the request (for its log line) and
// counted in `metrics`.
void normalize_and_record(GenerationRequest& request, const PromptNormalizationOptions& options,
                          ServerMetrics& metrics);

// Exposed for tests: the length of a Claude Code attribution line at the start of `text`,
// its line break included, or 0 when `text` does not start with one.
size_t billing_header_length(std::string_view text);

}  // namespace qmlx::server
