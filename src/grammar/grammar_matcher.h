// GrammarMatcher: one sequence's progress through a grammar. Per step the caller asks for the
// bitmask of allowed token ids, samples among them, and accepts the token; rollback() undoes
// accepted tokens (rejected speculative drafts). Stop tokens (the vocabulary's end-of-turn ids)
// are allowed exactly when the grammar's root can end; special tokens never are. Not
// thread-safe: one matcher per sequence; the TokenMaskTables it reads are shared.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "grammar/pushdown_stepper.h"
#include "grammar/token_mask_tables.h"

namespace qmlx::grammar {

class GrammarMatcher {
 public:
  // max_rollback: how many accepted tokens rollback() can undo (older states are dropped).
  explicit GrammarMatcher(std::shared_ptr<const TokenMaskTables> tables, size_t max_rollback = 64);

  // Sets bit id of `mask` (mask_words() words, bit id%64 of word id/64) for every allowed token
  // and clears the others; nothing is allowed once terminated. The mask may be longer than the
  // vocabulary (a model's padded embedding rows); shorter throws std::invalid_argument.
  void fill_next_token_bitmask(std::span<uint64_t> mask);
  size_t mask_words() const { return tables_->vocab().mask_words(); }

  // Advances on `id` and returns true, or returns false and changes nothing when `id` is not
  // allowed. A stop token accepted when complete terminates the matcher.
  bool accept_token(int32_t id);
  // Advances on raw bytes (tests, forced text); false and no change when they do not match.
  bool accept_bytes(std::string_view bytes);
  // Undoes the last `n` accepted tokens (accept_bytes counts as one); throws
  // std::out_of_range when fewer are remembered.
  void rollback(size_t n);

  // The root rule can end here (the JSON value is complete).
  bool is_complete() const { return history_.back().state.complete; }
  // A stop token was accepted.
  bool is_terminated() const { return history_.back().terminated; }

 private:
  struct Entry {
    ParserState state;
    bool terminated = false;
  };
  // The accepted tokens of a set of node tables, OR-ed together. Inside a string or at the
  // start of a value the same few nodes recur step after step, so the union is kept (the most
  // recently used few) instead of OR-ing every table's vocabulary-sized bitmask again.
  struct AcceptedUnion {
    std::vector<uint32_t> tables;  // sorted table indices
    std::vector<uint64_t> bits;
  };
  // Sets the accepted tokens of the threads' nodes in `mask` (clearing the rest).
  void set_accepted(const std::vector<Thread>& threads, std::span<uint64_t> mask);
  void add_accepted(uint32_t table_index, uint64_t* mask) const;
  // The union for union_key_, from the kept ones or made (and kept).
  const std::vector<uint64_t>& accepted_union();
  bool advance(const ParserState& from, std::string_view bytes, ParserState& out);
  void add_remainder_tokens(const TokenMaskTables::NodeTable& table, uint32_t stack,
                            std::span<uint64_t> mask, uint32_t lo, uint32_t hi);
  // A counted repetition's body node whose count is far enough from both bounds that its table
  // reads like any other's.
  bool far_from_bounds(const TokenMaskTables::NodeTable& table, uint32_t count) const;
  void add_counted(const TokenMaskTables::NodeTable& table, uint32_t count, uint32_t parent,
                   std::span<uint64_t> mask);
  bool add_counted_head(uint32_t repeat, const Thread& t, const std::vector<Thread>& threads,
                        std::span<uint64_t> mask);
  void push(Entry entry);

  std::shared_ptr<const TokenMaskTables> tables_;
  size_t max_rollback_;
  StackArena arena_;
  PushdownStepper stepper_;
  std::vector<Entry> history_;         // back() is the current state
  std::vector<AcceptedUnion> unions_;  // most recently used first
  // Scratch, kept to avoid allocation per token.
  std::vector<ParserState> walk_states_;
  ParserState scratch_a_, scratch_b_;
  std::vector<uint32_t> union_key_;  // the current threads' sorted table indices
  std::vector<Thread> heads_done_;   // (repeat, stack) whose head table this mask has added
};

}  // namespace qmlx::grammar
