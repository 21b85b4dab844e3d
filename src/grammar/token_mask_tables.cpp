#include "grammar/token_mask_tables.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "grammar/pushdown_stepper.h"

namespace qmlx::grammar {
namespace {

void set_accepted(TokenMaskTables::NodeTable& table, std::vector<int32_t> accepted,
                  const TokenVocabulary& vocab) {
  if (accepted.size() * 32 > static_cast<size_t>(vocab.size())) {
    table.accepted_bits.assign(vocab.mask_words(), 0);
    for (int32_t id : accepted)
      table.accepted_bits[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
  } else {
    table.accepted_ids = std::move(accepted);
  }
}

// The tokens left with one remainder, and (counted tables) the repetitions each completed.
struct RemainderGroup {
  std::string rest;
  std::vector<std::pair<int32_t, uint32_t>> tokens;  // (id, k)
};

void set_remainders(TokenMaskTables::NodeTable& table, const std::vector<RemainderGroup>& groups,
                    bool with_counts) {
  std::vector<std::pair<std::string, int32_t>> items;
  for (const auto& group : groups) {
    items.emplace_back(group.rest, static_cast<int32_t>(table.remainder_token_begin.size()));
    table.remainder_token_begin.push_back(static_cast<uint32_t>(table.remainder_tokens.size()));
    for (const auto& [id, k] : group.tokens) {
      table.remainder_tokens.push_back(id);
      if (with_counts) table.remainder_counts.push_back(k);
    }
  }
  table.remainder_token_begin.push_back(static_cast<uint32_t>(table.remainder_tokens.size()));
  table.remainders = ByteTrie(std::move(items));
}

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
  set_accepted(table, std::move(accepted), vocab);
  std::vector<RemainderGroup> groups;
  for (auto& [rest, ids] : remainders) {
    groups.push_back({rest, {}});
    for (int32_t id : ids) groups.back().tokens.push_back({id, 0});
  }
  set_remainders(table, groups, false);
  return table;
}

// One level of a counted body node's walk: the threads still in the loop (their stacks rooted
// at the relative frame) and, per count k, the threads that left it after k repetitions.
struct CountedLevel {
  ParserState inside;
  std::vector<std::pair<uint32_t, ParserState>> exited;  // the first `used` entries are live
  size_t used = 0;
};

ParserState& exited_slot(CountedLevel& level, uint32_t k) {
  for (size_t i = 0; i < level.used; ++i)
    if (level.exited[i].first == k) return level.exited[i].second;
  if (level.used == level.exited.size()) level.exited.emplace_back();
  auto& slot = level.exited[level.used++];
  slot.first = k;
  slot.second.clear();
  return slot.second;
}

void merge_into(ParserState& into, const ParserState& from) {
  for (const Thread& t : from.threads)
    if (std::find(into.threads.begin(), into.threads.end(), t) == into.threads.end())
      into.threads.push_back(t);
  into.complete = into.complete || from.complete;
}

// The repetitions completed since the walk began: the count of the stack's bottom frame (the
// relative one).
uint32_t relative_count(const StackArena& arena, uint32_t stack) {
  for (;;) {
    const StackArena::Frame& f = arena.frame(stack);
    if (f.parent == 0) return f.count & ~StackArena::kRelative;
    stack = f.parent;
  }
}

// What a counted body node's walk finds, per token: the least repetitions it completes staying
// in the loop, the repetitions after which it leaves (consumed in the rule), and its remainders.
struct CountedWalk {
  std::vector<uint32_t> least;   // per id; or none
  std::vector<int32_t> staying;  // the ids with a `least` (unsorted, maybe repeated)
  std::vector<std::pair<uint32_t, int32_t>> exits;                              // (k, id)
  std::map<std::string, std::vector<std::pair<int32_t, uint32_t>>> remainders;  // (id, k)
};
constexpr uint32_t kNone = UINT32_MAX;

// A token that stays in the loop having completed kin, and can also leave after k >= kin, is
// allowed while count + kin < max, or while min <= count + k <= max: that is count + kin < max
// when kin < k, and count + k <= max when kin == k (min <= max), which reads as staying with
// k - 1. So only exits before any staying remain exits: the tokens that end the string.
// `exits` (one token's, or all) sorted by k, larger first.
void fold_exits(std::vector<uint32_t>& least, std::vector<std::pair<uint32_t, int32_t>>& exits) {
  std::erase_if(exits, [&](const std::pair<uint32_t, int32_t>& e) {
    uint32_t& kin = least[static_cast<size_t>(e.second)];
    if (kin == kNone || kin > e.first) return false;
    if (kin == e.first) kin = e.first - 1;
    return true;
  });
}

// A counted repetition's body node: one walk with the repetition's count relative to where the
// token starts (see token_mask_tables.h).
CountedWalk walk_counted(uint32_t node, uint32_t repeat, const Grammar& g,
                         const TokenVocabulary& vocab, PushdownStepper& stepper,
                         StackArena& arena) {
  const ByteTrie& trie = vocab.trie();
  const uint32_t counted_node = g.repeats[repeat].node;
  const uint32_t after = g.nodes[counted_node].next;
  std::vector<CountedLevel> levels(trie.max_depth() + 1);
  std::vector<uint32_t> ended_on_path(trie.max_depth() + 1, 0);
  stepper.state_at(node, arena.push(counted_node, 0, StackArena::kRelative), levels[0].inside);
  ParserState scratch;
  std::vector<uint32_t> new_exits;
  CountedWalk out;
  auto& [least, staying, exits, remainders] = out;
  least.assign(static_cast<size_t>(vocab.size()), kNone);
  std::vector<std::pair<uint32_t, int32_t>> token_exits;
  for (size_t n = 0; n < trie.size();) {
    uint32_t d = trie.depth(n);
    CountedLevel& prev = levels[d - 1];
    CountedLevel& cur = levels[d];
    uint8_t byte = trie.byte(n);
    cur.used = 0;
    new_exits.clear();
    if (prev.inside.threads.empty()) {
      cur.inside.clear();
    } else {
      stepper.step(prev.inside, byte, cur.inside);
      new_exits = stepper.exits();
    }
    for (size_t i = 0; i < prev.used; ++i) {
      const auto& [k, state] = prev.exited[i];
      if (!state.threads.empty() && stepper.step(state, byte, scratch))
        merge_into(exited_slot(cur, k), scratch);
    }
    std::sort(new_exits.begin(), new_exits.end());
    new_exits.erase(std::unique(new_exits.begin(), new_exits.end()), new_exits.end());
    for (uint32_t k : new_exits) {
      stepper.state_at(after, 0, scratch);
      if (scratch.alive()) merge_into(exited_slot(cur, k), scratch);
    }
    bool complete = false, exited_alive = false;
    for (size_t i = 0; i < cur.used; ++i) {
      complete = complete || cur.exited[i].second.complete;
      exited_alive = exited_alive || cur.exited[i].second.alive();
    }
    ended_on_path[d] = ended_on_path[d - 1] + (complete ? 1 : 0);
    if (cur.inside.threads.empty() && !exited_alive && ended_on_path[d - 1] == 0) {
      n = trie.subtree_end(n);  // nothing under this prefix can match
      continue;
    }
    auto [first, last] = trie.values(n);
    for (const int32_t* v = first; v != last; ++v) {
      uint32_t& kin = least[static_cast<size_t>(*v)];
      for (const Thread& t : cur.inside.threads)
        kin = std::min(kin, relative_count(arena, t.stack));
      if (kin != kNone) staying.push_back(*v);
      token_exits.clear();
      for (size_t i = 0; i < cur.used; ++i)
        if (cur.exited[i].second.alive()) token_exits.emplace_back(cur.exited[i].first, *v);
      std::sort(token_exits.begin(), token_exits.end(), std::greater<>());
      fold_exits(least, token_exits);
      exits.insert(exits.end(), token_exits.begin(), token_exits.end());
      if (ended_on_path[d - 1] == 0) continue;
      const std::string& bytes = vocab.bytes(*v);
      for (uint32_t j = 1; j < d; ++j)
        for (size_t i = 0; i < levels[j].used; ++i)
          if (levels[j].exited[i].second.complete)
            remainders[bytes.substr(j)].emplace_back(*v, levels[j].exited[i].first);
    }
    ++n;
  }
  return out;
}

TokenMaskTables::NodeTable counted_table(CountedWalk walk, uint32_t repeat,
                                         const TokenVocabulary& vocab) {
  auto& [least, staying, exits, remainders] = walk;
  TokenMaskTables::NodeTable table;
  table.repeat = repeat;
  std::sort(exits.begin(), exits.end(), std::greater<>());
  exits.erase(std::unique(exits.begin(), exits.end()), exits.end());
  fold_exits(least, exits);  // again, for a head's tables merged
  std::reverse(exits.begin(), exits.end());
  // The ids with a `least`, ascending (most body nodes have few).
  if (staying.size() * 8 > least.size()) {
    staying.clear();
    for (size_t id = 0; id < least.size(); ++id)
      if (least[id] != kNone) staying.push_back(static_cast<int32_t>(id));
  } else {
    std::sort(staying.begin(), staying.end());
    staying.erase(std::unique(staying.begin(), staying.end()), staying.end());
  }
  size_t inside_count = staying.size();
  uint32_t most_inside = 0;
  for (int32_t id : staying) most_inside = std::max(most_inside, least[static_cast<size_t>(id)]);
  uint32_t most_exit = exits.empty() ? 0 : exits.back().first;
  std::vector<RemainderGroup> groups;
  for (auto& [rest, tokens] : remainders) {
    std::sort(tokens.begin(), tokens.end());
    tokens.erase(std::unique(tokens.begin(), tokens.end()), tokens.end());
    for (const auto& [id, k] : tokens) most_exit = std::max(most_exit, k);
    groups.push_back({rest, std::move(tokens)});
  }
  table.reach = std::max(inside_count == 0 ? 0 : most_inside + 1, most_exit);
  set_remainders(table, groups, true);

  // Far from the bounds: every token that stays or leaves.
  std::vector<int32_t> all = staying;
  for (const auto& [k, id] : exits) all.push_back(id);
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  set_accepted(table, std::move(all), vocab);

  // The staying tokens by k (a counting sort), ids ascending within one k.
  table.inside_begin.assign(inside_count == 0 ? 1 : most_inside + 2, 0);
  for (int32_t id : staying) ++table.inside_begin[least[static_cast<size_t>(id)] + 1];
  for (size_t j = 1; j < table.inside_begin.size(); ++j)
    table.inside_begin[j] += table.inside_begin[j - 1];
  table.inside_ids.resize(inside_count);
  {
    std::vector<uint32_t> at(table.inside_begin.begin(), table.inside_begin.end());
    for (int32_t id : staying) table.inside_ids[at[least[static_cast<size_t>(id)]]++] = id;
  }
  if (inside_count * 32 > static_cast<size_t>(vocab.size())) {
    // Bitmasks for the first levels, until the tokens completing more repetitions are few
    // enough to set one by one.
    constexpr size_t kFewIds = 2048;
    std::vector<uint64_t> bits(vocab.mask_words(), 0);
    for (uint32_t j = 0; j <= most_inside; ++j) {
      for (uint32_t i = table.inside_begin[j]; i < table.inside_begin[j + 1]; ++i) {
        int32_t id = table.inside_ids[i];
        bits[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
      }
      table.inside_levels.push_back(bits);
      if (inside_count - table.inside_begin[j + 1] <= kFewIds) break;
    }
  }
  table.exit_begin.assign(most_exit + 2, 0);
  for (const auto& [k, id] : exits) {
    table.exit_ids.push_back(id);
    ++table.exit_begin[k + 1];
  }
  for (size_t j = 1; j < table.exit_begin.size(); ++j)
    table.exit_begin[j] += table.exit_begin[j - 1];
  return table;
}

size_t table_bytes(const TokenMaskTables::NodeTable& t) {
  size_t levels = 0;
  for (const auto& l : t.inside_levels) levels += l.size() * sizeof(uint64_t);
  return sizeof(t) + (t.accepted_bits.size() * sizeof(uint64_t)) + levels +
         (t.accepted_ids.size() + t.remainder_tokens.size() + t.remainder_token_begin.size() +
          t.remainder_counts.size() + t.inside_ids.size() + t.inside_begin.size() +
          t.exit_ids.size() + t.exit_begin.size()) *
             4 +
         t.remainders.memory_bytes();
}

// Which counted repetition's body each node belongs to (kNotCounted: none).
std::vector<uint32_t> repeat_of_nodes(const Grammar& g) {
  std::vector<uint32_t> of(g.nodes.size(), TokenMaskTables::kNotCounted);
  for (uint32_t r = 0; r < g.repeats.size(); ++r) {
    std::vector<uint32_t> work{g.rule_start[g.repeats[r].body_rule]};
    while (!work.empty()) {
      uint32_t n = work.back();
      work.pop_back();
      if (n == Grammar::kEndNode || of[n] == r) continue;
      of[n] = r;
      const GrammarNode& node = g.nodes[n];
      if (node.kind == GrammarNode::Kind::kSplit) {
        for (uint32_t i = 0; i < node.next; ++i) work.push_back(g.split_targets[node.arg + i]);
      } else {
        work.push_back(node.next);
      }
    }
  }
  return of;
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
  // Nodes with the same byte set and the same continuation (in the same repetition's body, if
  // any) have the same table.
  std::vector<uint32_t> repeat_of = repeat_of_nodes(g);
  // Each repetition's head: the body's first byte-consuming nodes, all at once at a repetition's
  // start. When all of them are counted body nodes, one table merged from theirs serves them
  // together near a bound (one bitmask instead of one per first-byte class).
  std::vector<std::set<uint32_t>> heads(g.repeats.size());
  for (uint32_t r = 0; r < g.repeats.size(); ++r) {
    ParserState head;
    uint32_t frame = arena.push(g.repeats[r].node, 0, StackArena::kRelative);
    stepper.state_at(g.rule_start[g.repeats[r].body_rule], frame, head);
    for (const Thread& t : head.threads) heads[r].insert(t.node);
    if (std::any_of(head.threads.begin(), head.threads.end(),
                    [&](const Thread& t) { return t.stack != frame || repeat_of[t.node] != r; }))
      heads[r].clear();
  }
  std::map<uint32_t, CountedWalk> walks;  // of the heads' nodes, by table index
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, uint32_t> shared;
  for (uint32_t n = 0; n < g.nodes.size(); ++n) {
    const GrammarNode& node = g.nodes[n];
    if (node.kind != GrammarNode::Kind::kBytes) continue;
    auto [it, inserted] =
        shared.try_emplace({node.arg, node.next, repeat_of[n]}, tables->tables_.size());
    if (inserted) {
      if (std::chrono::steady_clock::now() > deadline)
        throw GrammarError("grammar: compiling against the vocabulary took longer than " +
                               std::to_string(limits.max_build_time.count()) +
                               " ms (limit max_compile_ms)",
                           "max_compile_ms");
      if (repeat_of[n] == kNotCounted) {
        tables->tables_.push_back(build_node_table(n, *vocab, stepper));
      } else {
        CountedWalk walk = walk_counted(n, repeat_of[n], g, *vocab, stepper, arena);
        if (heads[repeat_of[n]].count(n)) walks.emplace(it->second, walk);
        tables->tables_.push_back(counted_table(std::move(walk), repeat_of[n], *vocab));
      }
      tables->memory_bytes_ += table_bytes(tables->tables_.back());
    }
    tables->table_of_node_[n] = it->second;
  }
  tables->heads_.resize(g.repeats.size());
  for (uint32_t r = 0; r < g.repeats.size(); ++r) {
    if (heads[r].size() < 2) continue;
    CountedWalk merged;
    std::set<uint32_t> merged_tables;
    for (uint32_t n : heads[r]) merged_tables.insert(tables->table_of_node_[n]);
    for (uint32_t t : merged_tables) {
      CountedWalk& w = walks.at(t);
      if (merged.least.empty()) merged.least.assign(w.least.size(), kNone);
      for (int32_t id : w.staying) {
        auto i = static_cast<size_t>(id);
        merged.least[i] = std::min(merged.least[i], w.least[i]);
      }
      merged.staying.insert(merged.staying.end(), w.staying.begin(), w.staying.end());
      merged.exits.insert(merged.exits.end(), w.exits.begin(), w.exits.end());
      for (auto& [rest, tokens] : w.remainders) {
        auto& to = merged.remainders[rest];
        to.insert(to.end(), tokens.begin(), tokens.end());
      }
    }
    tables->heads_[r].nodes.assign(heads[r].begin(), heads[r].end());
    tables->heads_[r].table = static_cast<uint32_t>(tables->tables_.size());
    tables->tables_.push_back(counted_table(std::move(merged), r, *vocab));
    tables->memory_bytes_ += table_bytes(tables->tables_.back());
  }
  tables->memory_bytes_ += g.memory_bytes() + tables->table_of_node_.size() * sizeof(uint32_t);
  tables->grammar_ = std::move(grammar);
  tables->vocab_ = std::move(vocab);
  return tables;
}

}  // namespace qmlx::grammar
