// The multi-token-prediction head (Qwen3.5 / Qwen3-Next `mtp.*`), as vLLM's qwen3_next_mtp.py /
// qwen3_5_mtp.py and llama.cpp's qwen35 MTP graph run it. For the pair (hidden state of
// position p, token p + 1):
//   x = fc([RMSNorm_embedding(embed(token)) | RMSNorm_hidden(hidden)])
//   x = decoder_layer(x)            full attention at RoPE position p, its own K/V rows
//   logits = head(RMSNorm_final(x))  the model's own LM head
// `hidden` is the main model's final-normed hidden state (what its LM head reads).
// With images, the head sees what the main model sees: row p is at the main model's M-RoPE
// position of row p (its state's rope_delta follows the images as the main state's does), and
// where token p + 1 is an image pad its embedding is the image's embedding row p + 1, the row
// the main model was fed there in place of the pad token's embedding (vLLM's drafter is fed the
// same multimodal input embeddings, shifted by one).
#include <algorithm>
#include <vector>

#include "base/error.h"
#include "kernels/matmul.h"
#include "kernels/norms.h"
#include "model/model.h"

namespace qmlx {

std::string Model::mtp_unavailable_reason() const {
  if (has_mtp()) return "";
  if (weights_.mtp && device_)
    return "the MTP head does not run on " + device_->description() + ": " +
           device_->mtp_unavailable_reason();
  if (mtp_dropped())
    return "the model's MTP head is " + weights_.mtp_dropped + " and was not loaded";
  return "the model has no MTP head";
}

ModelState Model::new_mtp_state(KvType kv_type) const {
  if (!has_mtp()) throw Error(directory_ + ": " + mtp_unavailable_reason());
  ModelState s = state_without_layers(kv_type);
  s.kv.emplace_back();
  if (device_) s.device = device_->new_mtp_sequence(kv_type);
  return s;
}

void Model::mtp_forward(std::span<const float> hidden, std::span<const int32_t> next_tokens,
                        ModelState& state, float* last_logits, RowKind kind, float* last_hidden,
                        std::span<const SequenceImage> images) const {
  if (!has_mtp()) throw Error(directory_ + ": " + mtp_unavailable_reason());
  const auto& c = config_;
  const MtpWeights& m = *weights_.mtp;
  const int T = int(next_tokens.size()), H = c.hidden_size;
  if (T == 0) return;
  if (hidden.size() != size_t(T) * H)
    throw Error("mtp_forward: " + std::to_string(hidden.size()) + " hidden values for " +
                std::to_string(T) + " tokens of hidden size " + std::to_string(H));
  if (state.kv.size() != 1 || !state.recurrent.empty())
    throw Error("mtp_forward: the state is not an MTP state (Model::new_mtp_state)");
  if (bool(state.device) != bool(device_))
    throw Error(std::string("mtp_forward: the state lives on ") +
                (state.device ? "a device" : "the host") + ", the model on " +
                backend_description());
  if (device_) {
    for (int32_t id : next_tokens) check_token(id);
    device_->mtp_forward(hidden, next_tokens, state, last_logits, kind, last_hidden, images);
    state.position += T;
    return;
  }

  // Row t of `joined` is [normed embedding | normed hidden], fc's input order.
  std::vector<float> embedded(size_t(T) * H), joined(size_t(T) * 2 * H), h(size_t(T) * H);
  embed_rows(next_tokens, state.position + 1, images, embedded.data());
  for (int t = 0; t < T; ++t) {
    float* row = joined.data() + size_t(t) * 2 * H;
    rms_norm(embedded.data() + size_t(t) * H, m.embedding_norm.data(), H, c.rms_norm_eps, row);
    rms_norm(hidden.data() + size_t(t) * H, m.hidden_norm.data(), H, c.rms_norm_eps, row + H);
  }
  SequenceRows sequence;
  sequence.count = T;
  sequence.kind = kind;
  sequence.state = &state;
  sequence.images = images;
  const RaggedRows rows = ragged_rows({sequence}, c);
  matmul(joined.data(), T, m.fc, h.data(), rows.generated);

  LayerScratch scratch;
  decoder_layer(m.layer, c, h.data(), rows, 0, DeltaRuleForm::kAuto, scratch);
  state.position += T;
  state.rope_delta = rows.sequences[0].rope_delta_after;

  std::vector<float> last(H);
  rms_norm(h.data() + size_t(T - 1) * H, m.final_norm.data(), H, c.rms_norm_eps, last.data());
  matmul(last.data(), 1, weights_.head, last_logits, 1);
  if (last_hidden) std::copy(last.begin(), last.end(), last_hidden);
}

}  // namespace qmlx
