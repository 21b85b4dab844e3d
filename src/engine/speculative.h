// SpeculativeDecoder: MTP speculative decoding over a Session. The model's multi-token-prediction
// head drafts k tokens, the main model checks them in one forward call of k+1 generated rows,
// the drafts it agrees with are kept and the first one it does not is replaced by its own token.
// A constrained reply (engine/token_constraint.h) holds both sides to its mask: drafts are drawn
// from the head's masked distribution and checked against the main model's masked one, so the
// output is exactly constrained plain decoding's (greedy: the same tokens; sampling: the same
// distribution).
// Rejected tokens leave no trace: the Session keeps the recurrent states of every verified row and
// returns to the one after the last accepted token (Session::keep_verified), and the head's own
// K/V rows only ever pair a verified hidden state with an accepted token.
//
// Exactness. Greedy: a draft is accepted when it is the main model's argmax (after penalties), so
// the tokens are those of plain decoding, and since a generated row computes the same bits alone
// or among k+1 rows, so are the logits. Sampling: the standard rule (Leviathan et al., Chen et
// al.): draft d drawn from the head's distribution q is accepted with probability
// min(1, p(d) / q(d)), else the token is drawn from norm(max(0, p - q)); when all k are accepted a
// k+1-th token is drawn from p. p and q are the Sampler's own distributions (penalties over the
// history including the drafts before, temperature, top-k, top-p, min-p), so every setting is
// honoured and the output distribution is exactly plain sampling's (not its random stream: a
// seed reproduces a speculative run, not a plain one).
//
// The head's rows. Head row p pairs the main model's final hidden state at position p with token
// p + 1; it is fed for the prompt as the prefill goes (prefill()), and after each step for the
// accepted tokens. A state the Session got another way (a cache restore: checkpoints hold no
// hidden states; any reset) starts the head afresh at that position: its rows then begin there
// (its positions count from there, which RoPE, being relative, does not notice), so acceptance is
// lower for a while, never the output. The first step after such a start has no hidden state for
// the last position and drafts nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "engine/sampler.h"
#include "engine/session.h"
#include "engine/speculative_step.h"
#include "engine/token_constraint.h"

namespace qmlx {

struct SpeculativeOptions {
  int draft_tokens = 1;  // k, 1..kMaxDraftTokens
  RollbackMethod rollback = RollbackMethod::kKeepStates;
  // Test hook (measurement): each draft the rule would accept is rejected with this probability,
  // its token then drawn from the main model's distribution alone (so the output stays exact).
  double reject_probability = 0;
  uint64_t reject_seed = 0;
  // Test hook: replaces the head's greedy draft for main position `position` (a random model's
  // head agrees with nothing; tests drive acceptance with this). Ignored when sampling, whose
  // rule needs drafts drawn from the head's own distribution.
  std::function<int32_t(int64_t position, int32_t drafted)> draft_override;
};

// Why speculative decoding cannot run on `model`, or "" when it can: it has no MTP head, or its
// head was dropped or does not run on its device. On a device the verify call keeps the
// recurrent states after each row in device memory (Model::restore_recurrent_row).
std::string speculation_unavailable(const Model& model);

class SpeculativeDecoder {
 public:
  ~SpeculativeDecoder();
  // Throws qmlx::Error when the session's model has no MTP head or k is out of range.
  SpeculativeDecoder(Session& session, SpeculativeOptions options);

  // Session::prefill that also feeds the head the prompt's rows.
  bool prefill(std::span<const int32_t> tokens, const PrefillProgress& progress = {},
               const std::atomic<bool>* cancel = nullptr);

  // `token` was chosen from session.logits() and is not fed yet; `history` is what the sampler's
  // penalties see for the token after it (the caller's choice, as for Sampler::sample). Feeds
  // `token` and up to min(k, max_drafts) drafts and returns the accepted drafts followed by the
  // main model's own next token (1 to k+1 tokens). Afterwards the session holds `token` and the
  // accepted drafts; the last returned token is not fed, like a sampled one.
  // `constraint` (may be null): the state after `token`, which the step leaves as it found it.
  // Drafting stops where it is not free; where it is not free right after `token` the step
  // returns no token at all (the caller forces one) and session.logits() is the row to force it
  // from.
  const SpeculativeStep& step(int32_t token, Sampler& sampler, std::span<const int32_t> history,
                              int max_drafts = kMaxDraftTokens,
                              TokenConstraint* constraint = nullptr);
  // The caller used only the first `used` (>= 1) tokens of the last step (it stopped): the
  // session goes back to holding `token` and the first used - 1 of them, as plain decoding would.
  void keep(int used);
  // The session as it was after the step's input token and the first `fed` - 1 returned tokens
  // (fed = 1..tokens.size()), read without copying: a cache checkpoint at each position.
  const StateSource& state_after(int fed);

  const SpeculativeCounts& counts() const { return counts_; }
  Session& session() { return session_; }

 private:
  class RowView;
  void start_head_if_replaced();
  void add_pending(std::span<const int32_t> tokens, std::span<const float> hidden);
  // Drafts up to k tokens (fewer where the constraint stops being free); leaves the constraint
  // after the drafts.
  void draft(int32_t token, Sampler& sampler, std::span<const int32_t> history, int k,
             TokenConstraint* constraint);
  bool rejected_by_hook();
  std::vector<SequenceImage> head_images() const;

  Session& session_;
  const Model& model_;
  SpeculativeOptions options_;
  int H_, V_;
  ModelState head_;
  // The main position where the head's rows begin (its position 0), and where the session was
  // when the decoder last saw it (with its reset count): a difference means the state was
  // replaced.
  int64_t head_base_ = 0, expected_position_ = 0;
  uint64_t expected_resets_ = 0;
  // Hidden rows of positions the head has not been fed yet (the last one's next token is not
  // known until it is chosen) and the tokens after each but the last.
  std::vector<float> pending_hidden_;
  std::vector<int32_t> pending_tokens_;
  // The step being decided: drafts, their q distributions, the verify rows.
  std::vector<int32_t> drafts_;
  std::vector<Candidates> draft_candidates_;
  std::vector<float> verify_logits_, verify_hidden_, head_logits_, head_hidden_;
  std::vector<int32_t> verify_tokens_;
  SpeculativeStep step_;
  int step_rows_ = 0;  // rows of the verify call the session still holds
  SpeculativeCounts counts_;
  std::mt19937_64 reject_rng_;
  std::unique_ptr<RowView> view_;  // state_after's answer
};

}  // namespace qmlx
