// PushdownStepper: runs a Grammar over bytes as a nondeterministic pushdown automaton. A parser
// state is a set of threads, each a byte-consuming node plus a call stack; stacks are shared,
// interned frames in a StackArena, so equal stacks are equal ids and states stay small. A step
// consumes one byte and follows every epsilon move (splits, calls, returns) to the next
// byte-consuming nodes. `complete` records that the root rule can end after the bytes so far.
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
  struct Frame {
    uint32_t return_node;  // where the caller continues once the callee ends
    uint32_t parent;
  };
  StackArena() { frames_.push_back({0, 0}); }
  uint32_t push(uint32_t return_node, uint32_t parent) {
    uint64_t key = (uint64_t{return_node} << 32) | parent;
    auto [it, inserted] = index_.try_emplace(key, static_cast<uint32_t>(frames_.size()));
    if (inserted) frames_.push_back({return_node, parent});
    return it->second;
  }
  const Frame& frame(uint32_t id) const { return frames_[id]; }
  size_t size() const { return frames_.size(); }

 private:
  std::vector<Frame> frames_;
  std::unordered_map<uint64_t, uint32_t> index_;
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

 private:
  void closure(uint32_t node, uint32_t stack, ParserState& out);

  const Grammar& g_;
  StackArena& arena_;
  VisitedSet visited_;
  std::vector<Thread> work_;
};

}  // namespace qmlx::grammar
