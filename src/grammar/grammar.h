// Grammar: a context-free grammar over bytes, compiled for matching. Each rule's body is a
// small automaton (Thompson construction) of nodes: a byte-set node consumes one byte, a rule
// node calls another rule, a split node forks, the end node returns to the caller. Alternation
// and repetition therefore stay inside a rule instead of becoming helper rules, which keeps the
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
  enum class Kind : uint8_t { kBytes, kRule, kSplit, kEnd };
  Kind kind = Kind::kEnd;
  // kBytes: index into byte_sets; kRule: the rule called; kSplit: first index into split_targets.
  uint32_t arg = 0;
  // kBytes, kRule: the node that follows; kSplit: the number of targets.
  uint32_t next = 0;
};

struct Grammar {
  std::vector<GrammarNode> nodes;  // nodes[0] is the shared end node
  std::vector<ByteSet> byte_sets;
  std::vector<uint32_t> split_targets;
  std::vector<uint32_t> rule_start;  // rule id -> its first node
  std::vector<std::string> rule_names;
  uint32_t root_rule = 0;

  static constexpr uint32_t kEndNode = 0;
  size_t memory_bytes() const {
    return nodes.size() * sizeof(GrammarNode) + byte_sets.size() * sizeof(ByteSet) +
           (split_targets.size() + rule_start.size()) * sizeof(uint32_t);
  }
};

// Throws GrammarError when a rule can call itself before consuming a byte (left recursion),
// which a top-down matcher cannot run.
void check_no_left_recursion(const Grammar& grammar);

}  // namespace qmlx::grammar
