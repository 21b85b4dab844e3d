// The decoder stack shared by every architecture (model-spec §3.2):
//   h = embed(tokens)
//   for each layer: h += Mixer(RMSNorm_in(h));  h += FFN(RMSNorm_post(h))
//   logits = head(RMSNorm_final(h_last))
// Mixer is gated full attention or Gated DeltaNet per layer_types; FFN is MoE or SwiGLU.
#include "model/model.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "base/human_bytes.h"
#include "base/process.h"
#include "kernels/affine_tiles.h"
#include "kernels/matmul.h"
#include "kernels/norms.h"
#include "model/architectures.h"
#include "model/gguf_file.h"
#include "model/gguf_weights.h"
#include "model/image_rows.h"
#include "model/weight_tiling.h"

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

// Reads every tensor in, in the order given (file order: sequential reads), reporting bytes:
// `done` of `total` were read before (by the tiling of kernels/affine_tiles.h).
void page_in_tensors(const std::vector<MappedBytes>& tensors, const LoadProgress& progress,
                     uint64_t done = 0, uint64_t total = 0) {
  for (const MappedBytes& t : tensors) total += t.bytes;
  if (progress) progress(done, total);
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

// Copies the decode matrices into tiles (model/weight_tiling.h), reading them from the file,
// then reads the rest in.
void tile_and_page_in(ModelWeights& weights, const std::vector<MappedBytes>& tensors,
                      const LoadProgress& progress) {
  if (!affine_tiles_enabled()) return page_in_tensors(tensors, progress);
  std::vector<ByteRange> mapped;
  uint64_t total = 0;
  for (const MappedBytes& t : tensors) {
    mapped.push_back({t.data, t.bytes});
    total += t.bytes;
  }
  if (progress) progress(0, total);
  const std::vector<ByteRange> copied = tile_affine_weights(weights, mapped, [&](uint64_t done) {
    if (progress) progress(done, total);
  });
  std::vector<MappedBytes> rest;
  uint64_t done = 0;
  for (const MappedBytes& t : tensors) {
    if (covered_by({t.data, t.bytes}, copied))
      done += t.bytes;
    else
      rest.push_back(t);
  }
  page_in_tensors(rest, progress, done, done);
}

// The routed experts of layers [0, cpu_moe_layers), which a device leaves in host memory for
// the CPU to run (--cpu-moe): their bytes in the mapping, data, scales and biases.
std::vector<MappedBytes> host_expert_tensors(const ModelWeights& weights, int cpu_moe_layers) {
  std::vector<MappedBytes> out;
  auto add = [&out](const WeightMatrix& w) {
    out.push_back({w.data, size_t(w.rows) * w.row_bytes()});
    if (!w.quantized()) return;
    const size_t params = size_t(w.rows) * w.groups_per_row() * scalar_size(w.scale_type);
    out.push_back({w.scales, params});
    out.push_back({w.biases, params});
  };
  for (size_t l = 0; l < weights.layers.size(); ++l) {
    if (!weights.layers[l].moe || !routed_experts_on_host(l, cpu_moe_layers)) continue;
    for (const MlpWeights& e : weights.layers[l].moe_ffn.experts)
      for (const WeightMatrix* w : {&e.gate, &e.up, &e.down}) add(*w);
  }
  std::sort(out.begin(), out.end(),
            [](const MappedBytes& a, const MappedBytes& b) { return a.data < b.data; });
  return out;
}

}  // namespace

std::string describe_host_experts(const HostExperts& experts) {
  if (experts.layers == 0) return "";
  return "the routed experts of " + std::to_string(experts.layers) + " of " +
         std::to_string(experts.moe_layers) +
         " MoE layers stay in host memory and run on the CPU, keeping " +
         human_bytes(experts.bytes) + " off the device";
}

