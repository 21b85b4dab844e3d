#include "grammar/token_mask_tables.h"

#include <map>
#include <string>

#include "grammar/pushdown_stepper.h"

namespace qmlx::grammar {
namespace {

// Walks the vocabulary trie from one node with an empty stack and sorts tokens into accepted and
// uncertain (with their remainders); rejected tokens are simply not recorded.
TokenMaskTables::NodeTable build_node_table(uint32_t node, const TokenVocabulary& vocab,
                                            PushdownStepper& stepper) {
  const ByteTrie& trie = vocab.trie();
  std::vector<ParserState> states(trie.max_depth() + 1);
  // ended_on_path[d]: how many of the depths 1..d could end the rule (stack popped past root).
  std::vector<uint32_t> ended_on_path(trie.max_depth() + 1, 0);
  stepper.state_at(node, 0, states[0]);
  std::vector<int32_t> accepted;
  std::map<std::string, std::vector<int32_t>> remainders;
  for (size_t n = 0; n < trie.size();) {
    uint32_t d = trie.depth(n);
    ParserState& cur = states[d];
    if (states[d - 1].threads.empty()) {
      cur.clear();
    } else {
      stepper.step(states[d - 1], trie.byte(n), cur);
    }
    ended_on_path[d] = ended_on_path[d - 1] + (cur.complete ? 1 : 0);
    if (!cur.alive() && ended_on_path[d - 1] == 0) {
      n = trie.subtree_end(n);  // nothing under this prefix can match
      continue;
    }
    auto [first, last] = trie.values(n);
    for (const int32_t* v = first; v != last; ++v) {
      if (cur.alive()) {
        accepted.push_back(*v);
        continue;
      }
      const std::string& bytes = vocab.bytes(*v);
      for (uint32_t j = 1; j < d; ++j)
        if (states[j].complete) remainders[bytes.substr(j)].push_back(*v);
    }
    ++n;
  }
  TokenMaskTables::NodeTable table;
  if (accepted.size() * 32 > static_cast<size_t>(vocab.size())) {
    table.accepted_bits.assign(vocab.mask_words(), 0);
    for (int32_t id : accepted)
      table.accepted_bits[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
  } else {
    table.accepted_ids = std::move(accepted);
  }
  std::vector<std::pair<std::string, int32_t>> items;
  for (auto& [rest, ids] : remainders) {
    items.emplace_back(rest, static_cast<int32_t>(table.remainder_token_begin.size()));
    table.remainder_token_begin.push_back(static_cast<uint32_t>(table.remainder_tokens.size()));
    table.remainder_tokens.insert(table.remainder_tokens.end(), ids.begin(), ids.end());
  }
  table.remainder_token_begin.push_back(static_cast<uint32_t>(table.remainder_tokens.size()));
  table.remainders = ByteTrie(std::move(items));
  return table;
}

size_t table_bytes(const TokenMaskTables::NodeTable& t) {
  return sizeof(t) + (t.accepted_bits.size() * sizeof(uint64_t)) +
         (t.accepted_ids.size() + t.remainder_tokens.size() + t.remainder_token_begin.size()) * 4 +
         t.remainders.memory_bytes();
}

}  // namespace

std::shared_ptr<const TokenMaskTables> TokenMaskTables::build(
    std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenVocabulary> vocab,
    const MaskBuildLimits& limits) {
  auto deadline = std::chrono::steady_clock::now() + limits.max_build_time;
  auto tables = std::make_shared<TokenMaskTables>();
  const Grammar& g = *grammar;
  StackArena arena;
  PushdownStepper stepper(g, arena);
  tables->table_of_node_.assign(g.nodes.size(), 0);
  tables->tables_.emplace_back();  // index 0: the empty table of non-consuming nodes
  // Nodes with the same byte set and the same continuation have the same table.
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> shared;
  for (uint32_t n = 0; n < g.nodes.size(); ++n) {
    const GrammarNode& node = g.nodes[n];
    if (node.kind != GrammarNode::Kind::kBytes) continue;
    auto [it, inserted] = shared.try_emplace({node.arg, node.next}, tables->tables_.size());
    if (inserted) {
      if (std::chrono::steady_clock::now() > deadline)
        throw GrammarError("grammar: compiling against the vocabulary took longer than " +
                               std::to_string(limits.max_build_time.count()) +
                               " ms (limit max_compile_ms)",
                           "max_compile_ms");
      tables->tables_.push_back(build_node_table(n, *vocab, stepper));
      tables->memory_bytes_ += table_bytes(tables->tables_.back());
    }
    tables->table_of_node_[n] = it->second;
  }
  tables->memory_bytes_ += g.memory_bytes() + tables->table_of_node_.size() * sizeof(uint32_t);
  tables->grammar_ = std::move(grammar);
  tables->vocab_ = std::move(vocab);
  return tables;
}

}  // namespace qmlx::grammar
