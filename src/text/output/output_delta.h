// What the output parser produces: per-feed deltas (what a server streams as SSE chunks) and
// the aggregate of all of them (what a non-streaming reply returns). Both are plain data so the
// server can map them onto OpenAI or Anthropic wire formats without knowing about the parser.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace qmlx {

// One step of one tool call, with OpenAI streaming semantics: `index` says which call, `id` and
// `name` are non-empty only in the first delta of a call, `arguments` is a fragment of the
// compact JSON object text to append. (OutputParser emits each call whole once it has been
// validated, so in practice every delta carries all four fields.)
struct ToolCallDelta {
  size_t index = 0;
  std::string id;
  std::string name;
  std::string arguments;
};

// Text and calls that became certain during one OutputParser::feed / finish call.
struct OutputDelta {
  std::string reasoning;
  std::string content;
  std::vector<ToolCallDelta> tool_calls;

  bool empty() const { return reasoning.empty() && content.empty() && tool_calls.empty(); }
};

// A complete tool call; `arguments_json` is a compactly serialised JSON object.
struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments_json;

  bool operator==(const ToolCall&) const = default;
};

// The whole reply: the concatenation of every delta.
struct ParsedOutput {
  std::string reasoning;
  std::string content;
  std::vector<ToolCall> tool_calls;

  void append(const OutputDelta& delta);
  bool operator==(const ParsedOutput&) const = default;
};

}  // namespace qmlx