std::shared_ptr<const Model> Model::load(const std::string& dir, const LoadProgress& progress,
                                         const ModelLoadOptions& options) {
  keep_large_buffers_for_reuse();
  auto model = std::shared_ptr<Model>(new Model());
  model->directory_ = dir;
  const bool on_cpu = options.device.empty() || options.device == "cpu";
  // On a device the upload reads every tensor it takes once, and the CPU's decode tiles are
  // not needed; the experts it leaves to the CPU are read in after it, so the first request
  // does not wait on the disk for them (one progress count for both).
  auto read_in = [&](const std::vector<MappedBytes>& tensors) {
    if (on_cpu) return tile_and_page_in(model->weights_, tensors, progress);
    const std::vector<MappedBytes> host_experts =
        host_expert_tensors(model->weights_, options.cpu_moe_layers);
    uint64_t host_bytes = 0, uploaded = 0;
    for (const MappedBytes& t : host_experts) host_bytes += t.bytes;
    model->device_ =
        make_device_forward(options.device, model->config_, model->weights_, options.cpu_moe_layers,
                            [&](uint64_t done, uint64_t total) {
                              uploaded = total;
                              if (progress) progress(done, total + host_bytes);
                            });
    if (host_bytes > 0) page_in_tensors(host_experts, progress, uploaded, uploaded);
  };
  if (is_gguf_path(dir)) {
    auto file = std::make_shared<GgufFile>(dir);
    model->config_ = gguf_model_config(*file);
    model->weights_ = load_gguf_weights(*file, model->config_);
    file->release_metadata();
    read_in(tensors_in_file_order(*file));
    model->gguf_ = std::move(file);
    if (!options.mmproj.empty()) model->attach_mmproj(options.mmproj);
    model->upload_vision_tower(options.vision_offload);
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
  read_in(tensors_in_file_order(*model->store_));
  if (!options.mmproj.empty()) model->attach_mmproj(options.mmproj);
  model->upload_vision_tower(options.vision_offload);
  return model;
}

ModelState Model::clone_state(const ModelState& state) const {
  ModelState copy = state;
  if (state.device) copy.device = device_->clone_sequence(*state.device, state.position);
  return copy;
}

std::string Model::backend_description() const { return device_ ? device_->description() : "cpu"; }

ModelState Model::state_without_layers(KvType kv_type) const {
  ModelState s;
  s.kv_type = kv_type;
  s.kv_row_bytes = size_t(config_.num_kv_heads) * kv_head_bytes(kv_type, config_.head_dim);
  return s;
}

ModelState Model::new_state(KvType kv_type) const {
  const auto& c = config_;
  ModelState s = state_without_layers(kv_type);
  if (device_) s.device = device_->new_sequence(kv_type);
  for (int l = 0; l < c.num_layers; ++l) {
    if (c.is_full_attention(l)) {
      s.kv.emplace_back();
    } else if (device_) {
      s.recurrent.emplace_back();
    } else {
      RecurrentState r;
      r.conv.assign(size_t(c.conv_kernel - 1) * c.conv_channels(), 0.f);
      r.ssm.assign(size_t(c.linear_value_heads) * c.linear_value_dim * c.linear_key_dim, 0.f);
      s.recurrent.push_back(std::move(r));
    }
  }
  return s;
}

void Model::check_token(int32_t id) const {
  if (id < 0 || id >= config_.vocab_size)
    throw Error("token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                std::to_string(config_.vocab_size) + ")");
}

void Model::embed(std::span<const int32_t> tokens, float* out) const {
  const int H = config_.hidden_size;
  for (size_t t = 0; t < tokens.size(); ++t) {
    check_token(tokens[t]);
    dequantize_rows(weights_.embed, tokens[t], tokens[t] + 1, out + t * H);
  }
}

void Model::embed_rows(std::span<const int32_t> tokens, int64_t first_row,
                       std::span<const SequenceImage> images, float* out) const {
  const int64_t count = int64_t(tokens.size());
  check_image_embeddings(images, first_row, count, config_.hidden_size);
  embed(tokens, out);
  place_image_rows(images, first_row, count, config_.hidden_size, out);
}

void Model::read_kv_rows(const ModelState& state, int a, int64_t begin, int64_t end, uint8_t* k,
                         uint8_t* v) const {
  if (state.device) return device_->read_kv_rows(state, a, begin, end, k, v);
  const size_t row = state.kv_row_bytes, bytes = size_t(end - begin) * row;
  std::memcpy(k, state.kv[a].k.data() + size_t(begin) * row, bytes);
  std::memcpy(v, state.kv[a].v.data() + size_t(begin) * row, bytes);
}

void Model::write_kv_rows(ModelState& state, int a, int64_t begin, int64_t end, const uint8_t* k,
                          const uint8_t* v) const {
  if (state.device) return device_->write_kv_rows(state, a, begin, end, k, v);
  const size_t row = state.kv_row_bytes, bytes = size_t(end - begin) * row;
  state.kv[a].ensure_rows(end, row);
  std::memcpy(state.kv[a].k.data() + size_t(begin) * row, k, bytes);
  std::memcpy(state.kv[a].v.data() + size_t(begin) * row, v, bytes);
}

void Model::read_recurrent(const ModelState& state, int r, float* conv, float* ssm) const {
  if (state.device) return device_->read_recurrent(state, r, conv, ssm);
  const RecurrentState& s = state.recurrent.at(size_t(r));
  std::copy(s.conv.begin(), s.conv.end(), conv);
  std::copy(s.ssm.begin(), s.ssm.end(), ssm);
}

void Model::write_recurrent(ModelState& state, int r, const float* conv, const float* ssm) const {
  if (state.device) return device_->write_recurrent(state, r, conv, ssm);
  RecurrentState& s = state.recurrent.at(size_t(r));
  std::copy(conv, conv + s.conv.size(), s.conv.begin());
  std::copy(ssm, ssm + s.ssm.size(), s.ssm.begin());
}

void Model::restore_recurrent_row(ModelState& state, int row) const {
  if (!state.device) throw Error("internal: restore_recurrent_row on a host state");
  device_->restore_recurrent_row(state, row);
}

void Model::read_recurrent_row(const ModelState& state, int r, int row, float* conv,
                               float* ssm) const {
  if (!state.device) throw Error("internal: read_recurrent_row on a host state");
  device_->read_recurrent_row(state, r, row, conv, ssm);
}

void Model::forward(std::span<const int32_t> tokens, ModelState& state, float* last_logits,
                    const ForwardOptions& options) const {
  BatchSegment segment;
  segment.tokens = tokens;
  segment.state = &state;
  segment.kind = options.rows;
  segment.logits = last_logits;
  segment.final_hidden = options.final_hidden;
  segment.images = options.images;
  forward_batch(std::span(&segment, 1), options);
}

void Model::check_batch(std::span<const BatchSegment> segments) const {
  size_t attention_layers = 0;
  for (const LayerWeights& layer : weights_.layers) attention_layers += layer.full_attention;
  const size_t recurrent_layers = weights_.layers.size() - attention_layers;
  for (size_t i = 0; i < segments.size(); ++i) {
    const ModelState* state = segments[i].state;
    const std::string which = "forward_batch: segment " + std::to_string(i);
    if (!state) throw Error(which + " has no state");
    if (state->kv.size() != attention_layers || state->recurrent.size() != recurrent_layers)
      throw Error(which + "'s state is not one of this model's states (Model::new_state)");
    if (bool(state->device) != bool(device_))
      throw Error(which + "'s state lives on " + (state->device ? "a device" : "the host") +
                  ", the model on " + backend_description());
    for (size_t j = 0; j < i; ++j)
      if (segments[j].state == state)
        throw Error(which + " shares its state with segment " + std::to_string(j));
  }
}

void Model::forward_batch(std::span<const BatchSegment> segments,
                          const ForwardOptions& options) const {
  const auto& c = config_;
  const int H = c.hidden_size, V = c.vocab_size;
  check_batch(segments);
  // The batch's sequences in row order: prompt rows first, then generated rows.
  std::vector<const BatchSegment*> order;
  for (RowKind kind : {RowKind::kPrompt, RowKind::kGenerated})
    for (const BatchSegment& s : segments)
      if (s.kind == kind && !s.tokens.empty()) order.push_back(&s);
  if (order.empty()) return;
  if (device_) {
    for (const BatchSegment* s : order)
      for (int32_t id : s->tokens) check_token(id);
    device_->forward(order);
    for (const BatchSegment* s : order) s->state->position += int64_t(s->tokens.size());
    return;
  }
  std::vector<SequenceRows> sequences;
  for (const BatchSegment* s : order) {
    SequenceRows rows;
    rows.count = int(s->tokens.size());
    rows.kind = s->kind;
    rows.state = s->state;
    rows.images = s->images;
    sequences.push_back(rows);
  }
  const RaggedRows rows = ragged_rows(std::move(sequences), c);

  // Every token and image is checked (by embed_rows) before any state changes.
  std::vector<float> h(size_t(rows.total) * H);
  for (size_t i = 0; i < order.size(); ++i) {
    const SequenceRows& s = rows.sequences[i];
    embed_rows(order[i]->tokens, s.position, s.images, h.data() + size_t(s.first) * H);
  }

  LayerScratch scratch;
  size_t attention_index = 0, recurrent_index = 0;
  for (const LayerWeights& layer : weights_.layers) {
    const size_t slot = layer.full_attention ? attention_index++ : recurrent_index++;
    decoder_layer(layer, c, h.data(), rows, slot, options.delta_rule, scratch);
  }
  for (const SequenceRows& s : rows.sequences) {
    s.state->position += s.count;
    s.state->rope_delta = s.rope_delta_after;
  }

  // The final norm of the rows someone reads, and one LM-head matmul over the logits rows, all
  // with the generated arithmetic.
  std::vector<float> head_in, normed(H);
  std::vector<float*> head_out;
  for (size_t i = 0; i < order.size(); ++i) {
    const BatchSegment& seg = *order[i];
    const SequenceRows& s = rows.sequences[i];
    for (int t = 0; t < s.count; ++t) {
      const bool to_head = seg.all_logits || (seg.logits && t == s.count - 1);
      if (!seg.final_hidden && !to_head) continue;
      float* row = seg.final_hidden ? seg.final_hidden + size_t(t) * H : normed.data();
      rms_norm(h.data() + size_t(s.first + t) * H, weights_.final_norm.data(), H, c.rms_norm_eps,
               row);
      if (!to_head) continue;
      head_in.insert(head_in.end(), row, row + H);
      head_out.push_back(seg.all_logits ? seg.all_logits + size_t(t) * V : seg.logits);
    }
  }
  const int head_rows = int(head_out.size());
  if (head_rows == 0) return;
  std::vector<float> logits(size_t(head_rows) * V);
  matmul(head_in.data(), head_rows, weights_.head, logits.data(), head_rows);
  for (int r = 0; r < head_rows; ++r) std::copy_n(logits.data() + size_t(r) * V, V, head_out[r]);
  for (const BatchSegment* seg : order)
    if (seg->all_logits && seg->logits)
      std::copy_n(seg->all_logits + (seg->tokens.size() - 1) * V, V, seg->logits);
}

}  // namespace qmlx
