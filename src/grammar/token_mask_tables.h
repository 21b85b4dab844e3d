// TokenMaskTables: a grammar compiled against one vocabulary. For every byte-consuming node of
// the grammar, the vocabulary is walked once (at build time) from that node alone, as if its
// rule had no caller. Each token is then one of:
//   accepted  - consumed entirely inside the rule: allowed whatever the stack (most tokens);
//   rejected  - fails inside the rule: never allowed;
//   uncertain - the rule ends part-way through the token: the rest of the token (a
//               "remainder", such as `},` after a string's closing quote) depends on the caller.
// At run time a mask is the union of the accepted sets of the current threads' nodes, plus the
// uncertain tokens whose remainder the actual stack accepts; remainders are few and short, kept
// in a small trie per node (the "context-independent tokens" idea of xgrammar).
//
// A node of a counted repetition's body (x{n,m} with large counts, such as a JSON string's
// characters under maxLength) is walked once too, with the count made relative: the walk
// records, per token, how many repetitions it completes. A token that stays in the loop having
// completed k is allowed while count + k < max ("inside", kept cumulatively by k, so a mask near
// the bound is one bitset copy); one that leaves the loop after k repetitions is allowed while
// min <= count + k <= max (an "exit"; its remainder, if the rule also ends, keyed by k). Far from
// both bounds every such token is allowed, and the node's table reads like any other.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "grammar/byte_trie.h"
#include "grammar/grammar.h"
#include "grammar/token_vocabulary.h"

namespace qmlx::grammar {

struct MaskBuildLimits {
  std::chrono::milliseconds max_build_time{5000};
};

class TokenMaskTables {
 public:
  static constexpr uint32_t kNotCounted = 0xFFFFFFFFu;
  struct NodeTable {
    // For a counted body node: the tokens allowed far from the bounds (see `reach`).
    std::vector<uint64_t> accepted_bits;  // a full bitmask when many tokens are accepted
    std::vector<int32_t> accepted_ids;    // else the ids
    ByteTrie remainders;                  // value = index into remainder_token_begin
    std::vector<uint32_t> remainder_token_begin;
    std::vector<int32_t> remainder_tokens;
    // --- a counted repetition's body node only ---
    uint32_t repeat = kNotCounted;           // index into Grammar::repeats
    std::vector<uint32_t> remainder_counts;  // per remainder_tokens entry: repetitions completed
    // With count c repetitions completed (the frame's count), every token here is allowed when
    // c + 1 >= min and c + reach <= max (the accepted set and all remainders apply).
    uint32_t reach = 0;
    // Tokens staying in the loop, by the least repetitions k they complete: ids with k = j are
    // inside_ids[inside_begin[j], inside_begin[j + 1]). inside_levels[j] (when many tokens
    // stay) is the bitmask of those with k <= j, for j < inside_levels.size().
    std::vector<int32_t> inside_ids;
    std::vector<uint32_t> inside_begin;
    std::vector<std::vector<uint64_t>> inside_levels;
    // Tokens leaving the loop after k repetitions and consumed in the rule (no remainder): ids
    // exit_ids[exit_begin[k], exit_begin[k + 1]) (a token may be listed under several k).
    std::vector<int32_t> exit_ids;
    std::vector<uint32_t> exit_begin;
    bool counted() const { return repeat != kNotCounted; }
  };

  // Throws GrammarError (limit "max_compile_ms") when building takes longer than allowed.
  static std::shared_ptr<const TokenMaskTables> build(std::shared_ptr<const Grammar> grammar,
                                                      std::shared_ptr<const TokenVocabulary> vocab,
                                                      const MaskBuildLimits& limits = {});

  const Grammar& grammar() const { return *grammar_; }
  const TokenVocabulary& vocab() const { return *vocab_; }
  const NodeTable& node_table(uint32_t node) const { return tables_[table_of_node_[node]]; }
  // Nodes with equal indices share one table.
  uint32_t table_index(uint32_t node) const { return table_of_node_[node]; }
  const NodeTable& table_at(uint32_t index) const { return tables_[index]; }
  // A counted repetition's head: the body's first byte-consuming nodes (sorted), which appear
  // together with one stack at each repetition's start, and the table merged from theirs
  // (nodes empty: none).
  struct RepeatHead {
    std::vector<uint32_t> nodes;
    uint32_t table = 0;
  };
  const RepeatHead& repeat_head(uint32_t repeat) const { return heads_[repeat]; }
  size_t memory_bytes() const { return memory_bytes_; }

 private:
  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const TokenVocabulary> vocab_;
  std::vector<uint32_t> table_of_node_;  // grammar node -> index into tables_
  std::vector<NodeTable> tables_;
  std::vector<RepeatHead> heads_;  // per Grammar::repeats entry
  size_t memory_bytes_ = 0;
};

}  // namespace qmlx::grammar
