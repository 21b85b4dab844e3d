#include "model/gguf_weights.h"

#include <algorithm>

#include "base/error.h"
#include "model/gguf_reader.h"
#include "model/optional_parts.h"
#include "model/weight_loader.h"

namespace qmlx {
namespace {

using nlohmann::json;

struct ArchName {
  const char* gguf;
  Architecture arch;
  const char* model_type;
};
constexpr ArchName kArchitectures[] = {
    {"qwen35", Architecture::kQwen3_5, "qwen3_5"},
    {"qwen35moe", Architecture::kQwen3_5Moe, "qwen3_5_moe"},
    {"qwen3next", Architecture::kQwen3Next, "qwen3_next"},
    {"qwen3", Architecture::kQwen3, "qwen3"},
};

// Grouped value head g * r + j sits at tiled position j * Hk + g in llama.cpp's Qwen3.5 files.
std::vector<int> tiled_position_of_grouped(int Hk, int Hv) {
  const int r = Hv / Hk;
  std::vector<int> position(Hv);
  for (int g = 0; g < Hk; ++g)
    for (int j = 0; j < r; ++j) position[g * r + j] = j * Hk + g;
  return position;
}

MlpWeights load_ffn(GgufWeightReader& r, const std::string& prefix, const std::string& suffix,
                    int H, int I) {
  return {r.matrix(prefix + "ffn_gate" + suffix + ".weight", I, H),
          r.matrix(prefix + "ffn_up" + suffix + ".weight", I, H),
          r.matrix(prefix + "ffn_down" + suffix + ".weight", H, I)};
}

MoeWeights load_moe(GgufWeightReader& r, const ModelConfig& c, const std::string& blk) {
  const int H = c.hidden_size, E = c.num_experts, I = c.moe_intermediate_size;
  MoeWeights m;
  m.router = r.matrix(blk + "ffn_gate_inp.weight", E, H);
  for (int e = 0; e < E; ++e)
    m.experts.push_back({r.matrix(blk + "ffn_gate_exps.weight", I, H, E, e),
                         r.matrix(blk + "ffn_up_exps.weight", I, H, E, e),
                         r.matrix(blk + "ffn_down_exps.weight", H, I, E, e)});
  if (c.shared_expert_intermediate_size > 0) {
    m.has_shared_expert = true;
    m.shared = load_ffn(r, blk, "_shexp", H, c.shared_expert_intermediate_size);
    // Stored as a vector [H] (or [H, 1]); the forward pass wants a [1, H] matrix.
    const GgufTensor* gate = r.take(blk + "ffn_gate_inp_shexp.weight");
    if (gate && (gate->elements() != H || gate->ne[0] != H))
      r.fail(*gate, "expected [" + std::to_string(H) + "]");
    if (gate) m.shared_gate = r.matrix(blk + "ffn_gate_inp_shexp.weight", 1, H);
  }
  return m;
}

void load_delta_net(GgufWeightReader& r, const ModelConfig& c, const std::string& blk,
                    ModelWeights& owner, DeltaNetWeights& d) {
  const int H = c.hidden_size, Hk = c.linear_key_heads, Hv = c.linear_value_heads;
  const int Dv = c.linear_value_dim, KD = c.linear_key_size(), CD = c.conv_channels();
  const int K = c.conv_kernel, r_heads = Hv / Hk;
  const bool tiled = c.arch != Architecture::kQwen3Next && Hv != Hk;
  const std::vector<int> tiled_pos = tiled ? tiled_position_of_grouped(Hk, Hv) : std::vector<int>{};
  // Row order taking a tiled [Hv * rows_per_head] block (after `first` other rows) to grouped.
  auto grouped_rows = [&](int first, int rows_per_head) {
    std::vector<int> order;
    for (int i = 0; i < first; ++i) order.push_back(i);
    for (int h = 0; h < Hv; ++h)
      for (int i = 0; i < rows_per_head; ++i)
        order.push_back(first + tiled_pos[h] * rows_per_head + i);
    return order;
  };
  auto grouped = [&](const WeightMatrix& m, int first, int rows_per_head) {
    return tiled ? permuted_rows(m, grouped_rows(first, rows_per_head), owner) : m;
  };
  auto grouped_vector = [&](std::vector<float> v) {
    if (!tiled) return v;
    std::vector<float> out(v.size());
    for (int h = 0; h < Hv; ++h) out[h] = v[tiled_pos[h]];
    return out;
  };

  d.qkv = grouped(r.matrix(blk + "attn_qkv.weight", CD, H), 2 * KD, Dv);
  d.z = grouped(r.matrix(blk + "attn_gate.weight", Hv * Dv, H), 0, Dv);
  if (c.arch == Architecture::kQwen3Next) {
    // Per key group g: rows [b_g (r) | a_g (r)]; value head g * r + j.
    const WeightMatrix ba = r.matrix(blk + "ssm_ba.weight", 2 * Hv, H);
    std::vector<int> b_rows, a_rows;
    for (int g = 0; g < Hk; ++g)
      for (int j = 0; j < r_heads; ++j) {
        b_rows.push_back(g * 2 * r_heads + j);
        a_rows.push_back(g * 2 * r_heads + r_heads + j);
      }
    d.b = permuted_rows(ba, b_rows, owner);
    d.a = permuted_rows(ba, a_rows, owner);
  } else {
    d.b = grouped(r.matrix(blk + "ssm_beta.weight", Hv, H), 0, 1);
    d.a = grouped(r.matrix(blk + "ssm_alpha.weight", Hv, H), 0, 1);
  }
  // ssm_conv1d is [CD][K] (ne {K, CD}); the kernel wants tap-major [K][CD], grouped channels.
  const GgufTensor& conv_t = r.use(blk + "ssm_conv1d.weight");
  if (conv_t.ne != std::vector<int64_t>{K, CD}) r.fail(conv_t, "wrong shape");
  std::vector<float> conv(size_t(K) * CD);
  gguf_dequantize(conv_t.type, conv_t.data, conv.size(), conv.data());
  const std::vector<int> channel_order = tiled ? grouped_rows(2 * KD, Dv) : std::vector<int>{};
  d.conv.assign(size_t(K) * CD, 0.f);
  for (int ch = 0; ch < CD; ++ch) {
    const int src = tiled ? channel_order[ch] : ch;
    for (int k = 0; k < K; ++k) d.conv[size_t(k) * CD + ch] = conv[size_t(src) * K + k];
  }
  d.A = grouped_vector(r.vector(blk + "ssm_a", Hv));
  d.dt_bias = grouped_vector(r.vector(blk + "ssm_dt.bias", Hv));
  d.norm = r.vector(blk + "ssm_norm.weight", Dv);
  d.out = r.matrix(blk + "ssm_out.weight", H, Hv * Dv);
  if (tiled) {
    // out_proj input position p holds tiled head p = j * Hk + g, i.e. grouped head g * r + j.
    d.out_heads.resize(Hv);
    for (int h = 0; h < Hv; ++h) d.out_heads[tiled_pos[h]] = h;
  }
}

}  // namespace

ModelConfig gguf_model_config(const GgufFile& file) {
  const GgufMetadata m(file);
  const std::string name = m.string("general.architecture");
  const ArchName* arch = nullptr;
  for (const ArchName& a : kArchitectures)
    if (name == a.gguf) arch = &a;
  if (!arch)
    throw Error(file.path() + ": GGUF architecture '" + name +
                "' is not supported (qwen35, qwen35moe, qwen3next, qwen3)");
  const std::string a = name + ".";
  ModelConfig c;
  c.arch = arch->arch;
  c.model_type = arch->model_type;
  c.hidden_size = int(m.integer(a + "embedding_length"));
  // Blocks past the main stack are MTP heads (llama.cpp's {arch}.nextn_predict_layers). A file
  // without the key whose last block holds nextn.* tensors counts that block as the head too,
  // rather than reading it as a main layer.
  const int64_t blocks = m.integer(a + "block_count");
  const std::string last_nextn = "blk." + std::to_string(blocks - 1) + ".nextn.";
  const auto in_last_nextn = [&](const GgufTensor& t) { return t.name.starts_with(last_nextn); };
  const int64_t mtp_blocks =
      m.integer(a + "nextn_predict_layers",
                std::any_of(file.tensors().begin(), file.tensors().end(), in_last_nextn) ? 1 : 0);
  if (mtp_blocks < 0 || mtp_blocks > 1)
    throw Error(file.path() + ": GGUF " + a + "nextn_predict_layers is " +
                std::to_string(mtp_blocks) + "; only one MTP block is supported");
  c.num_layers = int(blocks - mtp_blocks);
  c.num_heads = int(m.integer(a + "attention.head_count"));
  c.num_kv_heads = int(m.integer(a + "attention.head_count_kv", c.num_heads));
  c.head_dim = int(m.integer(a + "attention.key_length", c.hidden_size / std::max(1, c.num_heads)));
  c.intermediate_size = int(m.integer(a + "feed_forward_length", 0));
  c.rms_norm_eps = float(m.number(a + "attention.layer_norm_rms_epsilon", 1e-6));
  c.rope_theta = m.number(a + "rope.freq_base", 10000.0);
  c.rotary_dim = int(m.integer(a + "rope.dimension_count", c.head_dim));
  // llama.cpp's Qwen3.5 files keep the M-RoPE sections (t, h, w, unused) and rotate them
  // interleaved (its IMROPE), as config.json's mrope_section / mrope_interleaved say.
  const json* sections = m.find(a + "rope.dimension_sections");
  if (sections && sections->is_array() && sections->size() >= 3 &&
      (c.arch == Architecture::kQwen3_5 || c.arch == Architecture::kQwen3_5Moe)) {
    for (size_t i = 0; i < 3; ++i) {
      if (!(*sections)[i].is_number_integer() || (*sections)[i].get<int>() < 0)
        throw Error(file.path() + ": GGUF " + a + "rope.dimension_sections is malformed");
      c.mrope_section.push_back((*sections)[i].get<int>());
    }
    c.mrope_interleaved = true;
  }
  if (c.arch == Architecture::kQwen3_5Moe || c.arch == Architecture::kQwen3Next) {
    c.num_experts = int(m.integer(a + "expert_count"));
    c.experts_per_token = int(m.integer(a + "expert_used_count"));
    c.moe_intermediate_size = int(m.integer(a + "expert_feed_forward_length"));
    c.shared_expert_intermediate_size = int(m.integer(a + "expert_shared_feed_forward_length", 0));
    c.norm_topk_prob = true;
  }
  const int interval = int(m.integer(a + "full_attention_interval", 4));
  for (int l = 0; l < c.num_layers; ++l)
    c.full_attention.push_back(c.arch == Architecture::kQwen3 || (l + 1) % interval == 0);
  if (c.arch != Architecture::kQwen3) {
    c.conv_kernel = int(m.integer(a + "ssm.conv_kernel"));
    c.linear_key_dim = int(m.integer(a + "ssm.state_size"));
    c.linear_key_heads = int(m.integer(a + "ssm.group_count"));
    c.linear_value_heads = int(m.integer(a + "ssm.time_step_rank"));
    const int inner = int(m.integer(a + "ssm.inner_size"));
    if (c.linear_value_heads <= 0 || c.linear_key_heads <= 0 || inner % c.linear_value_heads ||
        c.linear_value_heads % c.linear_key_heads)
      throw Error(file.path() + ": inconsistent GGUF ssm.* metadata");
    c.linear_value_dim = inner / c.linear_value_heads;
  }
  const GgufTensor* embed = file.find("token_embd.weight");
  if (!embed || embed->ne.size() != 2)
    throw Error(file.path() + ": GGUF tensor token_embd.weight is missing or not 2-D");
  c.vocab_size = int(embed->ne[1]);
  c.tie_word_embeddings = file.find("output.weight") == nullptr;
  // GGUF files carry no image_token_id; a Qwen3.5 vocabulary's <|image_pad|> is it (the
  // tower comes as a separate mmproj file, ModelLoadOptions::mmproj).
  const json* tokens = m.find("tokenizer.ggml.tokens");
  const bool vision_arch = c.arch == Architecture::kQwen3_5 || c.arch == Architecture::kQwen3_5Moe;
  if (vision_arch && tokens && tokens->is_array())
    for (size_t id = 0; id < tokens->size(); ++id)
      if ((*tokens)[id] == "<|image_pad|>") c.image_token_id = int(id);
  if (c.hidden_size <= 0 || c.num_layers <= 0 || c.num_heads <= 0 || c.head_dim <= 0 ||
      c.rotary_dim <= 0 || c.rotary_dim > c.head_dim)
    throw Error(file.path() + ": inconsistent GGUF hyper-parameters");
  return c;
}

namespace {

LayerWeights load_layer(GgufWeightReader& r, const ModelConfig& c, int l, bool full_attention,
                        bool moe, ModelWeights& weights) {
  const int H = c.hidden_size, D = c.head_dim;
  const bool hybrid = c.hybrid();
  const std::string blk = "blk." + std::to_string(l) + ".";
  LayerWeights layer;
  layer.full_attention = full_attention;
  layer.moe = moe;
  layer.input_norm = r.vector(blk + "attn_norm.weight", H);
  layer.post_norm = r.vector(blk + (hybrid ? "post_attention_norm.weight" : "ffn_norm.weight"), H);
  if (layer.full_attention) {
    AttentionWeights& at = layer.attention;
    at.q = r.matrix(blk + "attn_q.weight", c.num_heads * D * (hybrid ? 2 : 1), H);
    at.k = r.matrix(blk + "attn_k.weight", c.num_kv_heads * D, H);
    at.v = r.matrix(blk + "attn_v.weight", c.num_kv_heads * D, H);
    at.o = r.matrix(blk + "attn_output.weight", H, c.num_heads * D);
    at.q_norm = r.vector(blk + "attn_q_norm.weight", D);
    at.k_norm = r.vector(blk + "attn_k_norm.weight", D);
  } else {
    load_delta_net(r, c, blk, weights, layer.delta_net);
  }
  if (layer.moe)
    layer.moe_ffn = load_moe(r, c, blk);
  else
    layer.mlp = load_ffn(r, blk, "", H, c.intermediate_size);
  return layer;
}

// llama.cpp's converter (conversion/qwen.py: _Qwen35MtpMixin for Qwen3.5; newer versions
// _QwenMtpMixin also for Qwen3-Next) appends the MTP head as block
// n_layer: an ordinary full-attention block plus nextn.eh_proj (fc), nextn.enorm / hnorm
// (pre_fc_norm_embedding / hidden) and nextn.shared_head_norm (norm), its norms folded like all
// others. llama.cpp falls back to output_norm when shared_head_norm is absent; so does this.
// A block that lacks any other tensor, or holds a malformed one, is dropped (optional_parts.h),
// all of its tensors with it.
std::optional<MtpWeights> load_mtp(GgufWeightReader& r, const ModelConfig& c, ModelWeights& weights,
                                   std::string& dropped) {
  const std::string block = gguf_mtp_block(c.num_layers);
  if (!r.has_prefix(block)) return std::nullopt;
  const std::string nextn = block + "nextn.";
  std::optional<MtpWeights> head;
  dropped = load_optional_part(mtp_head_part(), [&](MissingTensors& missing) {
    r.collect_missing(&missing);
    const int H = c.hidden_size;
    MtpWeights m;
    m.fc = r.matrix(nextn + "eh_proj.weight", H, 2 * H);
    m.embedding_norm = r.vector(nextn + "enorm.weight", H);
    m.hidden_norm = r.vector(nextn + "hnorm.weight", H);
    m.final_norm = r.has(nextn + "shared_head_norm.weight")
                       ? r.vector(nextn + "shared_head_norm.weight", H)
                       : weights.final_norm;
    m.layer = load_layer(r, c, c.num_layers, /*full_attention=*/true, c.is_moe_layer(0), weights);
    head = std::move(m);
  });
  r.collect_missing(nullptr);
  if (dropped.empty()) return head;
  r.excuse_unused(block);
  return std::nullopt;
}

}  // namespace

ModelWeights load_gguf_weights(const GgufFile& file, const ModelConfig& c) {
  ModelWeights weights;
  GgufWeightReader r(file, architecture_name(c.arch));
  const int H = c.hidden_size;
  weights.embed = r.matrix("token_embd.weight", c.vocab_size, H);
  weights.final_norm = r.vector("output_norm.weight", H);
  weights.head = c.tie_word_embeddings ? weights.embed : r.matrix("output.weight", c.vocab_size, H);
  for (int l = 0; l < c.num_layers; ++l)
    weights.layers.push_back(
        load_layer(r, c, l, c.is_full_attention(l), c.is_moe_layer(l), weights));
  if (c.hybrid()) weights.mtp = load_mtp(r, c, weights, weights.mtp_dropped);
  r.reject_unused();
  return weights;
}

}  // namespace qmlx
