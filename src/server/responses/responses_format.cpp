#include "server/responses/responses_format.h"

#include <algorithm>

#include "base/json_depth.h"
#include "server/common/api_error.h"
#include "server/common/reasoning_signature.h"
#include "server/routes/sse.h"

namespace qmlx::server {
namespace {

using json = nlohmann::json;

json text_part(const char* type, const std::string& text) {
  json part = {{"type", type}, {"text", text}};
  if (std::string(type) == "output_text") {
    part["annotations"] = json::array();
    part["logprobs"] = json::array();
  }
  return part;
}

// The raw text of a custom tool's call: the `input` the model was asked to fill, else the
// arguments as written.
std::string custom_input(const std::string& arguments_json) {
  json arguments = parse_json_bounded<json>(arguments_json);
  if (arguments.is_object() && arguments.contains("input") && arguments["input"].is_string()) {
    return arguments["input"].get<std::string>();
  }
  return arguments_json;
}

}  // namespace

json responses_usage(const GenerationStats& stats, int64_t reasoning_tokens) {
  return {{"input_tokens", stats.prompt_tokens},
          {"input_tokens_details", {{"cached_tokens", stats.cached_tokens}}},
          {"output_tokens", stats.completion_tokens},
          {"output_tokens_details",
           {{"reasoning_tokens", std::min(reasoning_tokens, stats.completion_tokens)}}},
          {"total_tokens", stats.prompt_tokens + stats.completion_tokens}};
}

ResponsesEventStream::ResponsesEventStream(ResponseMeta meta,
                                           std::shared_ptr<const ResponsesRequest> request,
                                           const Tokenizer& tokenizer)
    : meta_(std::move(meta)), request_(std::move(request)), tokenizer_(tokenizer) {}

json ResponsesEventStream::response() const {
  json r = {{"id", meta_.id},
            {"object", "response"},
            {"created_at", meta_.created},
            {"status", status_},
            {"model", meta_.model},
            {"output", output_},
            {"usage", usage_},
            {"error", error_},
            {"incomplete_details", incomplete_details_},
            {"previous_response_id", nullptr},
            {"instructions", nullptr},
            {"tools", json::array()},
            {"tool_choice", "auto"},
            {"parallel_tool_calls", true},
            {"reasoning", nullptr},
            {"text", {{"format", {{"type", "text"}}}}},
            {"max_output_tokens", nullptr},
            {"metadata", json::object()},
            {"truncation", "disabled"},
            {"store", request_->store}};
  if (!request_->previous_response_id.empty()) {
    r["previous_response_id"] = request_->previous_response_id;
  }
  json echo = json::parse(request_->echo.dump());  // kept alive for the loop's references
  for (const auto& [key, value] : echo.items()) r[key] = value;
  return r;
}

std::string ResponsesEventStream::event(const std::string& type, json payload) {
  payload["type"] = type;
  payload["sequence_number"] = sequence_++;
  return sse_event(type, payload);
}

json ResponsesEventStream::item_event(json payload) const {
  payload["item_id"] = item_["id"];
  payload["output_index"] = output_.size();
  return payload;
}

std::string ResponsesEventStream::start() {
  std::string out = event("response.created", {{"response", response()}});
  return out + event("response.in_progress", {{"response", response()}});
}

std::string ResponsesEventStream::keepalive() { return event("keepalive", json::object()); }

std::string ResponsesEventStream::open(Item kind, json item) {
  std::string out = close();
  // Item ids share the response's number: rs_qmlx7_0, msg_qmlx7_1, fc_qmlx7_2...
  const char* prefix = kind == Item::kReasoning        ? "rs"
                       : kind == Item::kMessage        ? "msg"
                       : kind == Item::kCustomToolCall ? "ctc"
                                                       : "fc";
  std::string number = meta_.id.substr(meta_.id.find('_'));
  item["id"] = prefix + number + "_" + std::to_string(output_.size());
  item["status"] = "in_progress";
  open_ = kind;
  item_ = std::move(item);
  text_.clear();
  out += event("response.output_item.added", {{"output_index", output_.size()}, {"item", item_}});
  if (kind == Item::kReasoning || kind == Item::kMessage) {
    const char* part = kind == Item::kReasoning ? "reasoning_text" : "output_text";
    out += event("response.content_part.added",
                 item_event({{"content_index", 0}, {"part", text_part(part, "")}}));
  }
  return out;
}

std::string ResponsesEventStream::close() {
  if (open_ == Item::kNone) return "";
  std::string out;
  switch (open_) {
    case Item::kReasoning:
    case Item::kMessage: {
      bool reasoning = open_ == Item::kReasoning;
      const char* part = reasoning ? "reasoning_text" : "output_text";
      json done = item_event({{"content_index", 0}, {"text", text_}});
      if (!reasoning) done["logprobs"] = json::array();
      out += event(reasoning ? "response.reasoning_text.done" : "response.output_text.done", done);
      out += event("response.content_part.done",
                   item_event({{"content_index", 0}, {"part", text_part(part, text_)}}));
      item_["content"] = json::array({text_part(part, text_)});
      if (reasoning) item_["encrypted_content"] = reasoning_signature(text_);
      break;
    }
    case Item::kFunctionCall:
      out += event("response.function_call_arguments.done",
                   item_event({{"name", item_["name"]}, {"arguments", text_}}));
      item_["arguments"] = text_;
      break;
    case Item::kCustomToolCall: {
      std::string input = custom_input(text_);
      out += event("response.custom_tool_call_input.delta", item_event({{"delta", input}}));
      out += event("response.custom_tool_call_input.done", item_event({{"input", input}}));
      item_["input"] = input;
      break;
    }
    case Item::kNone:
      break;
  }
  item_["status"] = "completed";
  out += event("response.output_item.done", {{"output_index", output_.size()}, {"item", item_}});
  output_.push_back(std::move(item_));
  item_ = nullptr;
  open_ = Item::kNone;
  return out;
}

std::string ResponsesEventStream::append_text(Item kind, const std::string& text) {
  if (text.empty()) return "";
  std::string out;
  if (open_ != kind) {
    out +=
        kind == Item::kReasoning
            ? open(kind,
                   {{"type", "reasoning"}, {"summary", json::array()}, {"content", json::array()}})
            : open(kind, {{"type", "message"}, {"role", "assistant"}, {"content", json::array()}});
  }
  text_ += text;
  if (kind == Item::kReasoning) {
    reasoning_ += text;
    out +=
        event("response.reasoning_text.delta", item_event({{"content_index", 0}, {"delta", text}}));
  } else {
    out += event("response.output_text.delta",
                 item_event({{"content_index", 0}, {"delta", text}, {"logprobs", json::array()}}));
  }
  return out;
}

std::string ResponsesEventStream::tool_call(const ToolCallDelta& call) {
  std::string out;
  if (!(open_ == Item::kFunctionCall || open_ == Item::kCustomToolCall) ||
      call.index != tool_index_) {
    tool_index_ = call.index;
    ResponsesTool tool = request_->tool(call.name);
    bool custom = tool.kind == ResponsesTool::Kind::kCustom;
    json item = {{"type", custom ? "custom_tool_call" : "function_call"},
                 {"call_id", call.id},
                 {"name", tool.name}};
    if (!tool.name_space.empty()) item["namespace"] = tool.name_space;
    item[custom ? "input" : "arguments"] = "";
    out += open(custom ? Item::kCustomToolCall : Item::kFunctionCall, std::move(item));
  }
  text_ += call.arguments;
  // A custom tool's input is known only once its arguments are whole (sent on close).
  if (open_ == Item::kFunctionCall && !call.arguments.empty()) {
    out += event("response.function_call_arguments.delta", item_event({{"delta", call.arguments}}));
  }
  return out;
}

std::string ResponsesEventStream::delta(const OutputDelta& d) {
  std::string out = append_text(Item::kReasoning, d.reasoning);
  out += append_text(Item::kMessage, d.content);
  for (const auto& call : d.tool_calls) out += tool_call(call);
  return out;
}

std::string ResponsesEventStream::finish(const GenerationEvent& done) {
  std::string out = close();
  int64_t reasoning_tokens =
      reasoning_.empty() ? 0 : static_cast<int64_t>(tokenizer_.encode(reasoning_, false).size());
  usage_ = responses_usage(done.stats, reasoning_tokens);
  if (done.finish == FinishReason::kLength) {
    status_ = "incomplete";
    incomplete_details_ = {{"reason", "max_output_tokens"}};
    return out + event("response.incomplete", {{"response", response()}});
  }
  status_ = "completed";
  return out + event("response.completed", {{"response", response()}});
}

std::string ResponsesEventStream::fail(int status, const std::string& message) {
  std::string out = close();
  status_ = "failed";
  error_ = {{"code", error_type(ApiStyle::kOpenAI, status)}, {"message", message}};
  return out + event("response.failed", {{"response", response()}});
}

json responses_object(const ResponseMeta& meta, std::shared_ptr<const ResponsesRequest> request,
                      const Tokenizer& tokenizer, const ParsedOutput& output,
                      const GenerationEvent& done) {
  ResponsesEventStream stream(meta, std::move(request), tokenizer);
  OutputDelta whole{output.reasoning, output.content, {}};
  for (size_t i = 0; i < output.tool_calls.size(); ++i) {
    const ToolCall& call = output.tool_calls[i];
    whole.tool_calls.push_back({i, call.id, call.name, call.arguments_json});
  }
  stream.delta(whole);
  stream.finish(done);
  return stream.response();
}

}  // namespace qmlx::server
