#include "model/weight_loader.h"

#include <cmath>
#include <cstring>

#include "base/error.h"
#include "model/axis_permutation.h"
#include "model/optional_parts.h"

namespace qmlx {
namespace {

std::string shape_string(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

std::vector<int64_t> with_lead(const std::vector<int64_t>& lead, int64_t a, int64_t b) {
  std::vector<int64_t> s = lead;
  s.push_back(a);
  s.push_back(b);
  return s;
}

bool is_float_dtype(TensorDType d) {
  return d == TensorDType::kF32 || d == TensorDType::kF16 || d == TensorDType::kBF16;
}

ScalarType scalar_of(TensorDType d) {
  return d == TensorDType::kF32 ? ScalarType::kF32
                                : (d == TensorDType::kF16 ? ScalarType::kF16 : ScalarType::kBF16);
}

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

// Tensors the unused-tensor check lets pass: the optional parts (optional_parts.h: an MTP head
// or a vision tower is read only when whole, and neither's leftovers are an error), precomputed
// rotary tables, and a tied model's copy of the head.
bool ignorable(const std::string& name, bool tied) {
  if (optional_part_of(name)) return true;
  if (name.find("rotary_emb.inv_freq") != std::string::npos) return true;
  return tied && (starts_with(name, "lm_head.") || starts_with(name, "language_model.lm_head."));
}

}  // namespace

size_t ModelWeights::matrix_bytes() const {
  size_t total = embed.bytes() + (head.data == embed.data ? 0 : head.bytes());
  auto mlp_bytes = [](const MlpWeights& m) {
    return m.gate.bytes() + m.up.bytes() + m.down.bytes();
  };
  for (const auto& l : layers) {
    const auto& a = l.attention;
    const auto& d = l.delta_net;
    total += a.q.bytes() + a.k.bytes() + a.v.bytes() + a.o.bytes();
    total += d.qkv.bytes() + d.z.bytes() + d.b.bytes() + d.a.bytes() + d.out.bytes();
    total += mlp_bytes(l.mlp) + l.moe_ffn.router.bytes() + l.moe_ffn.shared_gate.bytes();
    total += mlp_bytes(l.moe_ffn.shared);
    for (const auto& e : l.moe_ffn.experts) total += mlp_bytes(e);
  }
  return total;
}

WeightLoader::WeightLoader(const TensorStore& store, const ModelConfig& config,
                           ModelWeights& weights)
    : store_(store), config_(config), weights_(weights) {
  prefix_ = detect_prefix();
  raw_norms_ = detect_raw_norms();
}

WeightLoader WeightLoader::at_root(const std::string& root, MissingTensors* missing) const {
  WeightLoader rooted(*this);
  rooted.prefix_ = root;
  rooted.missing_ = missing;
  return rooted;
}

bool WeightLoader::has_root(const std::string& root) const {
  const auto it = store_.tensors().lower_bound(root);
  return it != store_.tensors().end() && starts_with(it->first, root);
}

const TensorInfo* WeightLoader::take(const std::string& name) const {
  if (!missing_ || store_.contains(name)) return &store_.use(name);
  missing_->add(name);
  return nullptr;
}

std::string WeightLoader::detect_prefix() const {
  for (const char* p : {"model.language_model.", "language_model.model.", "model.", ""})
    if (store_.contains(std::string(p) + "embed_tokens.weight")) return p;
  throw Error(store_.location() + ": missing tensor 'model.embed_tokens.weight' (also looked " +
              "for the model.language_model. and language_model.model. prefixes)");
}

bool WeightLoader::detect_raw_norms() const {
  if (!config_.hybrid()) return false;
  for (int l = 0; l < config_.num_layers; ++l) {
    if (config_.is_full_attention(l)) continue;
    const TensorInfo* conv =
        store_.find(prefix_ + "layers." + std::to_string(l) + ".linear_attn.conv1d.weight");
    // HF keeps PyTorch's [CD, 1, K] and raw norms; MLX stores [CD, K, 1] with +1 folded in.
    if (conv && conv->shape.size() == 3) return conv->shape[1] == 1 && conv->shape[2] != 1;
  }
  const TensorInfo* norm = store_.find(prefix_ + "layers.0.input_layernorm.weight");
  if (!norm || !is_float_dtype(norm->dtype)) return true;
  std::vector<float> v(norm->numel());
  convert_to_float(norm->data, scalar_of(norm->dtype), v.size(), v.data());
  double mean = 0;
  for (float x : v) mean += x;
  return mean / std::max<size_t>(1, v.size()) < 0.5;
}

void WeightLoader::fail(const TensorInfo& t, const std::string& what) const {
  throw Error(t.file + ": tensor '" + t.name + "': " + what);
}

WeightMatrix WeightLoader::plain(const TensorInfo& t, const std::vector<int64_t>& lead, int rows,
                                 int cols, int index) {
  return plain_shaped(t, with_lead(lead, rows, cols), rows, cols, index);
}

WeightMatrix WeightLoader::plain_shaped(const TensorInfo& t, const std::vector<int64_t>& expected,
                                        int rows, int cols, int index) {
  if (!is_float_dtype(t.dtype))
    fail(t, "unsupported dtype " + t.dtype_name + " (expected F32, F16, BF16 or MLX quantized)");
  if (t.shape != expected)
    fail(t, "wrong shape " + t.describe_shape() + ", expected " + shape_string(expected));
  WeightMatrix m;
  m.format = t.dtype == TensorDType::kF32
                 ? WeightFormat::kF32
                 : (t.dtype == TensorDType::kF16 ? WeightFormat::kF16 : WeightFormat::kBF16);
  m.rows = rows;
  m.cols = cols;
  m.data = t.data + size_t(index) * m.rows * m.row_bytes();
  return m;
}

WeightMatrix WeightLoader::quantized(const std::string& path, const std::vector<int64_t>& lead,
                                     int rows, int cols, int index) {
  // The caller found .scales; the weight and biases may still be missing.
  const TensorInfo* weight = take(path + ".weight");
  const TensorInfo& s = store_.use(path + ".scales");
  const TensorInfo* b = store_.find(path + ".biases");
  if (!b && missing_) missing_->add(path + ".biases");
  if (!weight || (!b && missing_)) return {};
  const TensorInfo& w = *weight;
  const auto& q = config_.quantization;
  std::string mode = q.mode_for(path);
  if (mode != "affine") fail(w, "unsupported quantization mode '" + mode + "'");
  if (!b) fail(w, "quantized weight has .scales but no .biases");
  store_.use(path + ".biases");
  if (w.dtype != TensorDType::kU32) fail(w, "quantized weight must be U32, found " + w.dtype_name);
  if (!is_float_dtype(s.dtype)) fail(s, "unsupported scales dtype " + s.dtype_name);
  if (b->dtype != s.dtype) fail(*b, "biases dtype differs from scales dtype");
  QuantParams p = q.params_for(path);
  if (!q.present && w.shape.size() >= 1 && s.shape.size() >= 1 && s.shape.back() > 0) {
    // No quantization block: infer from the shapes as mlx-lm's consistency check does.
    p.bits = int(32 * w.shape.back() / std::max(1, cols));
    p.group_size = int(cols / s.shape.back());
  }
  if (!affine_params_supported(p.bits, p.group_size))
    fail(w, "unsupported quantization bits=" + std::to_string(p.bits) +
                " group_size=" + std::to_string(p.group_size));
  if (cols % p.group_size != 0)
    fail(w, "input dimension " + std::to_string(cols) + " is not a multiple of group_size " +
                std::to_string(p.group_size));
  auto wshape = with_lead(lead, rows, int64_t(cols) * p.bits / 32);
  auto sshape = with_lead(lead, rows, cols / p.group_size);
  if (w.shape != wshape)
    fail(w, "wrong shape " + w.describe_shape() + ", expected " + shape_string(wshape) + " for " +
                std::to_string(p.bits) + "-bit weights of [" + std::to_string(rows) + ", " +
                std::to_string(cols) + "]");
  if (s.shape != sshape)
    fail(s, "wrong shape " + s.describe_shape() + ", expected " + shape_string(sshape));
  if (b->shape != sshape)
    fail(*b, "wrong shape " + b->describe_shape() + ", expected " + shape_string(sshape));
  WeightMatrix m;
  m.format = WeightFormat::kAffine;
  m.rows = rows;
  m.cols = cols;
  m.bits = p.bits;
  m.group_size = p.group_size;
  m.scale_type = scalar_of(s.dtype);
  size_t meta = size_t(rows) * m.groups_per_row() * scalar_size(m.scale_type);
  m.data = w.data + size_t(index) * rows * m.row_bytes();
  m.scales = s.data + size_t(index) * meta;
  m.biases = b->data + size_t(index) * meta;
  return m;
}

WeightMatrix WeightLoader::matrix(const std::string& module, int rows, int cols) {
  std::string path = prefix_ + module;
  if (store_.contains(path + ".scales")) return quantized(path, {}, rows, cols, 0);
  const TensorInfo* t = take(path + ".weight");
  return t ? plain(*t, {}, rows, cols, 0) : WeightMatrix{};
}

std::vector<WeightMatrix> WeightLoader::stacked(const std::string& tensor, bool weight_suffix,
                                                int experts, int rows, int cols) {
  std::string path = prefix_ + tensor;
  std::vector<WeightMatrix> out;
  bool quant = weight_suffix && store_.contains(path + ".scales");
  const TensorInfo* t = quant ? nullptr : take(weight_suffix ? path + ".weight" : path);
  if (!quant && !t) return std::vector<WeightMatrix>(experts);
  for (int e = 0; e < experts; ++e)
    out.push_back(quant ? quantized(path, {experts}, rows, cols, e)
                        : plain(*t, {experts}, rows, cols, e));
  return out;
}

WeightMatrix WeightLoader::reshaped(const std::string& tensor, const std::vector<int64_t>& shape,
                                    int rows, int cols) {
  const TensorInfo* t = take(prefix_ + tensor);
  return t ? plain_shaped(*t, shape, rows, cols, 0) : WeightMatrix{};
}

WeightMatrix WeightLoader::transposed(const std::string& tensor, const std::vector<int64_t>& stored,
                                      const std::vector<int>& axes, int rows, int cols) {
  const TensorInfo* t = take(prefix_ + tensor);
  if (!t) return {};
  WeightMatrix m = plain_shaped(*t, stored, rows, cols, 0);
  weights_.owned.push_back(transposed_elements(m.data, m.row_bytes() / size_t(cols), stored, axes));
  m.data = weights_.owned.back().data();
  return m;
}

std::vector<float> WeightLoader::vector(const std::string& tensor, int n) {
  const TensorInfo* found = take(prefix_ + tensor);
  if (!found) return std::vector<float>(n);
  const TensorInfo& t = *found;
  if (!is_float_dtype(t.dtype)) fail(t, "unsupported dtype " + t.dtype_name);
  if (t.shape != std::vector<int64_t>{n})
    fail(t, "wrong shape " + t.describe_shape() + ", expected [" + std::to_string(n) + "]");
  std::vector<float> v(n);
  convert_to_float(t.data, scalar_of(t.dtype), n, v.data());
  return v;
}

std::vector<float> WeightLoader::norm(const std::string& tensor, int n, bool zero_centred) {
  std::vector<float> v = vector(tensor, n);
  if (zero_centred && raw_norms_)
    for (float& x : v) x += 1.f;
  return v;
}

std::vector<float> WeightLoader::conv(const std::string& tensor, int channels, int K) {
  const TensorInfo* found = take(prefix_ + tensor);
  if (!found) return std::vector<float>(size_t(channels) * K);
  const TensorInfo& t = *found;
  if (!is_float_dtype(t.dtype)) fail(t, "unsupported dtype " + t.dtype_name);
  std::vector<int64_t> hf{channels, 1, K}, mlx{channels, K, 1};
  if (t.shape != hf && t.shape != mlx)
    fail(t, "wrong shape " + t.describe_shape() + ", expected " + shape_string(hf) + " or " +
                shape_string(mlx));
  // Both layouts are [channels][K] in memory.
  std::vector<float> by_channel(size_t(channels) * K), taps(size_t(channels) * K);
  convert_to_float(t.data, scalar_of(t.dtype), by_channel.size(), by_channel.data());
  for (int c = 0; c < channels; ++c)
    for (int k = 0; k < K; ++k) taps[size_t(k) * channels + c] = by_channel[size_t(c) * K + k];
  return taps;
}

WeightMatrix permuted_rows(const WeightMatrix& m, const std::vector<int>& order,
                           ModelWeights& owner) {
  if (!m.data) return m;  // the stand-in for a missing tensor of an optional part
  auto copy_rows = [&](const uint8_t* src, size_t row_bytes) {
    std::vector<uint8_t> buf(order.size() * row_bytes);
    for (size_t i = 0; i < order.size(); ++i)
      std::memcpy(buf.data() + i * row_bytes, src + size_t(order[i]) * row_bytes, row_bytes);
    owner.owned.push_back(std::move(buf));
    return owner.owned.back().data();
  };
  WeightMatrix out = m;
  out.rows = int(order.size());
  out.data = copy_rows(m.data, m.row_bytes());
  if (m.quantized()) {
    size_t meta_row = size_t(m.groups_per_row()) * scalar_size(m.scale_type);
    out.scales = copy_rows(m.scales, meta_row);
    out.biases = copy_rows(m.biases, meta_row);
  }
  return out;
}

WeightMatrix WeightLoader::permute_rows(const WeightMatrix& m, const std::vector<int>& order) {
  return permuted_rows(m, order, weights_);
}

void WeightLoader::load_globals(bool zero_centred_norms) {
  const auto& c = config_;
  weights_.embed = matrix("embed_tokens", c.vocab_size, c.hidden_size);
  weights_.final_norm = norm("norm.weight", c.hidden_size, zero_centred_norms);
  if (c.tie_word_embeddings) {
    weights_.head = weights_.embed;
    return;
  }
  // The head sits outside the layer stack: `lm_head` (HF, MLX Qwen3-Next) or
  // `language_model.lm_head` (MLX Qwen3.5).
  for (const char* head : {"lm_head", "language_model.lm_head"}) {
    std::string path = head;
    if (!store_.contains(path + ".weight")) continue;
    if (store_.contains(path + ".scales")) {
      weights_.head = quantized(path, {}, c.vocab_size, c.hidden_size, 0);
    } else {
      weights_.head = plain(store_.use(path + ".weight"), {}, c.vocab_size, c.hidden_size, 0);
    }
    return;
  }
  throw Error(store_.location() + ": missing tensor 'lm_head.weight' (tie_word_embeddings is " +
              "false)");
}

void WeightLoader::reject_unused() const {
  for (const auto& name : store_.unused()) {
    if (ignorable(name, config_.tie_word_embeddings)) continue;
    const TensorInfo* t = store_.find(name);
    throw Error(t->file + ": unexpected tensor '" + name + "' (not part of a " +
                architecture_name(config_.arch) + " model with this config.json)");
  }
}

AttentionWeights load_attention(WeightLoader& w, int layer, bool gated, bool zero_centred) {
  const auto& c = w.config();
  const std::string p = "layers." + std::to_string(layer) + ".self_attn.";
  const int H = c.hidden_size, D = c.head_dim;
  AttentionWeights a;
  a.q = w.matrix(p + "q_proj", c.num_heads * D * (gated ? 2 : 1), H);
  a.k = w.matrix(p + "k_proj", c.num_kv_heads * D, H);
  a.v = w.matrix(p + "v_proj", c.num_kv_heads * D, H);
  a.o = w.matrix(p + "o_proj", H, c.num_heads * D);
  a.q_norm = w.norm(p + "q_norm.weight", D, zero_centred);
  a.k_norm = w.norm(p + "k_norm.weight", D, zero_centred);
  return a;
}

MlpWeights load_mlp(WeightLoader& w, const std::string& module, int hidden, int intermediate) {
  MlpWeights m;
  m.gate = w.matrix(module + ".gate_proj", intermediate, hidden);
  m.up = w.matrix(module + ".up_proj", intermediate, hidden);
  m.down = w.matrix(module + ".down_proj", hidden, intermediate);
  return m;
}

MoeWeights load_moe(WeightLoader& w, int layer) {
  const auto& c = w.config();
  const std::string p = "layers." + std::to_string(layer) + ".mlp.";
  const int H = c.hidden_size, E = c.num_experts, I = c.moe_intermediate_size;
  MoeWeights m;
  m.router = w.matrix(p + "gate", E, H);
  m.experts.resize(E);
  if (w.has_module(p + "switch_mlp.gate_proj")) {  // MLX: stacked [E, out, in]
    auto gate = w.stacked(p + "switch_mlp.gate_proj", true, E, I, H);
    auto up = w.stacked(p + "switch_mlp.up_proj", true, E, I, H);
    auto down = w.stacked(p + "switch_mlp.down_proj", true, E, H, I);
    for (int e = 0; e < E; ++e) m.experts[e] = {gate[e], up[e], down[e]};
  } else if (w.has(p + "experts.gate_up_proj")) {  // HF Qwen3.5-MoE: fused, gate rows first
    auto gate_up = w.stacked(p + "experts.gate_up_proj", false, E, 2 * I, H);
    auto down = w.stacked(p + "experts.down_proj", false, E, H, I);
    for (int e = 0; e < E; ++e)
      m.experts[e] = {gate_up[e].row_slice(0, I), gate_up[e].row_slice(I, 2 * I), down[e]};
  } else {  // HF Qwen3-Next: one module per expert
    for (int e = 0; e < E; ++e)
      m.experts[e] = load_mlp(w, p + "experts." + std::to_string(e), H, I);
  }
  if (c.shared_expert_intermediate_size > 0) {
    m.has_shared_expert = true;
    m.shared = load_mlp(w, p + "shared_expert", H, c.shared_expert_intermediate_size);
    m.shared_gate = w.matrix(p + "shared_expert_gate", 1, H);
  }
  return m;
}

}  // namespace qmlx

namespace qmlx {

void load_delta_net_common(WeightLoader& w, int layer, DeltaNetWeights& d) {
  const auto& c = w.config();
  const std::string p = "layers." + std::to_string(layer) + ".linear_attn.";
  const int Hv = c.linear_value_heads;
  d.conv = w.conv(p + "conv1d.weight", c.conv_channels(), c.conv_kernel);
  d.dt_bias = w.vector(p + "dt_bias", Hv);
  d.A = w.vector(p + "A_log", Hv);
  for (float& a : d.A) a = -std::exp(a);
  d.norm = w.vector(p + "norm.weight", c.linear_value_dim);  // never zero-centred
  d.out = w.matrix(p + "out_proj", c.hidden_size, c.linear_value_size());
}

}  // namespace qmlx
