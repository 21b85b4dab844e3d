#include "engine/session.h"

#include <algorithm>

#include "base/error.h"
#include "engine/batch_engine.h"
#include "engine/image_pad_keys.h"

namespace qmlx {

StateLayout state_layout_of(const Model& model, DType kv_dtype) {
  const ModelConfig& c = model.config();
  StateLayout l;
  l.num_layers = c.num_layers;
  for (int i = 0; i < c.num_layers; ++i)
    (c.is_full_attention(i) ? l.attention_layers : l.recurrent_layers).push_back(i);
  l.kv_heads = c.num_kv_heads;
  l.head_dim = c.head_dim;
  l.kv_dtype = kv_dtype;
  if (!l.recurrent_layers.empty()) {
    l.conv_rows = c.conv_kernel - 1;
    l.conv_channels = c.conv_channels();
    l.ssm_heads = c.linear_value_heads;
    l.ssm_key_dim = c.linear_key_dim;
    l.ssm_value_dim = c.linear_value_dim;
  }
  l.vocab_size = c.vocab_size;
  return l;
}

Session::Session(std::shared_ptr<const Model> model, SessionOptions options)
    : model_(std::move(model)),
      options_(options),
      layout_(state_layout_of(*model_, options.kv_dtype)),
      state_(model_->new_state(kv_type_of(options.kv_dtype))) {}

int prefill_chunk_for(const Model& model, int requested) {
  if (requested > 0) return requested;
  return model.config().num_experts > 0 ? kMoePrefillChunk : kDensePrefillChunk;
}

void Session::set_images(std::vector<SequenceImage> images) {
  images_ = std::move(images);
  state_.rope_delta = rope_delta_at(images_, state_.position);
}

bool Session::prefill(std::span<const int32_t> tokens, const PrefillProgress& progress,
                      const std::atomic<bool>* cancel, const PrefillHidden& hidden) {
  if (tokens.empty()) return true;
  // The model sees its own pad token where the cache saw an image's keys.
  std::vector<int32_t> mapped;
  if (map_image_pad_keys(tokens, model_->image_pad_id(), &mapped)) {
    if (model_->image_pad_id() < 0) throw Error("an image in the prompt of a model without one");
    tokens = mapped;
  }
  if (options_.engine) return options_.engine->prefill(*this, tokens, progress, cancel);
  const size_t chunk = size_t(prefill_chunk_for(*model_, options_.prefill_chunk));
  ForwardOptions fo{options_.delta_rule, RowKind::kPrompt};
  fo.images = images_;
  std::vector<float> hidden_rows;
  for (size_t done = 0; done < tokens.size();) {
    if (cancel && cancel->load()) return false;
    logits_.resize(layout_.vocab_size);
    size_t n = std::min(chunk, tokens.size() - done);
    if (hidden) {
      hidden_rows.resize(n * size_t(model_->config().hidden_size));
      fo.final_hidden = hidden_rows.data();
    }
    model_->forward(tokens.subspan(done, n), state_, logits_.data(), fo);
    if (hidden) hidden(tokens.subspan(done, n), hidden_rows);
    done += n;
    if (progress) progress(int64_t(done), int64_t(tokens.size()));
  }
  return true;
}

void Session::decode(int32_t token) {
  if (options_.engine) return options_.engine->decode(*this, token);
  logits_.resize(layout_.vocab_size);
  ForwardOptions fo{options_.delta_rule, RowKind::kGenerated};
  fo.images = images_;
  model_->forward(std::span<const int32_t>(&token, 1), state_, logits_.data(), fo);
}

void Session::verify(std::span<const int32_t> tokens, float* all_logits, float* final_hidden,
                     RollbackMethod method) {
  const int T = int(tokens.size()), V = layout_.vocab_size;
  if (T == 0) throw Error("verify: no tokens");
  verified_tokens_.assign(tokens.begin(), tokens.end());
  verified_states_.resize(state_.recurrent.size());
  if (method == RollbackMethod::kKeepStates) {
    // A host state's layers write their states after each row here; a device state's keep them
    // in device memory (Model::restore_recurrent_row), these histories staying empty.
    for (size_t r = 0; r < state_.recurrent.size(); ++r)
      state_.recurrent[r].history = &verified_states_[r];
  } else {
    // Read out wherever the state lives (a device's is copied to the host).
    verify_start_.resize(state_.recurrent.size());
    for (size_t r = 0; r < state_.recurrent.size(); ++r) {
      RecurrentState& start = verify_start_[r];
      start.conv.resize(layout_.conv_state_bytes() / sizeof(float));
      start.ssm.resize(layout_.ssm_state_bytes() / sizeof(float));
      model_->read_recurrent(state_, int(r), start.conv.data(), start.ssm.data());
    }
  }
  // One pass: every row's logits through the LM head at once, as generated rows.
  BatchSegment segment;
  segment.tokens = tokens;
  segment.state = &state_;
  segment.kind = RowKind::kGenerated;
  segment.all_logits = all_logits;
  segment.final_hidden = final_hidden;
  segment.images = images_;
  logits_.resize(V);
  segment.logits = logits_.data();
  try {
    model_->forward_batch(std::span(&segment, 1), ForwardOptions{options_.delta_rule});
  } catch (...) {
    for (RecurrentState& r : state_.recurrent) r.history = nullptr;
    throw;
  }
  for (RecurrentState& r : state_.recurrent) r.history = nullptr;
  verified_logits_.assign(all_logits, all_logits + size_t(T) * V);
}

void Session::keep_verified(int rows, RollbackMethod method) {
  const int T = int(verified_tokens_.size()), V = layout_.vocab_size;
  if (rows < 1 || rows > T)
    throw Error("keep_verified: " + std::to_string(rows) + " rows of a verify call of " +
                std::to_string(T));
  if (rows == T) return;
  const int64_t start = state_.position - T;
  if (method == RollbackMethod::kKeepStates) {
    if (state_.device) {
      model_->restore_recurrent_row(state_, rows - 1);
    } else {
      for (size_t r = 0; r < state_.recurrent.size(); ++r) {
        RecurrentState& s = state_.recurrent[r];
        read_verified_recurrent(int(r), rows - 1, s.conv.data(), s.ssm.data());
      }
    }
    state_.position = start + rows;
  } else {
    for (size_t r = 0; r < state_.recurrent.size(); ++r)
      model_->write_recurrent(state_, int(r), verify_start_[r].conv.data(),
                              verify_start_[r].ssm.data());
    state_.position = start;
    std::vector<float> unused(V);
    ForwardOptions fo{options_.delta_rule, RowKind::kGenerated};
    fo.images = images_;
    model_->forward(std::span<const int32_t>(verified_tokens_).first(size_t(rows)), state_,
                    unused.data(), fo);
  }
  logits_.assign(verified_logits_.begin() + size_t(rows - 1) * V,
                 verified_logits_.begin() + size_t(rows) * V);
  verified_tokens_.resize(size_t(rows));
}

void Session::read_verified_recurrent(int r, int row, float* conv_out, float* ssm_out) const {
  if (r < 0 || size_t(r) >= state_.recurrent.size())
    throw Error("recurrent layer " + std::to_string(r) + " is out of range");
  if (state_.device) return model_->read_recurrent_row(state_, r, row, conv_out, ssm_out);
  const size_t conv = layout_.conv_state_bytes() / sizeof(float);
  const size_t ssm = layout_.ssm_state_bytes() / sizeof(float);
  const RecurrentHistory& kept = verified_states_[size_t(r)];
  if (row < 0 || (size_t(row) + 1) * ssm > kept.ssm.size())
    throw Error("the recurrent state after row " + std::to_string(row) + " was not kept");
  std::copy_n(kept.conv.data() + size_t(row) * conv, conv, conv_out);
  std::copy_n(kept.ssm.data() + size_t(row) * ssm, ssm, ssm_out);
}

void Session::truncate(int64_t m) {
  if (layout_.has_recurrent_state())
    throw Error(
        "truncate: this model has recurrent (Gated DeltaNet) layers, whose state cannot "
        "be rewound; restore a snapshot instead");
  if (m < 0 || m > state_.position)
    throw Error("truncate: position " + std::to_string(m) + " is outside [0, " +
                std::to_string(state_.position) + "]");
  if (m == state_.position) return;
  state_.position = m;
  logits_.clear();
}

void Session::check_kv_range(int a, int64_t begin, int64_t end) const {
  if (a < 0 || a >= int(state_.kv.size()) || begin < 0 || begin > end || end > state_.position)
    throw Error("K/V rows [" + std::to_string(begin) + ", " + std::to_string(end) +
                ") of attention layer " + std::to_string(a) + " are out of range");
}

void Session::read_kv_rows(int a, int64_t begin, int64_t end, uint8_t* k_out,
                           uint8_t* v_out) const {
  check_kv_range(a, begin, end);
  model_->read_kv_rows(state_, a, begin, end, k_out, v_out);
}

void Session::read_recurrent(int r, float* conv_out, float* ssm_out) const {
  if (r < 0 || size_t(r) >= state_.recurrent.size())
    throw Error("recurrent layer " + std::to_string(r) + " is out of range");
  model_->read_recurrent(state_, r, conv_out, ssm_out);
}

void Session::reset(int64_t position) {
  if (position < 0) throw Error("reset: negative position");
  ++resets_;
  verified_tokens_.clear();
  state_ = model_->new_state(state_.kv_type);
  for (KvCache& kv : state_.kv) kv.ensure_rows(position, state_.kv_row_bytes);
  state_.position = position;
  state_.rope_delta = rope_delta_at(images_, position);  // a restore continues the positions
  logits_.clear();
}

void Session::write_kv_rows(int a, int64_t begin, int64_t end, const uint8_t* k, const uint8_t* v) {
  check_kv_range(a, begin, end);
  model_->write_kv_rows(state_, a, begin, end, k, v);
}

void Session::write_recurrent(int r, const float* conv, const float* ssm) {
  if (r < 0 || size_t(r) >= state_.recurrent.size())
    throw Error("recurrent layer " + std::to_string(r) + " is out of range");
  model_->write_recurrent(state_, r, conv, ssm);
}

void Session::set_logits(std::span<const float> logits) {
  if (!logits.empty() && int(logits.size()) != layout_.vocab_size)
    throw Error("set_logits: expected " + std::to_string(layout_.vocab_size) + " values, got " +
                std::to_string(logits.size()));
  logits_.assign(logits.begin(), logits.end());
}

SessionState Session::export_state() const {
  SessionState s;
  s.position = state_.position;
  const size_t bytes = size_t(state_.position) * state_.kv_row_bytes;
  for (size_t a = 0; a < state_.kv.size(); ++a) {
    s.keys.emplace_back(bytes);
    s.values.emplace_back(bytes);
    if (bytes)
      read_kv_rows(int(a), 0, state_.position, s.keys.back().data(), s.values.back().data());
  }
  for (size_t r = 0; r < state_.recurrent.size(); ++r) {  // wherever they live (a device's too)
    s.conv_states.emplace_back(layout_.conv_state_bytes() / sizeof(float));
    s.ssm_states.emplace_back(layout_.ssm_state_bytes() / sizeof(float));
    read_recurrent(int(r), s.conv_states.back().data(), s.ssm_states.back().data());
  }
  s.logits = logits_;
  return s;
}

void Session::import_state(const SessionState& s) {
  const size_t bytes = size_t(s.position) * state_.kv_row_bytes;
  if (s.keys.size() != state_.kv.size() || s.values.size() != state_.kv.size() ||
      s.conv_states.size() != state_.recurrent.size() ||
      s.ssm_states.size() != state_.recurrent.size())
    throw Error("import_state: the state has a different number of layers than this model");
  for (size_t a = 0; a < s.keys.size(); ++a)
    if (s.keys[a].size() != bytes || s.values[a].size() != bytes)
      throw Error("import_state: K/V of attention layer " + std::to_string(a) +
                  " has the wrong size for position " + std::to_string(s.position));
  for (size_t r = 0; r < s.conv_states.size(); ++r)
    if (s.conv_states[r].size() != layout_.conv_state_bytes() / sizeof(float) ||
        s.ssm_states[r].size() != layout_.ssm_state_bytes() / sizeof(float))
      throw Error("import_state: recurrent state " + std::to_string(r) + " has the wrong size");
  reset(s.position);
  for (size_t a = 0; a < s.keys.size(); ++a)
    if (bytes) write_kv_rows(int(a), 0, s.position, s.keys[a].data(), s.values[a].data());
  for (size_t r = 0; r < s.conv_states.size(); ++r)
    write_recurrent(int(r), s.conv_states[r].data(), s.ssm_states[r].data());
  set_logits(s.logits);
}

}  // namespace qmlx
