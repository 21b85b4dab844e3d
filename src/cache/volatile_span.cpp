#include "cache/volatile_span.h"

#include <algorithm>
#include <cctype>
#include <regex>
#include <vector>

namespace qmlx {
namespace {

struct Pattern {
  const char* kind;
  std::regex regex;
  const char* fix;
  bool (*accept)(const std::string& match) = nullptr;  // a further check on the match
};

bool has_digit_and_letter(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); }) &&
         std::any_of(s.begin(), s.end(), [](unsigned char c) { return std::isalpha(c); });
}

const char kMonth[] =
    "(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
    "Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)";

// Most specific first: a client header contains ids and a date contains digits.
const std::vector<Pattern>& patterns() {
  static const std::vector<Pattern> all = {
      {"client_header",
       std::regex(
           "x-anthropic-billing-header:[^\\n]*|\\bcch=[0-9a-zA-Z]+;?|\\bcc_version=[^;\\n]+;"),
       "Claude Code's attribution header (x-anthropic-billing-header: cc_version=...; cch=...) "
       "differs per session and request: set CLAUDE_CODE_ATTRIBUTION_HEADER=0 in Claude Code's "
       "environment (qmlx strips it with its strip_claude_code_billing_header rule, on by "
       "default)"},
      {"uuid",
       std::regex(
           "\\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\\b"),
       "a UUID (a session or request id) in the prompt: make the client leave it out of the "
       "prompt (send it as a header or metadata) or keep it the same for the whole "
       "conversation"},
      {"date",
       std::regex(std::string("\\b\\d{4}-\\d{2}-\\d{2}\\b|\\b\\d{1,2}/\\d{1,2}/\\d{2,4}\\b|\\b") +
                  kMonth + "\\.? \\d{1,2}(?:st|nd|rd|th)?,? \\d{4}\\b|\\b\\d{1,2} " + kMonth +
                  "\\.? \\d{4}\\b|\\b(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day\\b"),
       "a date in the prompt: when the client states today's date this costs one cold prefill "
       "a day; if it changes more often, make the client leave it out or put it in the last "
       "message instead of the system prompt"},
      {"time", std::regex("\\b\\d{1,2}:\\d{2}(?::\\d{2}(?:\\.\\d+)?)?(?:\\s?[AaPp][Mm])?\\b"),
       "a time of day in the prompt changes with every request: make the client leave it out, "
       "or put it in the last message instead of the system prompt"},
      {"unix_time", std::regex("\\b1\\d{9}(?:\\d{3})?\\b"),
       "a Unix timestamp in the prompt changes with every request: make the client leave it "
       "out, or put it in the last message"},
      {"hex_id", std::regex("(?:^|[^0-9A-Za-z])([0-9a-fA-F]{8,})(?![0-9A-Za-z])"),
       "a hex id (a request id or hash) in the prompt: make the client leave it out of the "
       "prompt or keep it the same for the whole conversation",
       has_digit_and_letter},
  };
  return all;
}

// The match of `pattern` in `text` that covers position `at`, if any. A pattern with a group
// (a boundary that \b cannot say, such as after "req_") matches that group.
std::optional<std::string> match_covering(const Pattern& pattern, const std::string& text,
                                          size_t at) {
  for (std::sregex_iterator it(text.begin(), text.end(), pattern.regex), end; it != end; ++it) {
    const size_t group = it->size() - 1;
    const size_t from = size_t(it->position(group)), to = from + size_t(it->length(group));
    if (from > at) break;
    if (at < to && (!pattern.accept || pattern.accept(it->str(group)))) return it->str(group);
  }
  return std::nullopt;
}

}  // namespace

std::optional<VolatileSpan> find_volatile_span(std::string_view cached, std::string_view incoming) {
  const size_t split =
      std::mismatch(cached.begin(), cached.end(), incoming.begin(), incoming.end()).first -
      cached.begin();
  const std::string sides[] = {std::string(incoming), std::string(cached)};
  for (const Pattern& pattern : patterns()) {
    for (const std::string& side : sides) {
      if (split >= side.size()) continue;
      if (auto text = match_covering(pattern, side, split)) {
        return VolatileSpan{pattern.kind, *text, pattern.fix};
      }
    }
  }
  return std::nullopt;
}

}  // namespace qmlx
