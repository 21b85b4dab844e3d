#include "server/anthropic/anthropic_format.h"

#include "base/json_depth.h"
#include "server/common/reasoning_signature.h"
#include "server/routes/sse.h"
#include "server/scheduling/generation_runner.h"

namespace qmlx::server {
namespace {

using json = nlohmann::json;

json tool_input(const std::string& arguments_json) {
  json input = parse_json_bounded<json>(arguments_json);
  return input.is_object() ? input : json::object();
}

json stop_sequence_json(const GenerationEvent& done) {
  return done.finish == FinishReason::kStopSequence ? json(done.stop_sequence) : json(nullptr);
}

}  // namespace

json anthropic_usage(const GenerationStats& stats) {
  return {{"input_tokens", stats.prompt_tokens - stats.cached_tokens},
          {"cache_creation_input_tokens", 0},
          {"cache_read_input_tokens", stats.cached_tokens},
          {"output_tokens", stats.completion_tokens}};
}

json anthropic_message(const ResponseMeta& meta, const ParsedOutput& output,
                       const GenerationEvent& done) {
  json content = json::array();
  if (!output.reasoning.empty()) {
    content.push_back({{"type", "thinking"},
                       {"thinking", meta.hide_reasoning ? "" : output.reasoning},
                       {"signature", reasoning_signature(output.reasoning)}});
  }
  if (!output.content.empty()) content.push_back({{"type", "text"}, {"text", output.content}});
  for (const auto& call : output.tool_calls) {
    content.push_back({{"type", "tool_use"},
                       {"id", call.id},
                       {"name", call.name},
                       {"input", tool_input(call.arguments_json)}});
  }
  return {{"id", meta.id},
          {"type", "message"},
          {"role", "assistant"},
          {"model", meta.model},
          {"content", std::move(content)},
          {"stop_reason", anthropic_stop_reason(done.finish)},
          {"stop_sequence", stop_sequence_json(done)},
          {"usage", anthropic_usage(done.stats)},
          {"timings", timings_json(done.stats)}};
}

std::string AnthropicEventStream::start(int64_t prompt_tokens) {
  json message = {{"id", meta_.id},
                  {"type", "message"},
                  {"role", "assistant"},
                  {"model", meta_.model},
                  {"content", json::array()},
                  {"stop_reason", nullptr},
                  {"stop_sequence", nullptr},
                  {"usage",
                   {{"input_tokens", prompt_tokens},
                    {"cache_creation_input_tokens", 0},
                    {"cache_read_input_tokens", 0},
                    {"output_tokens", 0}}}};
  return sse_event("message_start", {{"type", "message_start"}, {"message", message}});
}

std::string AnthropicEventStream::ping() { return sse_event("ping", {{"type", "ping"}}); }

std::string AnthropicEventStream::progress(const PromptProgress& p) {
  // Not an Anthropic event type; SDKs skip unknown events, llama.cpp-aware clients read it.
  return sse_event("prompt_progress", {{"type", "prompt_progress"},
                                       {"prompt_progress",
                                        {{"total", p.total},
                                         {"cache", p.cache},
                                         {"processed", p.processed},
                                         {"time_ms", p.time_ms}}}});
}

std::string AnthropicEventStream::open(Block type, const json& content_block) {
  std::string out = close();
  open_ = type;
  ++index_;
  out += sse_event(
      "content_block_start",
      {{"type", "content_block_start"}, {"index", index_}, {"content_block", content_block}});
  return out;
}

std::string AnthropicEventStream::close() {
  if (open_ == Block::kNone) return "";
  std::string out;
  if (open_ == Block::kThinking) {
    // The signature ends a thinking block, as in Anthropic's stream; it carries the reasoning.
    out = sse_event(
        "content_block_delta",
        {{"type", "content_block_delta"},
         {"index", index_},
         {"delta", {{"type", "signature_delta"}, {"signature", reasoning_signature(reasoning_)}}}});
    reasoning_.clear();
  }
  open_ = Block::kNone;
  return out + sse_event("content_block_stop", {{"type", "content_block_stop"}, {"index", index_}});
}

std::string AnthropicEventStream::append(Block type, const std::string& text) {
  if (text.empty()) return "";
  std::string out;
  if (open_ != type) {
    out += type == Block::kThinking
               ? open(type, {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}})
               : open(type, {{"type", "text"}, {"text", ""}});
  }
  if (type == Block::kThinking) {
    reasoning_ += text;
    if (meta_.hide_reasoning) return out;
  }
  json delta = type == Block::kThinking ? json{{"type", "thinking_delta"}, {"thinking", text}}
                                        : json{{"type", "text_delta"}, {"text", text}};
  out += sse_event("content_block_delta",
                   {{"type", "content_block_delta"}, {"index", index_}, {"delta", delta}});
  return out;
}

std::string AnthropicEventStream::delta(const OutputDelta& d) {
  std::string out = append(Block::kThinking, d.reasoning);
  out += append(Block::kText, d.content);
  for (const auto& call : d.tool_calls) {
    if (open_ != Block::kToolUse || call.index != tool_index_) {
      tool_index_ = call.index;
      out += open(
          Block::kToolUse,
          {{"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", json::object()}});
    }
    if (!call.arguments.empty()) {
      out +=
          sse_event("content_block_delta",
                    {{"type", "content_block_delta"},
                     {"index", index_},
                     {"delta", {{"type", "input_json_delta"}, {"partial_json", call.arguments}}}});
    }
  }
  return out;
}

std::string AnthropicEventStream::finish(const GenerationEvent& done) {
  std::string out = close();
  out += sse_event("message_delta", {{"type", "message_delta"},
                                     {"delta",
                                      {{"stop_reason", anthropic_stop_reason(done.finish)},
                                       {"stop_sequence", stop_sequence_json(done)}}},
                                     {"usage", anthropic_usage(done.stats)},
                                     {"timings", timings_json(done.stats)}});
  out += sse_event("message_stop", {{"type", "message_stop"}});
  return out;
}

}  // namespace qmlx::server
