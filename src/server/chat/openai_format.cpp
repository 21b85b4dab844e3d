#include "server/chat/openai_format.h"

#include "server/scheduling/generation_runner.h"

namespace qmlx::server {
namespace {

using json = nlohmann::json;

json token_bytes_array(const std::string& bytes) {
  json out = json::array();
  for (unsigned char c : bytes) out.push_back(c);
  return out;
}

// The token's text for JSON; a partial UTF-8 sequence becomes U+FFFD when serialised.
json token_entry(int32_t id, float logprob, const Tokenizer& tokenizer) {
  std::string bytes = tokenizer.token_bytes(id);
  return {{"token", bytes}, {"logprob", logprob}, {"bytes", token_bytes_array(bytes)}};
}

json tool_calls_json(const std::vector<ToolCall>& calls) {
  json out = json::array();
  for (const auto& call : calls) {
    out.push_back({{"id", call.id},
                   {"type", "function"},
                   {"function", {{"name", call.name}, {"arguments", call.arguments_json}}}});
  }
  return out;
}

}  // namespace

json openai_usage(const GenerationStats& stats) {
  return {{"prompt_tokens", stats.prompt_tokens},
          {"completion_tokens", stats.completion_tokens},
          {"total_tokens", stats.prompt_tokens + stats.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", stats.cached_tokens}}}};
}

json timings_json(const GenerationStats& stats) {
  json t = {{"uid", stats.uid},
            {"cached", stats.cached_tokens},
            {"prefill", stats.prefill_tokens},
            {"prompt_n", stats.prefill_tokens},
            {"queue_ms", stats.queue_ms},
            {"prefill_ms", stats.prefill_ms},
            {"prefill_tokens_per_second", stats.prefill_tokens_per_second()},
            {"ttft_ms", stats.ttft_ms},
            {"predicted_n", stats.completion_tokens},
            {"decode_ms", stats.decode_ms},
            {"decode_tokens_per_second", stats.decode_tokens_per_second()}};
  const CacheLookupResult& cache = stats.cache;
  t["restore_ms"] = cache.lookup_ms + cache.read_ms + cache.verify_ms + cache.install_ms;
  t["snapshot_kind"] = stats.cached_tokens > 0 ? json(cache.kind) : json(nullptr);
  t["cache"] = {{"hit", stats.cached_tokens > 0},
                {"kind", cache.kind},
                {"tier", cache.tier},
                {"miss_reason", cache.miss_reason},
                {"rejected", cache.rejected},
                {"restore_bytes", cache.restore_bytes},
                {"shared_wait_ms", cache.shared_wait_ms},
                {"lookup_ms", cache.lookup_ms},
                {"read_ms", cache.read_ms},
                {"verify_ms", cache.verify_ms},
                {"install_ms", cache.install_ms}};
  return t;
}

json chat_logprobs(const std::vector<TokenLogprob>& tokens, const Tokenizer& tokenizer) {
  json content = json::array();
  for (const auto& t : tokens) {
    json entry = token_entry(t.id, t.logprob, tokenizer);
    json top = json::array();
    for (const auto& [id, lp] : t.top) top.push_back(token_entry(id, lp, tokenizer));
    entry["top_logprobs"] = std::move(top);
    content.push_back(std::move(entry));
  }
  return {{"content", std::move(content)}};
}

json completion_logprobs(const std::vector<TokenLogprob>& tokens, const Tokenizer& tokenizer,
                         size_t text_offset) {
  json out = {{"tokens", json::array()},
              {"token_logprobs", json::array()},
              {"top_logprobs", json::array()},
              {"text_offset", json::array()}};
  for (const auto& t : tokens) {
    std::string text = tokenizer.token_bytes(t.id);
    out["tokens"].push_back(text);
    out["token_logprobs"].push_back(t.logprob);
    json top = json::object();
    for (const auto& [id, lp] : t.top) top[tokenizer.token_bytes(id)] = lp;
    out["top_logprobs"].push_back(std::move(top));
    out["text_offset"].push_back(text_offset);
    text_offset += text.size();
  }
  return out;
}

json chat_completion(const ResponseMeta& meta, const ParsedOutput& output, const json& logprobs,
                     const GenerationEvent& done) {
  json message = {
      {"role", "assistant"},
      {"content", output.content.empty() && !output.tool_calls.empty() ? json(nullptr)
                                                                       : json(output.content)}};
  if (!output.reasoning.empty()) message["reasoning_content"] = output.reasoning;
  if (!output.tool_calls.empty()) message["tool_calls"] = tool_calls_json(output.tool_calls);
  return {{"id", meta.id},
          {"object", "chat.completion"},
          {"created", meta.created},
          {"model", meta.model},
          {"choices", json::array({{{"index", 0},
                                    {"message", std::move(message)},
                                    {"logprobs", logprobs},
                                    {"finish_reason", openai_finish_reason(done.finish)}}})},
          {"usage", openai_usage(done.stats)},
          {"timings", timings_json(done.stats)}};
}

json chat_delta(const OutputDelta& delta) {
  json d = json::object();
  if (!delta.reasoning.empty()) d["reasoning_content"] = delta.reasoning;
  if (!delta.content.empty()) d["content"] = delta.content;
  if (!delta.tool_calls.empty()) {
    json calls = json::array();
    for (const auto& call : delta.tool_calls) {
      json c = {{"index", call.index}, {"function", {{"arguments", call.arguments}}}};
      if (!call.id.empty()) {
        c["id"] = call.id;
        c["type"] = "function";
      }
      if (!call.name.empty()) c["function"]["name"] = call.name;
      calls.push_back(std::move(c));
    }
    d["tool_calls"] = std::move(calls);
  }
  return d;
}

json chat_chunk(const ResponseMeta& meta, const json& delta, const json& logprobs,
                const char* finish_reason) {
  return {
      {"id", meta.id},
      {"object", "chat.completion.chunk"},
      {"created", meta.created},
      {"model", meta.model},
      {"choices",
       json::array({{{"index", 0},
                     {"delta", delta},
                     {"logprobs", logprobs},
                     {"finish_reason", finish_reason ? json(finish_reason) : json(nullptr)}}})}};
}

json usage_chunk(const ResponseMeta& meta, const char* object, const GenerationStats& stats) {
  return {{"id", meta.id},
          {"object", object},
          {"created", meta.created},
          {"model", meta.model},
          {"choices", json::array()},
          {"usage", openai_usage(stats)},
          {"timings", timings_json(stats)}};
}

json progress_chunk(const ResponseMeta& meta, const char* object, const PromptProgress& p) {
  return {{"id", meta.id},
          {"object", object},
          {"created", meta.created},
          {"model", meta.model},
          {"choices", json::array()},
          {"prompt_progress",
           {{"total", p.total},
            {"cache", p.cache},
            {"processed", p.processed},
            {"time_ms", p.time_ms}}}};
}

json text_completion(const ResponseMeta& meta, const std::string& text, const json& logprobs,
                     const GenerationEvent& done) {
  return {{"id", meta.id},
          {"object", "text_completion"},
          {"created", meta.created},
          {"model", meta.model},
          {"choices", json::array({{{"index", 0},
                                    {"text", text},
                                    {"logprobs", logprobs},
                                    {"finish_reason", openai_finish_reason(done.finish)}}})},
          {"usage", openai_usage(done.stats)},
          {"timings", timings_json(done.stats)}};
}

json text_chunk(const ResponseMeta& meta, const std::string& text, const json& logprobs,
                const char* finish_reason) {
  return {
      {"id", meta.id},
      {"object", "text_completion"},
      {"created", meta.created},
      {"model", meta.model},
      {"choices",
       json::array({{{"index", 0},
                     {"text", text},
                     {"logprobs", logprobs},
                     {"finish_reason", finish_reason ? json(finish_reason) : json(nullptr)}}})}};
}

}  // namespace qmlx::server
