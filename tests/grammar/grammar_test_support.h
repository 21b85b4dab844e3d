// Shared by the grammar tests: a small byte-level vocabulary whose tokens span several JSON
// symbols (`"},`, `":"`), split UTF-8 characters, and carry special and stop tokens; and a
// reference for masks (try every token, undo it).
#pragma once

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/token_mask_tables.h"
#include "grammar/token_vocabulary.h"

namespace qmlx::grammar::test_support {

constexpr int32_t kStopId = 0;
constexpr int32_t kSpecialId = 1;

inline std::shared_ptr<const TokenVocabulary> small_vocabulary() {
  std::vector<std::string> bytes = {"<|im_end|>",
                                    "<|im_start|>",
                                    "{",
                                    "}",
                                    "[",
                                    "]",
                                    "\"",
                                    ":",
                                    ",",
                                    "\"}",
                                    "\"},",
                                    "\":",
                                    "\":\"",
                                    "\",\"",
                                    "\"]",
                                    "}]",
                                    "},",
                                    "{\"",
                                    "[\"",
                                    "[{",
                                    "],",
                                    "a",
                                    "b",
                                    "ab",
                                    "abc",
                                    "name",
                                    "name\"",
                                    "ame",
                                    "\"name\":\"",
                                    "x\"",
                                    "1",
                                    "2",
                                    "12",
                                    "0",
                                    "-",
                                    ".",
                                    "e",
                                    "+",
                                    "true",
                                    "tr",
                                    "ue",
                                    "false",
                                    "null",
                                    "nu",
                                    " ",
                                    "\n",
                                    "\\",
                                    "\\n",
                                    "\\\"",
                                    "\xC3",
                                    "\xA9",
                                    "\xC3\xA9",
                                    "\xE4\xB8",
                                    "\xAD",
                                    "\xE4\xB8\xAD",
                                    "\xF0\x9F\x98\x80",
                                    "T",
                                    "Z",
                                    "-0",
                                    "01",
                                    "5",
                                    "9",
                                    "3",
                                    "u",
                                    "@",
                                    "x",
                                    "y",
                                    "z",
                                    "_",
                                    "ok\"}",
                                    "1,",
                                    "1}",
                                    "\"a\"",
                                    "\xF0"};
  std::vector<bool> special(bytes.size());
  special[kStopId] = special[kSpecialId] = true;
  return std::make_shared<const TokenVocabulary>(bytes, special, std::vector<int32_t>{kStopId});
}

inline std::shared_ptr<const TokenMaskTables> tables_for(const CompiledGrammar& g) {
  return TokenMaskTables::build(g.grammar, small_vocabulary());
}

// The allowed ids found by trying each token and undoing it.
inline std::vector<int32_t> allowed_by_trying(GrammarMatcher& m, int32_t vocab_size) {
  std::vector<int32_t> ids;
  for (int32_t id = 0; id < vocab_size; ++id)
    if (m.accept_token(id)) {
      ids.push_back(id);
      m.rollback(1);
    }
  return ids;
}

inline std::vector<int32_t> allowed_by_mask(GrammarMatcher& m, int32_t vocab_size) {
  std::vector<uint64_t> mask(m.mask_words());
  m.fill_next_token_bitmask(mask);
  std::vector<int32_t> ids;
  for (int32_t id = 0; id < vocab_size; ++id)
    if ((mask[static_cast<size_t>(id) / 64] >> (id % 64)) & 1) ids.push_back(id);
  return ids;
}

}  // namespace qmlx::grammar::test_support

#include "grammar/pushdown_stepper.h"

namespace qmlx::grammar::test_support {

// Whether the whole of `text` is a complete sentence of the grammar, fed byte by byte.
inline bool accepts(const CompiledGrammar& g, std::string_view text) {
  StackArena arena;
  PushdownStepper stepper(*g.grammar, arena);
  ParserState a, b;
  stepper.start_state(a);
  for (char c : text) {
    if (!stepper.step(a, static_cast<uint8_t>(c), b)) return false;
    std::swap(a, b);
  }
  return a.complete;
}

}  // namespace qmlx::grammar::test_support
