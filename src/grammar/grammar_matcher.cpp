#include "grammar/grammar_matcher.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace qmlx::grammar {

GrammarMatcher::GrammarMatcher(std::shared_ptr<const TokenMaskTables> tables, size_t max_rollback)
    : tables_(std::move(tables)),
      max_rollback_(max_rollback),
      stepper_(tables_->grammar(), arena_) {
  Entry start;
  stepper_.start_state(start.state);
  history_.push_back(std::move(start));
}

void GrammarMatcher::fill_next_token_bitmask(std::span<uint64_t> mask) {
  if (mask.size() < mask_words())
    throw std::invalid_argument("GrammarMatcher: a mask of " + std::to_string(mask.size()) +
                                " words cannot hold the vocabulary's " +
                                std::to_string(mask_words()));
  std::fill(mask.begin(), mask.end(), 0);
  const Entry& current = history_.back();
  if (current.terminated) return;
  const std::vector<Thread>& threads = current.state.threads;
  for (size_t i = 0; i < threads.size(); ++i) {
    const Thread& t = threads[i];
    const TokenMaskTables::NodeTable& table = tables_->node_table(t.node);
    // The accepted set depends on the node only: add it once per node.
    bool node_seen = false;
    for (size_t k = 0; k < i && !node_seen; ++k)
      node_seen = &tables_->node_table(threads[k].node) == &table;
    if (!node_seen) {
      if (!table.accepted_bits.empty()) {
        const uint64_t* bits = table.accepted_bits.data();
        for (size_t w = 0; w < table.accepted_bits.size(); ++w) mask[w] |= bits[w];
      }
      for (int32_t id : table.accepted_ids)
        mask[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
    }
    if (table.remainders.size() > 0) add_remainder_tokens(table, t.stack, mask);
  }
  if (current.state.complete)
    for (int32_t id : tables_->vocab().stop_token_ids())
      mask[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
}

// Walks the node's remainder trie from the state its caller continues in.
void GrammarMatcher::add_remainder_tokens(const TokenMaskTables::NodeTable& table, uint32_t stack,
                                          std::span<uint64_t> mask) {
  const ByteTrie& trie = table.remainders;
  walk_states_.resize(std::max<size_t>(walk_states_.size(), trie.max_depth() + 1));
  stepper_.state_after_return(stack, walk_states_[0]);
  if (walk_states_[0].threads.empty()) return;  // the root ended: no byte can follow
  for (size_t n = 0; n < trie.size();) {
    uint32_t d = trie.depth(n);
    ParserState& cur = walk_states_[d];
    if (walk_states_[d - 1].threads.empty() ||
        !stepper_.step(walk_states_[d - 1], trie.byte(n), cur)) {
      n = trie.subtree_end(n);
      continue;
    }
    auto [first, last] = trie.values(n);
    for (const int32_t* v = first; v != last; ++v)
      for (uint32_t k = table.remainder_token_begin[static_cast<size_t>(*v)];
           k < table.remainder_token_begin[static_cast<size_t>(*v) + 1]; ++k) {
        int32_t id = table.remainder_tokens[k];
        mask[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
      }
    ++n;
  }
}

bool GrammarMatcher::advance(const ParserState& from, std::string_view bytes, ParserState& out) {
  scratch_a_ = from;
  for (char c : bytes) {
    if (!stepper_.step(scratch_a_, static_cast<uint8_t>(c), scratch_b_)) return false;
    std::swap(scratch_a_, scratch_b_);
  }
  out = scratch_a_;
  return true;
}

bool GrammarMatcher::accept_token(int32_t id) {
  const TokenVocabulary& vocab = tables_->vocab();
  const Entry& current = history_.back();
  if (id < 0 || id >= vocab.size() || current.terminated) return false;
  if (vocab.is_stop(id)) {
    if (!current.state.complete) return false;
    push({current.state, true});
    return true;
  }
  if (vocab.is_special(id) || vocab.bytes(id).empty()) return false;
  return accept_bytes(vocab.bytes(id));
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
  if (history_.back().terminated) return false;
  Entry next;
  if (!advance(history_.back().state, bytes, next.state)) return false;
  push(std::move(next));
  return true;
}

void GrammarMatcher::push(Entry entry) {
  history_.push_back(std::move(entry));
  if (history_.size() > max_rollback_ + 1) history_.erase(history_.begin());
}

void GrammarMatcher::rollback(size_t n) {
  if (n >= history_.size())
    throw std::out_of_range("GrammarMatcher::rollback: not that many tokens remembered");
  history_.resize(history_.size() - n);
}

}  // namespace qmlx::grammar
