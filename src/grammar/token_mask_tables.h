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
  struct NodeTable {
    std::vector<uint64_t> accepted_bits;  // a full bitmask when many tokens are accepted
    std::vector<int32_t> accepted_ids;    // else the ids
    ByteTrie remainders;                  // value = index into remainder_tokens offsets
    std::vector<uint32_t> remainder_token_begin;
    std::vector<int32_t> remainder_tokens;
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
  size_t memory_bytes() const { return memory_bytes_; }

 private:
  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const TokenVocabulary> vocab_;
  std::vector<uint32_t> table_of_node_;  // grammar node -> index into tables_
  std::vector<NodeTable> tables_;
  size_t memory_bytes_ = 0;
};

}  // namespace qmlx::grammar
