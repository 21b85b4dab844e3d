// Fuzz target: the grammar engine on arbitrary input, read as a JSON Schema when it parses as
// JSON and as grammar text otherwise; what compiles is bound to a small vocabulary and walked
// for a few tokens, checking that every token the mask allows is accepted. Refusals are
// qmlx::Error (GrammarError); nothing else may escape, crash or hang.
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/grammar_matcher.h"
#include "grammar/json_schema_compiler.h"

namespace {

using namespace qmlx::grammar;

std::shared_ptr<const TokenVocabulary> vocabulary() {
  static const auto vocab = [] {
    std::vector<std::string> bytes = {"<|im_end|>"};
    for (int b = 0; b < 256; ++b) bytes.push_back(std::string(1, static_cast<char>(b)));
    for (const char* t : {"\"}", "\"},", "\":", "\":\"", "{\"", "[{", "}]", "true", "null", "12",
                          "\\n", "\xC3\xA9"})
      bytes.push_back(t);
    std::vector<bool> special(bytes.size());
    special[0] = true;
    return std::make_shared<const TokenVocabulary>(bytes, special, std::vector<int32_t>{0});
  }();
  return vocab;
}

// Follows the lowest allowed id for a few steps; every allowed id must be accepted.
void walk(const CompiledGrammar& g) {
  auto tables = TokenMaskTables::build(g.grammar, vocabulary(),
                                       {.max_build_time = std::chrono::milliseconds(500)});
  GrammarMatcher m(tables);
  std::vector<uint64_t> mask(m.mask_words());
  for (int step = 0; step < 16 && !m.is_terminated(); ++step) {
    m.fill_next_token_bitmask(mask);
    int32_t chosen = -1;
    for (int32_t id = 0; id < vocabulary()->size() && chosen < 0; ++id)
      if ((mask[static_cast<size_t>(id) / 64] >> (id % 64)) & 1) chosen = id;
    if (chosen < 0) return;
    if (!m.accept_token(chosen)) std::abort();  // the mask allowed a token accept refuses
  }
  m.rollback(1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  SchemaOptions options;
  options.max_compile_time = std::chrono::milliseconds(500);
  options.grammar_limits.max_nodes = 200000;
  try {
    auto schema = nlohmann::ordered_json::parse(input, nullptr, false);
    if (!schema.is_discarded()) {
      walk(compile_json_schema(schema, options));
    } else {
      walk(compile_grammar(input, options.grammar_limits));
    }
  } catch (const qmlx::Error&) {
  }
  return 0;
}
