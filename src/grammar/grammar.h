// Grammar: a context-free grammar over bytes, compiled for matching. Each rule's body is a
// small automaton (Thompson construction) of nodes: a byte-set node consumes one byte, a rule
// node calls another rule, a split node forks, the end node returns to the caller, a counted
// node repeats a body rule between min and max times (the count lives in the call stack's frame,
// so a bound of 1000 is one copy of the body, not 1000). Alternation and small repetitions
// therefore stay inside a rule instead of becoming helper rules, which keeps the
// pushdown stack shallow and lets most tokens be decided without looking at the stack
// (see token_mask_tables.h). Written by grammar_parser.h; read by pushdown_stepper.h.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"

namespace qmlx::grammar {

// Thrown for a grammar or schema the engine refuses; `limit` names the limit exceeded, if any
// (the server answers 400 either way).
class GrammarError : public Error {
 public:
  explicit GrammarError(const std::string& message, std::string limit = {})
      : Error(message), limit_(std::move(limit)) {}
  const std::string& limit() const { return limit_; }

 private:
  std::string limit_;
};

// 256 bits: which byte values a node accepts.
struct ByteSet {
  std::array<uint64_t, 4> bits{};
  bool contains(uint8_t b) const { return (bits[b >> 6] >> (b & 63)) & 1; }
  void add_range(uint8_t lo, uint8_t hi) {
    for (unsigned b = lo; b <= hi; ++b) bits[b >> 6] |= uint64_t{1} << (b & 63);
  }
  bool operator==(const ByteSet&) const = default;
};

struct GrammarNode {
  enum class Kind : uint8_t { kBytes, kRule, kSplit, kEnd, kCounted };
  Kind kind = Kind::kEnd;
  // kBytes: index into byte_sets; kRule: the rule called; kSplit: first index into split_targets;
  // kCounted: index into Grammar::repeats.
  uint32_t arg = 0;
  // kBytes, kRule, kCounted: the node that follows; kSplit: the number of targets.
  uint32_t next = 0;
};

// A counted repetition: its body rule is called between min and max times (max kUnbounded: no
// upper bound), each call's stack frame carrying how many calls completed before it. The body
// rule is called from this node only and never matches the empty string.
struct RepeatSpec {
  static constexpr uint32_t kUnbounded = 0xFFFFFFFFu;
  uint32_t body_rule = 0;
  uint32_t min = 0, max = 0;
  uint32_t node = 0;  // the kCounted node
};

struct Grammar {
  std::vector<GrammarNode> nodes;  // nodes[0] is the shared end node
  std::vector<ByteSet> byte_sets;
  std::vector<uint32_t> split_targets;
  std::vector<RepeatSpec> repeats;
  std::vector<uint32_t> rule_start;  // rule id -> its first node
  std::vector<std::string> rule_names;
  uint32_t root_rule = 0;

  static constexpr uint32_t kEndNode = 0;
  size_t memory_bytes() const {
    return nodes.size() * sizeof(GrammarNode) + byte_sets.size() * sizeof(ByteSet) +
           (split_targets.size() + rule_start.size()) * sizeof(uint32_t) +
           repeats.size() * sizeof(RepeatSpec);
  }
};

// Throws GrammarError when a rule can call itself before consuming a byte (left recursion),
// which a top-down matcher cannot run.
void check_no_left_recursion(const Grammar& grammar);

}  // namespace qmlx::grammar
