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
  const Entry& current = history_.back();
  if (current.terminated) {
    std::fill(mask.begin(), mask.end(), 0);
    return;
  }
  const std::vector<Thread>& threads = current.state.threads;
  set_accepted(threads, mask);
  heads_done_.clear();
  for (const Thread& t : threads) {
    const TokenMaskTables::NodeTable& table = tables_->node_table(t.node);
    if (!table.counted()) {
      if (table.remainders.size() > 0) add_remainder_tokens(table, t.stack, mask, 0, UINT32_MAX);
      continue;
    }
    // A counted body's thread: its stack's top frame is the repetition's, holding the count;
    // the rule around the repetition runs on the frame's parent.
    const StackArena::Frame& frame = arena_.frame(t.stack);
    if (far_from_bounds(table, frame.count)) {
      if (table.remainders.size() > 0)
        add_remainder_tokens(table, frame.parent, mask, 0, UINT32_MAX);
    } else if (!add_counted_head(table.repeat, t, threads, mask)) {
      add_counted(table, frame.count, frame.parent, mask);
    }
  }
  if (current.state.complete)
    for (int32_t id : tables_->vocab().stop_token_ids())
      mask[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
}

bool GrammarMatcher::far_from_bounds(const TokenMaskTables::NodeTable& table,
                                     uint32_t count) const {
  const RepeatSpec& rep = tables_->grammar().repeats[table.repeat];
  return uint64_t{count} + 1 >= rep.min &&
         (rep.max == RepeatSpec::kUnbounded || uint64_t{count} + table.reach <= rep.max);
}

// A counted body's thread near a bound, `count` repetitions completed: the tokens staying in
// the loop completing k with count + k < max, and those leaving after k with
// min <= count + k <= max (their remainders walked from the caller, as for other nodes).
void GrammarMatcher::add_counted(const TokenMaskTables::NodeTable& table, uint32_t count,
                                 uint32_t parent, std::span<uint64_t> mask) {
  const RepeatSpec& rep = tables_->grammar().repeats[table.repeat];
  auto set = [&](int32_t id) { mask[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63); };
  if (!table.inside_ids.empty()) {
    auto most = static_cast<uint32_t>(table.inside_begin.size() - 2);
    uint32_t j = rep.max == RepeatSpec::kUnbounded ? most : std::min(most, rep.max - 1 - count);
    uint32_t from = 0;
    if (!table.inside_levels.empty()) {
      auto level = std::min<uint32_t>(j, static_cast<uint32_t>(table.inside_levels.size() - 1));
      const std::vector<uint64_t>& bits = table.inside_levels[level];
      for (size_t w = 0; w < bits.size(); ++w) mask[w] |= bits[w];
      from = table.inside_begin[level + 1];
    }
    for (uint32_t i = from; i < table.inside_begin[j + 1]; ++i) set(table.inside_ids[i]);
  }
  uint32_t lo = rep.min > count + 1 ? rep.min - count : 1;
  uint32_t hi = rep.max == RepeatSpec::kUnbounded ? UINT32_MAX : rep.max - count;
  if (lo > hi) return;
  auto most_exit = static_cast<uint32_t>(table.exit_begin.size() - 2);
  if (lo <= most_exit)
    for (uint32_t i = table.exit_begin[lo]; i < table.exit_begin[std::min(hi, most_exit) + 1]; ++i)
      set(table.exit_ids[i]);
  if (table.remainders.size() > 0) add_remainder_tokens(table, parent, mask, lo, hi);
}

// At a repetition's start all the body's first nodes are threads with one stack: their merged
// table is added once for all of them. False when `t` is not part of such a full head.
bool GrammarMatcher::add_counted_head(uint32_t repeat, const Thread& t,
                                      const std::vector<Thread>& threads,
                                      std::span<uint64_t> mask) {
  const TokenMaskTables::RepeatHead& head = tables_->repeat_head(repeat);
  if (!std::binary_search(head.nodes.begin(), head.nodes.end(), t.node)) return false;
  for (const Thread& done : heads_done_)
    if (done.node == repeat && done.stack == t.stack) return true;  // added already
  for (uint32_t n : head.nodes)
    if (std::find(threads.begin(), threads.end(), Thread{n, t.stack}) == threads.end())
      return false;
  heads_done_.push_back({repeat, t.stack});
  const StackArena::Frame& frame = arena_.frame(t.stack);
  add_counted(tables_->table_at(head.table), frame.count, frame.parent, mask);
  return true;
}

void GrammarMatcher::set_accepted(const std::vector<Thread>& threads, std::span<uint64_t> mask) {
  union_key_.clear();
  for (const Thread& t : threads) {
    const TokenMaskTables::NodeTable& table = tables_->node_table(t.node);
    // A counted body's thread near a bound adds its own tokens (add_counted), not a union.
    if (table.counted() && !far_from_bounds(table, arena_.frame(t.stack).count)) continue;
    union_key_.push_back(tables_->table_index(t.node));
  }
  std::sort(union_key_.begin(), union_key_.end());
  union_key_.erase(std::unique(union_key_.begin(), union_key_.end()), union_key_.end());
  const bool dense = std::any_of(union_key_.begin(), union_key_.end(), [&](uint32_t index) {
    return !tables_->table_at(index).accepted_bits.empty();
  });
  if (!dense) {  // a few ids each (a key, a keyword): setting them beats copying a union
    std::fill(mask.begin(), mask.end(), 0);
    for (uint32_t index : union_key_) add_accepted(index, mask.data());
    return;
  }
  const std::vector<uint64_t>& accepted = accepted_union();
  std::copy(accepted.begin(), accepted.end(), mask.begin());
  std::fill(mask.begin() + static_cast<ptrdiff_t>(accepted.size()), mask.end(), 0);
}

void GrammarMatcher::add_accepted(uint32_t table_index, uint64_t* mask) const {
  const TokenMaskTables::NodeTable& table = tables_->table_at(table_index);
  const uint64_t* bits = table.accepted_bits.data();
  for (size_t w = 0; w < table.accepted_bits.size(); ++w) mask[w] |= bits[w];
  for (int32_t id : table.accepted_ids)
    mask[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
}

const std::vector<uint64_t>& GrammarMatcher::accepted_union() {
  // Enough for the node sets one cycle of a JSON value goes through (key, colon, value start,
  // string contents, comma or close); a miss costs what OR-ing the tables did before.
  constexpr size_t kKept = 8;
  auto hit = std::find_if(unions_.begin(), unions_.end(),
                          [&](const AcceptedUnion& u) { return u.tables == union_key_; });
  if (hit == unions_.end()) {
    if (unions_.size() < kKept) unions_.emplace_back();
    hit = unions_.end() - 1;  // the least recently used, overwritten
    hit->tables = union_key_;
    hit->bits.assign(mask_words(), 0);
    for (uint32_t index : union_key_) add_accepted(index, hit->bits.data());
  }
  std::rotate(unions_.begin(), hit, hit + 1);  // most recently used first
  return unions_.front().bits;
}

// Walks the node's remainder trie from the state its caller continues in; a counted body's
// remainders only where the repetitions they complete lie in [lo, hi].
void GrammarMatcher::add_remainder_tokens(const TokenMaskTables::NodeTable& table, uint32_t stack,
                                          std::span<uint64_t> mask, uint32_t lo, uint32_t hi) {
  const bool filter = !table.remainder_counts.empty() && (lo > 0 || hi < UINT32_MAX);
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
        if (filter && (table.remainder_counts[k] < lo || table.remainder_counts[k] > hi)) continue;
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
