// The decoder stack shared by every architecture (model-spec §3.2):
//   h = embed(tokens)
//   for each layer: h += Mixer(RMSNorm_in(h));  h += FFN(RMSNorm_post(h))
//   logits = head(RMSNorm_final(h_last))
// Mixer is gated full attention or Gated DeltaNet per layer_types; FFN is MoE or SwiGLU.
#include "model/model.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "base/error.h"
#include "base/process.h"
#include "kernels/matmul.h"
#include "kernels/norms.h"
#include "model/architectures.h"
#include "model/gguf_file.h"
#include "model/gguf_weights.h"

namespace qmlx {
namespace {

// Progress is reported at least this often, so one huge tensor (an embedding) still moves it.
constexpr size_t kPageInPiece = size_t(64) << 20;

// Reads `bytes` of a read-only mapping into memory: asks the kernel to read ahead, then touches
// one byte per page so the read has happened when this returns.
void page_in(const uint8_t* data, size_t bytes) {
  if (bytes == 0) return;
  static const size_t page = size_t(sysconf(_SC_PAGESIZE));
  uintptr_t first = reinterpret_cast<uintptr_t>(data) & ~(page - 1);
  madvise(reinterpret_cast<void*>(first), reinterpret_cast<uintptr_t>(data) + bytes - first,
          MADV_WILLNEED);
  volatile uint8_t sink = 0;
  for (size_t offset = 0; offset < bytes; offset += page) sink = sink ^ data[offset];
  sink = sink ^ data[bytes - 1];
}

// A tensor's bytes in its mapping.
struct MappedBytes {
  const uint8_t* data;
  size_t bytes;
};

// Reads every tensor in, in the order given (file order: sequential reads), reporting bytes.
void page_in_tensors(const std::vector<MappedBytes>& tensors, const LoadProgress& progress) {
  uint64_t total = 0;
  for (const MappedBytes& t : tensors) total += t.bytes;
  uint64_t done = 0;
  if (progress) progress(0, total);
  for (const MappedBytes& t : tensors) {
    for (size_t offset = 0; offset < t.bytes; offset += kPageInPiece) {
      size_t piece = std::min(kPageInPiece, t.bytes - offset);
      page_in(t.data + offset, piece);
      done += piece;
      if (progress) progress(done, total);
    }
  }
}

std::vector<MappedBytes> tensors_in_file_order(const TensorStore& store) {
  std::vector<const TensorInfo*> infos;
  for (const auto& [name, info] : store.tensors()) infos.push_back(&info);
  std::sort(infos.begin(), infos.end(), [](const TensorInfo* a, const TensorInfo* b) {
    return a->file != b->file ? a->file < b->file : a->data < b->data;
  });
  std::vector<MappedBytes> out;
  for (const TensorInfo* t : infos) out.push_back({t->data, t->nbytes});
  return out;
}

std::vector<MappedBytes> tensors_in_file_order(const GgufFile& file) {
  std::vector<MappedBytes> out;
  for (const GgufTensor& t : file.tensors()) out.push_back({t.data, t.bytes});
  std::sort(out.begin(), out.end(),
            [](const MappedBytes& a, const MappedBytes& b) { return a.data < b.data; });
  return out;
}

}  // namespace

std::shared_ptr<const Model> Model::load(const std::string& dir, const LoadProgress& progress) {
  keep_large_buffers_for_reuse();
  auto model = std::shared_ptr<Model>(new Model());
  model->directory_ = dir;
  if (is_gguf_path(dir)) {
    auto file = std::make_shared<GgufFile>(dir);
    model->config_ = gguf_model_config(*file);
    model->weights_ = load_gguf_weights(*file, model->config_);
    file->release_metadata();
    page_in_tensors(tensors_in_file_order(*file), progress);
    model->gguf_ = std::move(file);
    return model;
  }
  model->config_ = ModelConfig::load(dir);
  model->store_ = TensorStore::open_directory(dir);
  switch (model->config_.arch) {
    case Architecture::kQwen3_5:
    case Architecture::kQwen3_5Moe:
      model->weights_ = load_qwen3_5_weights(*model->store_, model->config_);
      break;
    case Architecture::kQwen3Next:
      model->weights_ = load_qwen3_next_weights(*model->store_, model->config_);
      break;
    case Architecture::kQwen3:
      model->weights_ = load_qwen3_weights(*model->store_, model->config_);
      break;
  }
  page_in_tensors(tensors_in_file_order(*model->store_), progress);
  return model;
}

ModelState Model::state_without_layers(KvType kv_type) const {
  ModelState s;
  s.kv_type = kv_type;
  s.kv_row_bytes = size_t(config_.num_kv_heads) * kv_head_bytes(kv_type, config_.head_dim);
  return s;
}

ModelState Model::new_state(KvType kv_type) const {
  const auto& c = config_;
  ModelState s = state_without_layers(kv_type);
  for (int l = 0; l < c.num_layers; ++l) {
    if (c.is_full_attention(l)) {
      s.kv.emplace_back();
    } else {
      RecurrentState r;
      r.conv.assign(size_t(c.conv_kernel - 1) * c.conv_channels(), 0.f);
      r.ssm.assign(size_t(c.linear_value_heads) * c.linear_value_dim * c.linear_key_dim, 0.f);
      s.recurrent.push_back(std::move(r));
    }
  }
  return s;
}

void Model::embed(std::span<const int32_t> tokens, float* out) const {
  const int H = config_.hidden_size;
  for (size_t t = 0; t < tokens.size(); ++t) {
    if (tokens[t] < 0 || tokens[t] >= config_.vocab_size)
      throw Error("token id " + std::to_string(tokens[t]) + " is outside the vocabulary [0, " +
                  std::to_string(config_.vocab_size) + ")");
    dequantize_rows(weights_.embed, tokens[t], tokens[t] + 1, out + t * H);
  }
}

void Model::forward(std::span<const int32_t> tokens, ModelState& state, float* last_logits,
                    const ForwardOptions& options) const {
  const auto& c = config_;
  const int T = int(tokens.size()), H = c.hidden_size;
  if (T == 0) return;
  std::vector<float> h(size_t(T) * H);
  embed(tokens, h.data());

  std::vector<RopeAngles> angles;
  for (int t = 0; t < T; ++t)
    angles.push_back(rope_angles(state.position + t, c.rotary_dim, c.rope_theta));
  AttentionContext ctx{state.position, &angles, state.kv_type, state.kv_row_bytes};

  LayerScratch scratch;
  size_t attention_index = 0, recurrent_index = 0;
  for (int l = 0; l < c.num_layers; ++l) {
    const LayerWeights& layer = weights_.layers[l];
    KvCache* kv = layer.full_attention ? &state.kv[attention_index++] : nullptr;
    RecurrentState* recurrent =
        layer.full_attention ? nullptr : &state.recurrent[recurrent_index++];
    decoder_layer(layer, c, h.data(), T, ctx, kv, recurrent, options.delta_rule, scratch);
  }
  state.position += T;

  if (options.final_hidden) {
    for (int t = 0; t < T; ++t)
      rms_norm(h.data() + size_t(t) * H, weights_.final_norm.data(), H, c.rms_norm_eps,
               options.final_hidden + size_t(t) * H);
    matmul(options.final_hidden + size_t(T - 1) * H, 1, weights_.head, last_logits);
    return;
  }
  std::vector<float> last(H);
  rms_norm(h.data() + size_t(T - 1) * H, weights_.final_norm.data(), H, c.rms_norm_eps,
           last.data());
  matmul(last.data(), 1, weights_.head, last_logits);
}

// For now one forward() per segment: the API the batch engine and speculative decoding code
// against, with each segment's results exactly those of forward() alone.
void Model::forward_batch(std::span<const BatchSegment> segments,
                          const ForwardOptions& options) const {
  const int H = config_.hidden_size, V = config_.vocab_size;
  for (const BatchSegment& s : segments) {
    const int T = int(s.tokens.size());
    if (T == 0) continue;
    std::vector<float> hidden(!s.final_hidden && s.all_logits ? size_t(T) * H : 0), last(V);
    ForwardOptions o = options;
    o.rows = s.kind;
    o.final_hidden = s.final_hidden ? s.final_hidden : (s.all_logits ? hidden.data() : nullptr);
    forward(s.tokens, *s.state, s.logits ? s.logits : last.data(), o);
    if (s.all_logits) matmul(o.final_hidden, T, weights_.head, s.all_logits);
  }
}

}  // namespace qmlx
