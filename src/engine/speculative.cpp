#include "engine/speculative.h"

#include <algorithm>

#include "base/error.h"

namespace qmlx {

std::string speculation_unavailable(const Model& model) {
  if (!model.has_mtp()) return model.mtp_unavailable_reason();
  return "";
}

// The session as it was after the first `fed` rows of the last verify call, read in place: the
// K/V rows below that position are the session's own, the recurrent states those the verify call
// kept, the logits its row fed - 1.
class SpeculativeDecoder::RowView : public StateSource {
 public:
  RowView(const Session& session, int64_t position, int fed, std::span<const float> logits)
      : session_(session), position_(position), fed_(fed), logits_(logits) {}
  const StateLayout& layout() const override { return session_.layout(); }
  int64_t position() const override { return position_; }
  void read_kv_rows(int a, int64_t begin, int64_t end, uint8_t* k_out,
                    uint8_t* v_out) const override {
    if (end > position_)
      throw Error("K/V rows up to " + std::to_string(end) + " read at position " +
                  std::to_string(position_));
    session_.read_kv_rows(a, begin, end, k_out, v_out);
  }
  void read_recurrent(int r, float* conv_out, float* ssm_out) const override {
    session_.read_verified_recurrent(r, fed_ - 1, conv_out, ssm_out);
  }
  std::span<const float> logits() const override { return logits_; }

