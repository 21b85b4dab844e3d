#include "grammar/pushdown_stepper.h"

#include <algorithm>

namespace qmlx::grammar {

bool VisitedSet::insert(uint64_t key) {
  if ((count_ + 1) * 2 > stamps_.size()) {
    // Grow, keeping this generation's keys.
    std::vector<uint64_t> live;
    for (size_t i = 0; i < stamps_.size(); ++i)
      if (stamps_[i] == generation_) live.push_back(keys_[i]);
    resize(stamps_.size() * 2);
    for (uint64_t k : live) insert(k);
  }
  size_t mask = stamps_.size() - 1;
  size_t i = (key * 0x9E3779B97F4A7C15ull) >> 40 & mask;
  for (;; i = (i + 1) & mask) {
    if (stamps_[i] != generation_) {
      stamps_[i] = generation_;
      keys_[i] = key;
      ++count_;
      return true;
    }
    if (keys_[i] == key) return false;
  }
}

void VisitedSet::resize(size_t size) {
  keys_.assign(size, 0);
  stamps_.assign(size, 0);
  generation_ = 1;
  count_ = 0;
}

void PushdownStepper::start_state(ParserState& out) {
  start(out);
  closure(g_.rule_start[g_.root_rule], 0, out);
}

void PushdownStepper::state_at(uint32_t node, uint32_t stack, ParserState& out) {
  start(out);
  closure(node, stack, out);
}

void PushdownStepper::state_after_return(uint32_t stack, ParserState& out) {
  start(out);
  closure(Grammar::kEndNode, stack, out);
}

bool PushdownStepper::step(const ParserState& in, uint8_t byte, ParserState& out) {
  start(out);
  for (const Thread& t : in.threads) {
    const GrammarNode& node = g_.nodes[t.node];
    if (g_.byte_sets[node.arg].contains(byte)) closure(node.next, t.stack, out);
  }
  return out.alive();
}

void PushdownStepper::closure(uint32_t node, uint32_t stack, ParserState& out) {
  work_.clear();
  work_.push_back({node, stack});
  while (!work_.empty()) {
    Thread t = work_.back();
    work_.pop_back();
    if (!visited_.insert((uint64_t{t.node} << 32) | t.stack)) continue;
    const GrammarNode& n = g_.nodes[t.node];
    switch (n.kind) {
      case GrammarNode::Kind::kBytes:
        out.threads.push_back(t);
        break;
      case GrammarNode::Kind::kSplit:
        for (uint32_t i = n.next; i-- > 0;) work_.push_back({g_.split_targets[n.arg + i], t.stack});
        break;
      case GrammarNode::Kind::kRule:
        work_.push_back({g_.rule_start[n.arg], arena_.push(n.next, t.stack)});
        break;
      case GrammarNode::Kind::kCounted: {
        const RepeatSpec& rep = g_.repeats[n.arg];
        if (rep.min == 0) work_.push_back({n.next, t.stack});
        if (rep.max > 0)
          work_.push_back({g_.rule_start[rep.body_rule], arena_.push(t.node, t.stack, 0)});
        break;
      }
      case GrammarNode::Kind::kEnd: {
        if (t.stack == 0) {
          out.complete = true;
          break;
        }
        const StackArena::Frame f = arena_.frame(t.stack);  // a copy: push() may reallocate
        if (f.count == StackArena::kNoCount) {
          work_.push_back({f.return_node, f.parent});
          break;
        }
        const GrammarNode& counted = g_.nodes[f.return_node];
        const RepeatSpec& rep = g_.repeats[counted.arg];
        uint32_t body = g_.rule_start[rep.body_rule];
        if (f.count & StackArena::kRelative) {
          uint32_t done = (f.count & ~StackArena::kRelative) + 1;
          exits_.push_back(done);
          work_.push_back(
              {body, arena_.push(f.return_node, f.parent, done | StackArena::kRelative)});
          break;
        }
        uint32_t done = f.count + 1;
        if (done >= rep.min) work_.push_back({counted.next, f.parent});
        if (done < rep.max) {
          // Without an upper bound only "min reached" matters: the count stops there, so the
          // frames stay few however long the repetition runs.
          uint32_t kept = rep.max == RepeatSpec::kUnbounded ? std::min(done, rep.min) : done;
          work_.push_back({body, arena_.push(f.return_node, f.parent, kept)});
        }
        break;
      }
    }
  }
}

}  // namespace qmlx::grammar
