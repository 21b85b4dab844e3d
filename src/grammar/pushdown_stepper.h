// PushdownStepper: runs a Grammar over bytes as a nondeterministic pushdown automaton. A parser
// state is a set of threads, each a byte-consuming node plus a call stack; stacks are shared,
// interned frames in a StackArena, so equal stacks are equal ids and states stay small. A step
// consumes one byte and follows every epsilon move (splits, calls, returns) to the next
// byte-consuming nodes. `complete` records that the root rule can end after the bytes so far.
// A counted node's body runs under a frame that carries the count of completed repetitions;
// when the body ends, the frame's count decides whether it repeats, the caller goes on, or both.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"

namespace qmlx::grammar {

struct Thread {
  uint32_t node = 0;   // a kBytes node
  uint32_t stack = 0;  // a StackArena frame id; 0 is the empty stack
  bool operator==(const Thread&) const = default;
};

struct ParserState {
  std::vector<Thread> threads;
  bool complete = false;  // the root rule can end here
  void clear() {
    threads.clear();
    complete = false;
  }
  bool alive() const { return !threads.empty() || complete; }
};

class StackArena {
 public:
  // Frame::count of a rule call's frame (not a counted repetition's).
  static constexpr uint32_t kNoCount = 0xFFFFFFFFu;
  // Set in Frame::count of a relative frame (TokenMaskTables::build only): its count is the
  // repetitions completed since a walk began, and it neither stops repeating nor lets the
  // caller go on; each completion is reported in PushdownStepper::exits() instead.
  static constexpr uint32_t kRelative = 0x80000000u;
  struct Frame {
    uint32_t return_node;  // where the caller continues once the callee ends; or the kCounted node
    uint32_t parent;
    uint32_t count = kNoCount;  // a counted repetition's frame: repetitions completed before
  };
  StackArena() { frames_.push_back({0, 0, kNoCount}); }
  uint32_t push(uint32_t return_node, uint32_t parent, uint32_t count = kNoCount) {
    Key key{(uint64_t{return_node} << 32) | parent, count};
    auto [it, inserted] = index_.try_emplace(key, static_cast<uint32_t>(frames_.size()));
    if (inserted) frames_.push_back({return_node, parent, count});
    return it->second;
  }
  const Frame& frame(uint32_t id) const { return frames_[id]; }
  size_t size() const { return frames_.size(); }

 private:
  struct Key {
    uint64_t node_parent;
    uint32_t count;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return static_cast<size_t>((k.node_parent ^ (uint64_t{k.count} << 17)) *
                                 0x9E3779B97F4A7C15ull) >>
             7;
    }
  };
  std::vector<Frame> frames_;
  std::unordered_map<Key, uint32_t, KeyHash> index_;
};

// A set of (node, stack) pairs cleared in O(1) by bumping a generation.
class VisitedSet {
 public:
  VisitedSet() { resize(256); }
  void clear() {
    if (++generation_ == 0) resize(stamps_.size());
    count_ = 0;
  }
  bool insert(uint64_t key);

 private:
  void resize(size_t size);
  std::vector<uint64_t> keys_;
  std::vector<uint32_t> stamps_;
  uint32_t generation_ = 1;
  size_t count_ = 0;
};

class PushdownStepper {
 public:
  PushdownStepper(const Grammar& grammar, StackArena& arena) : g_(grammar), arena_(arena) {}

  // The state before any byte: the root rule's start, with an empty stack.
  void start_state(ParserState& out);
  // The state at node `node` with stack `stack`, epsilon moves followed.
  void state_at(uint32_t node, uint32_t stack, ParserState& out);
  // The state after the frame `stack` returns (its caller's continuation); stack 0 returning
  // means the root rule ended, so the result is only `complete`.
  void state_after_return(uint32_t stack, ParserState& out);
  // Consumes `byte`; returns out.alive().
  bool step(const ParserState& in, uint8_t byte, ParserState& out);
  // The counts at which a relative frame (StackArena::kRelative) completed a repetition during
  // the last call above (unsorted, possibly repeated). The caller would go on from there.
  const std::vector<uint32_t>& exits() const { return exits_; }

 private:
  void closure(uint32_t node, uint32_t stack, ParserState& out);
  void start(ParserState& out) {
    out.clear();
    visited_.clear();
    exits_.clear();
  }

  const Grammar& g_;
  StackArena& arena_;
  VisitedSet visited_;
  std::vector<Thread> work_;
  std::vector<uint32_t> exits_;
};

}  // namespace qmlx::grammar