 private:
  const Session& session_;
  int64_t position_;
  int fed_;
  std::span<const float> logits_;
};

SpeculativeDecoder::SpeculativeDecoder(Session& session, SpeculativeOptions options)
    : session_(session),
      model_(session.model()),
      options_(options),
      H_(model_.config().hidden_size),
      V_(model_.config().vocab_size),
      head_(model_.new_mtp_state(kv_type_of(session.layout().kv_dtype))),
      reject_rng_(options.reject_seed) {
  if (options.draft_tokens < 1 || options.draft_tokens > kMaxDraftTokens)
    throw Error("speculative decoding: " + std::to_string(options.draft_tokens) +
                " draft tokens (give 1 to " + std::to_string(kMaxDraftTokens) + ")");
  if (options.reject_probability < 0 || options.reject_probability > 1)
    throw Error("speculative decoding: reject probability outside [0, 1]");
  head_base_ = expected_position_ = session.position();
  expected_resets_ = session.resets();
}

SpeculativeDecoder::~SpeculativeDecoder() = default;

void SpeculativeDecoder::start_head_if_replaced() {
  if (session_.resets() == expected_resets_ && session_.position() == expected_position_) return;
  head_ = model_.new_mtp_state(head_.kv_type);
  head_base_ = expected_position_ = session_.position();
  expected_resets_ = session_.resets();
  head_.rope_delta = rope_delta_at(session_.images(), head_base_);
  pending_hidden_.clear();
  pending_tokens_.clear();
  step_rows_ = 0;
}

// The head's rows count from head_base_, where it started, so it sees the session's images
// shifted by that much; shifting all three M-RoPE positions alike changes no attention score
// (RoPE scores depend on position differences), as for text.
std::vector<SequenceImage> SpeculativeDecoder::head_images() const {
  std::vector<SequenceImage> images;
  for (const SequenceImage& image : session_.images()) {
    if (image.end_row() <= head_base_) continue;
    SequenceImage shifted = image;
    shifted.first_row -= head_base_;
    shifted.first_position -= head_base_;
    images.push_back(std::move(shifted));
  }
  return images;
}

void SpeculativeDecoder::add_pending(std::span<const int32_t> tokens,
                                     std::span<const float> hidden) {
  // tokens[i] is the token at hidden row i's position, the next token of the row before it; the
  // first has no row before it when nothing is pending (the head starts here).
  pending_tokens_.insert(pending_tokens_.end(), tokens.begin() + (pending_hidden_.empty() ? 1 : 0),
                         tokens.end());
  pending_hidden_.insert(pending_hidden_.end(), hidden.begin(), hidden.end());
}

bool SpeculativeDecoder::prefill(std::span<const int32_t> tokens, const PrefillProgress& progress,
                                 const std::atomic<bool>* cancel) {
  start_head_if_replaced();
  head_logits_.resize(V_);
  bool done = session_.prefill(
      tokens, progress, cancel, [&](std::span<const int32_t> chunk, std::span<const float> hidden) {
        add_pending(chunk, hidden);
        // Every pending row but the last has its next token: feed those to the head.
        const size_t rows = pending_tokens_.size();
        if (rows > 0) {
          model_.mtp_forward(std::span<const float>(pending_hidden_).first(rows * H_),
                             pending_tokens_, head_, head_logits_.data(), RowKind::kPrompt, nullptr,
                             head_images());
          pending_hidden_.erase(pending_hidden_.begin(),
                                pending_hidden_.begin() + ptrdiff_t(rows * H_));
          pending_tokens_.clear();
        }
        expected_position_ = session_.position();
      });
  expected_position_ = session_.position();
  step_rows_ = 0;
  return done;
}

void SpeculativeDecoder::draft(int32_t token, Sampler& sampler, std::span<const int32_t> history,
                               int k, TokenConstraint* constraint) {
  // The pending rows and `token` (the next token of the last one) complete the head's exact rows;
  // the drafts after the first are rows of the head's own output, rolled back afterwards.
  pending_tokens_.push_back(token);
  head_logits_.resize(V_);
  head_hidden_.resize(H_);
  model_.mtp_forward(pending_hidden_, pending_tokens_, head_, head_logits_.data(),
                     RowKind::kGenerated, head_hidden_.data(), head_images());
  pending_hidden_.clear();
  pending_tokens_.clear();
  const int64_t exact_rows = head_.position;
  std::vector<int32_t> seen(history.begin(), history.end());
  std::vector<float> input(H_);
  for (int i = 0; i < k; ++i) {
    if (constraint && !constraint->free()) break;
    draft_candidates_.push_back(sampler.candidates(
        constraint ? constraint->allowed(head_logits_) : std::span<const float>(head_logits_),
        seen));
    int32_t d = sampler.draw(draft_candidates_.back());
    if (options_.draft_override && sampler.greedy()) {
      d = options_.draft_override(session_.position() + 1 + i, d);
      draft_candidates_.back() = Candidates{{d}, {1.0}, 1.0};
    }
    drafts_.push_back(d);
    seen.push_back(d);
    if (constraint) constraint->push(d);
    if (i + 1 == k) break;
    input = head_hidden_;
    model_.mtp_forward(input, std::span<const int32_t>(&d, 1), head_, head_logits_.data(),
                       RowKind::kGenerated, head_hidden_.data());
  }
  head_.position = exact_rows;
  // The main model's token after the last draft is chosen freely too (a step returns it), so a
  // draft after which the caller would force a token is dropped.
  while (constraint && !drafts_.empty() && !constraint->free()) {
    constraint->pop(1);
    drafts_.pop_back();
    draft_candidates_.pop_back();
  }
}

bool SpeculativeDecoder::rejected_by_hook() {
  return options_.reject_probability > 0 && std::uniform_real_distribution<double>(0.0, 1.0)(
                                                reject_rng_) < options_.reject_probability;
}

namespace {

// A draw from norm(max(0, p - q)): the token after a draft the rule rejected.
int32_t draw_residual(const Candidates& p, const Candidates& q, Sampler& sampler) {
  // q by id in a dense array: with temperature alone both hold the whole vocabulary.
  int32_t ids = 0;
  for (int32_t id : p.ids) ids = std::max(ids, id + 1);
  for (int32_t id : q.ids) ids = std::max(ids, id + 1);
  std::vector<double> q_of(size_t(ids), 0.0);
  for (size_t i = 0; i < q.ids.size(); ++i) q_of[size_t(q.ids[i])] = q.weights[i] / q.mass;
  std::vector<double> residual(p.ids.size());
  double total = 0;
  for (size_t i = 0; i < p.ids.size(); ++i)
    total += residual[i] = std::max(0.0, p.weights[i] / p.mass - q_of[size_t(p.ids[i])]);
  // p <= q everywhere happens only through rounding when p == q: then p itself.
  if (!(total > 0)) return sampler.draw(p);
  double u = sampler.uniform() * total;
  for (size_t i = 0; i < p.ids.size(); ++i)
    if ((u -= residual[i]) < 0 && residual[i] > 0) return p.ids[i];
  for (size_t i = p.ids.size(); i-- > 0;)
    if (residual[i] > 0) return p.ids[i];
  return p.ids.back();
}

}  // namespace

const SpeculativeStep& SpeculativeDecoder::step(int32_t token, Sampler& sampler,
                                                std::span<const int32_t> history, int max_drafts,
                                                TokenConstraint* constraint) {
  start_head_if_replaced();
  drafts_.clear();
  draft_candidates_.clear();
  step_ = {};
  // The caller forces the token after `token`: feed `token` alone and choose nothing.
  const bool choose = !constraint || constraint->free();
  // With no hidden row for the last position (the head just started), nothing can be drafted.
  const int max_k =
      pending_hidden_.empty() || !choose ? 0 : std::clamp(max_drafts, 0, options_.draft_tokens);
  if (max_k > 0) draft(token, sampler, history, max_k, constraint);
  const int k = int(drafts_.size());
  if (constraint) constraint->pop(k);  // back to the state after `token`
  // The row a token is chosen from: the main model's, masked to what the constraint allows.
  auto choice_row = [&](std::span<const float> logits) {
    return constraint ? constraint->allowed(logits) : logits;
  };

  verify_tokens_.assign(1, token);
  verify_tokens_.insert(verify_tokens_.end(), drafts_.begin(), drafts_.end());
  const int T = int(verify_tokens_.size());
  verify_logits_.resize(size_t(T) * V_);
  verify_hidden_.resize(size_t(T) * H_);
  session_.verify(verify_tokens_, verify_logits_.data(), verify_hidden_.data(), options_.rollback);
  auto row = [&](int i) {
    return std::span<const float>(verify_logits_).subspan(size_t(i) * V_, V_);
  };

  std::vector<int32_t> seen(history.begin(), history.end());
  int accepted = 0;
  for (; accepted < k; ++accepted) {
    const int32_t d = drafts_[accepted];
    const Candidates p = sampler.candidates(choice_row(row(accepted)), seen);
    const Candidates& q = draft_candidates_[accepted];
    bool keep = sampler.greedy()
                    ? p.ids[0] == d
                    : sampler.uniform() * q.probability(d) < p.probability(d);  // min(1, p/q)
    const bool forced = keep && rejected_by_hook();
    if (keep && !forced) {
      step_.tokens.push_back(d);
      step_.logits.push_back(row(accepted));
      seen.push_back(d);
      if (constraint) constraint->push(d);
      continue;
    }
    const int32_t replacement = sampler.greedy() ? p.ids[0]
                                : forced         ? sampler.draw(p)
                                                 : draw_residual(p, q, sampler);
    step_.tokens.push_back(replacement);
    step_.logits.push_back(row(accepted));
    break;
  }
  if (accepted == k && choose) {
    step_.tokens.push_back(sampler.sample(choice_row(row(k)), seen));
    step_.logits.push_back(row(k));
  }
  if (constraint) constraint->pop(accepted);  // the caller takes the tokens itself
  step_.drafted = k;
  step_.accepted = accepted;
  step_rows_ = accepted + 1;
  if (step_rows_ < T) session_.keep_verified(step_rows_, options_.rollback);
  add_pending(std::span<const int32_t>(verify_tokens_).first(size_t(step_rows_)),
              std::span<const float>(verify_hidden_).first(size_t(step_rows_) * H_));
  expected_position_ = session_.position();

  ++counts_.steps;
  counts_.drafted += k;
  counts_.accepted += accepted;
  counts_.tokens += int64_t(step_.tokens.size());
  return step_;
}

void SpeculativeDecoder::keep(int used) {
  if (used < 1 || used > int(step_.tokens.size()) || step_rows_ == 0)
    throw Error("speculative decoding: keep(" + std::to_string(used) + ") after a step of " +
                std::to_string(step_.tokens.size()) + " tokens");
  if (used >= step_rows_) return;
  session_.keep_verified(used, options_.rollback);
  const size_t dropped = size_t(step_rows_ - used);
  pending_hidden_.resize(pending_hidden_.size() - dropped * H_);
  pending_tokens_.resize(pending_tokens_.size() - dropped);
  step_rows_ = used;
  expected_position_ = session_.position();
}

const StateSource& SpeculativeDecoder::state_after(int fed) {
  if (fed < 1 || fed > step_rows_)
    throw Error("speculative decoding: no state after " + std::to_string(fed) + " of " +
                std::to_string(step_rows_) + " rows");
  if (fed == step_rows_) return session_;
  if (options_.rollback != RollbackMethod::kKeepStates)
    throw Error("speculative decoding: earlier rows are kept only with kKeepStates");
  view_ = std::make_unique<RowView>(session_, session_.position() - (step_rows_ - fed), fed,
                                    step_.logits[fed - 1]);
  return *view_;
}

}  // namespace qmlx
