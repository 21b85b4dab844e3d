#include "text/output/output_parser.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "text/output/tool_call_body.h"

namespace qmlx {
namespace {

constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";
constexpr std::string_view kToolCallOpen = "<tool_call>";
constexpr std::string_view kToolCallClose = "</tool_call>";

constexpr std::string_view kSpace = " \t\r\n";

// Length of the longest suffix of `text` that is a proper prefix of `tag`: the bytes that must
// be held back because the next piece may complete the tag.
size_t partial_tag_length(std::string_view text, std::string_view tag) {
  for (size_t length = std::min(text.size(), tag.size() - 1); length > 0; --length) {
    if (tag.starts_with(text.substr(text.size() - length))) return length;
  }
  return 0;
}

// The end of text[0, end) once the trailing run of `chars` is removed.
size_t strip_trailing(std::string_view text, size_t end, std::string_view chars) {
  while (end > 0 && chars.find(text[end - 1]) != std::string_view::npos) --end;
  return end;
}

}  // namespace

OutputParser::OutputParser(OutputParserOptions options)
    : options_(std::move(options)),
      ids_(options_.id_seed),
      state_(options_.starts_in_reasoning ? State::kReasoningStart : State::kStart) {}

OutputDelta OutputParser::feed(std::string_view text) {
  if (finished_) throw std::logic_error("OutputParser::feed after finish");
  pending_.append(text);
  return advance(/*at_end=*/false);
}

OutputDelta OutputParser::finish() {
  if (finished_) throw std::logic_error("OutputParser::finish called twice");
  OutputDelta out = advance(/*at_end=*/true);
  finished_ = true;
  return out;
}

size_t OutputParser::held_bytes() const {
  if (state_ != State::kToolCall) return pending_.size();
  return block_prefix_.size() + kToolCallOpen.size() + pending_.size();
}

OutputDelta OutputParser::advance(bool at_end) {
  OutputDelta out;
  while (step(out, at_end)) {
  }
  result_.append(out);
  return out;
}

bool OutputParser::step(OutputDelta& out, bool at_end) {
  switch (state_) {
    case State::kStart:
      return step_start(at_end);
    case State::kReasoningStart:
      return step_skip("\n", State::kReasoning);
    case State::kReasoning:
      return step_reasoning(out, at_end);
    case State::kAfterReasoning:
      return step_skip("\n", State::kContent);
    case State::kContent:
      return step_content(out, at_end);
    case State::kToolCall:
      return step_tool_call(out, at_end);
    case State::kAfterToolCall:
      return step_skip(kSpace, State::kContent);
  }
  return false;
}

// Decides whether the reply opens with `<think>`, holding leading whitespace and a partial tag
// until it knows.
bool OutputParser::step_start(bool at_end) {
  const size_t first = pending_.find_first_not_of(kSpace);
  if (first == std::string::npos && !at_end) return false;
  const std::string_view rest =
      first == std::string::npos ? std::string_view() : std::string_view(pending_).substr(first);
  if (rest.starts_with(kThinkOpen)) {
    pending_.erase(0, first + kThinkOpen.size());
    state_ = State::kReasoningStart;
    return true;
  }
  if (!at_end && kThinkOpen.starts_with(rest)) return false;
  state_ = State::kContent;
  return true;
}

// Drops framing characters at the start of pending_; the next state begins at the first other
// character.
bool OutputParser::step_skip(std::string_view framing, State next) {
  pending_.erase(0, pending_.find_first_not_of(framing));
  if (pending_.empty()) return false;
  state_ = next;
  return true;
}

bool OutputParser::step_reasoning(OutputDelta& out, bool at_end) {
  const size_t close = pending_.find(kThinkClose);
  if (close != std::string::npos) {
    out.reasoning.append(pending_, 0, strip_trailing(pending_, close, "\n"));
    pending_.erase(0, close + kThinkClose.size());
    state_ = State::kAfterReasoning;
    return true;
  }
  // Hold a possible partial `</think>` and the newlines before it, which `</think>` would strip.
  size_t certain = pending_.size();
  if (!at_end) {
    certain = strip_trailing(pending_, certain - partial_tag_length(pending_, kThinkClose), "\n");
  }
  out.reasoning.append(pending_, 0, certain);
  pending_.erase(0, certain);
  return false;
}

bool OutputParser::step_content(OutputDelta& out, bool at_end) {
  if (!options_.parse_tool_calls) {
    out.content += pending_;
    pending_.clear();
    return false;
  }
  const size_t open = pending_.find(kToolCallOpen);
  if (open != std::string::npos) {
    const size_t text_end = strip_trailing(pending_, open, kSpace);
    out.content.append(pending_, 0, text_end);
    block_prefix_.assign(pending_, text_end, open - text_end);
    pending_.erase(0, open + kToolCallOpen.size());
    state_ = State::kToolCall;
    close_scan_from_ = 0;
    return true;
  }
  // Hold a possible partial `<tool_call>` and the whitespace before it, which a valid call
  // would drop.
  size_t certain = pending_.size();
  if (!at_end) {
    certain =
        strip_trailing(pending_, certain - partial_tag_length(pending_, kToolCallOpen), kSpace);
  }
  out.content.append(pending_, 0, certain);
  pending_.erase(0, certain);
  return false;
}

bool OutputParser::step_tool_call(OutputDelta& out, bool at_end) {
  const size_t close = pending_.find(kToolCallClose, close_scan_from_);
  if (close == std::string::npos) {
    if (!at_end) {
      close_scan_from_ = pending_.size() - std::min(pending_.size(), kToolCallClose.size() - 1);
      return false;
    }
    // Unterminated block: it is content, exactly as written.
    out.content += block_prefix_;
    out.content += kToolCallOpen;
    out.content += pending_;
    pending_.clear();
    block_prefix_.clear();
    state_ = State::kContent;
    return false;
  }
  const std::string_view body = std::string_view(pending_).substr(0, close);
  std::optional<DecodedToolCall> call =
      decode_tool_call_body(body, options_.tool_call_format, options_.tools);
  if (call) {
    const size_t index = result_.tool_calls.size() + out.tool_calls.size();
    out.tool_calls.push_back(
        {index, ids_.next(), std::move(call->name), std::move(call->arguments_json)});
  } else {
    out.content += block_prefix_;
    out.content += kToolCallOpen;
    out.content += body;
    out.content += kToolCallClose;
  }
  pending_.erase(0, close + kToolCallClose.size());
  block_prefix_.clear();
  state_ = call ? State::kAfterToolCall : State::kContent;
  return true;
}

ParsedOutput parse_output(std::string_view text, OutputParserOptions options) {
  OutputParser parser(std::move(options));
  parser.feed(text);
  parser.finish();
  return parser.result();
}

}  // namespace qmlx
