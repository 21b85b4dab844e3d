// OutputParser: splits a model's streamed reply into reasoning, content and tool calls.
//
// The server feeds it the detokenizer's text, piece by piece (any split, as long as each piece
// holds whole UTF-8 characters), and forwards each returned delta to the client. A delta only
// holds text whose role is certain: a possible partial tag such as "<too" or "</thi" is held
// back until the next piece decides it, so nothing is ever sent as content and then turns out to
// be markup. Consequently the concatenation of all deltas is the same for every way of
// splitting the reply, and equals parse_output() on the whole text.
//
// Reasoning. `<think>` is recognised only at the very start of the reply (leading whitespace
// before it is dropped); with `starts_in_reasoning` the prompt already opened it and the reply
// begins inside the block. Reasoning ends at the first `</think>`; later think tags are plain
// content. Whitespace, chosen between vLLM's qwen3 parser (strips nothing, so reasoning starts
// with "\n" and content with "\n\n") and llama.cpp's (strips all whitespace around reasoning
// and after `</think>`): the run of newlines right after `<think>`, right before `</think>` and
// right after `</think>` is dropped, other whitespace (indentation, spaces) is kept. A reply cut
// off inside reasoning (max_tokens, or an unterminated `<think>`) stays reasoning up to its last
// byte: that text was already streamed as reasoning and cannot be taken back.
//
// Tool calls (only when enabled, i.e. the request has tools and tool_choice is not "none"): a
// `<tool_call>`…`</tool_call>` block is decoded once it is complete (tool_call_body.h) and then
// emitted whole, with a fresh id; it must be one well-formed call to a declared function,
// otherwise the block's exact text, tags included, is content (streaming the arguments before
// the block is validated would make that impossible). Text before, between and after
// calls is content, except that the whitespace directly before and directly after a valid block
// is dropped: it is framing (the chat templates re-insert exactly one "\n" between content and
// a call), so the content round-trips through the template. Tool calls inside reasoning are not
// parsed.
//
// Malformed or unexpected output never throws and never loses a byte other than the tags and
// framing whitespace described above.
//
// Typical use (the four tags are added tokens with "special": false in Qwen tokenizers, so they
// survive decoding with skip_special; stop tokens such as <|im_end|> must not be fed):
//   OutputParserOptions options;
//   options.starts_in_reasoning = prompt_ends_inside_think(rendered_prompt);
//   options.parse_tool_calls = !request_tools.empty() && tool_choice != "none";
//   options.tool_call_format = tool_call_format_for_template(chat_template_source);
//   options.tools = ToolCatalog(request_tools);
//   OutputParser parser(std::move(options));
//   for each generated token: send(parser.feed(detokenizer_text));
//   send(parser.finish());  // then parser.result() holds the whole reply
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "text/output/output_delta.h"
#include "text/output/output_format.h"
#include "text/output/tool_call_ids.h"
#include "text/output/tool_catalog.h"

namespace qmlx {

struct OutputParserOptions {
  // The rendered prompt ends inside `<think>` (prompt_ends_inside_think()).
  bool starts_in_reasoning = false;
  // Recognise tool calls: the request declared tools and tool_choice is not "none".
  bool parse_tool_calls = false;
  ToolCallFormat tool_call_format = ToolCallFormat::kJson;
  ToolCatalog tools;
  // Seeds the tool-call ids; unset gives different ids each run.
  std::optional<uint64_t> id_seed;
};

class OutputParser {
 public:
  explicit OutputParser(OutputParserOptions options);

  // Adds the next piece of the reply; returns what became certain.
  OutputDelta feed(std::string_view text);
  // The reply is complete: flushes everything still held back. Call once, after the last feed.
  OutputDelta finish();

  // Everything emitted so far, aggregated.
  const ParsedOutput& result() const { return result_; }
  // Bytes fed but not settled yet: held back (a possible partial tag, an open tool-call block
  // with its tag and the whitespace before it) rather than emitted or dropped as framing.
  size_t held_bytes() const;

 private:
  enum class State {
    kStart,
    kReasoningStart,
    kReasoning,
    kAfterReasoning,
    kContent,
    kToolCall,
    kAfterToolCall,
  };

  OutputDelta advance(bool at_end);
  // Each step consumes what it can of pending_ into `out`. It returns true after a state change
  // (so the next state runs) and false when it needs more text (or, at the end, is done).
  bool step(OutputDelta& out, bool at_end);
  bool step_start(bool at_end);
  bool step_skip(std::string_view framing, State next);
  bool step_reasoning(OutputDelta& out, bool at_end);
  bool step_content(OutputDelta& out, bool at_end);
  bool step_tool_call(OutputDelta& out, bool at_end);

  OutputParserOptions options_;
  ToolCallIds ids_;
  State state_;
  bool finished_ = false;
  // Text received but not yet emitted.
  std::string pending_;
  // Inside a tool-call block: the whitespace that preceded `<tool_call>`, restored if the block
  // turns out malformed; and how far pending_ has been searched for `</tool_call>`.
  std::string block_prefix_;
  size_t close_scan_from_ = 0;
  ParsedOutput result_;
};

// Parses a whole reply at once (same result as feeding it in pieces).
ParsedOutput parse_output(std::string_view text, OutputParserOptions options);

}  // namespace qmlx
