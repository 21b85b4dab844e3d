#include "modelgen/random_weights.h"

#include <algorithm>
#include <cmath>

#include "base/thread_pool.h"

namespace qmlx::modelgen {

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t name_hash(const std::string& name) {
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a
  for (unsigned char c : name) hash = (hash ^ c) * 0x100000001b3ull;
  return hash;
}

using Values = std::function<std::vector<float>()>;

// Uniform in [-limit, limit) mapped through `shift`: value = shift + limit * u.
Values uniform(uint64_t seed, std::string name, int64_t count, float limit, float shift = 0.0f) {
  return [=] {
    auto values = uniform_values(seed, name, count);
    for (float& v : values) v = shift + limit * v;
    return values;
  };
}

// std `stddev` from a uniform distribution (limit = sqrt(3) * std).
Values with_std(uint64_t seed, const std::string& name, int64_t count, double stddev) {
  return uniform(seed, name, count, static_cast<float>(std::sqrt(3.0) * stddev));
}

class Builder {
 public:
  Builder(Arch arch, const ModelShape& shape, uint64_t seed, int used_vocab)
      : arch_(arch), s_(shape), seed_(seed), used_vocab_(used_vocab) {}

  LogicalModel build() {
    const int64_t H = s_.hidden;
    vocabulary_matrix("embed_tokens.weight", 1.0);
    norm("norm.weight", H);
    if (!s_.tie) vocabulary_matrix("lm_head.weight", 1.0 / std::sqrt(double(H)));
    for (int layer = 0; layer < s_.layers; ++layer)
      add_layer(layer_name(layer, ""), s_.is_full_attention(arch_, layer));
    if (s_.mtp) add_mtp();
    if (s_.vision) add_vision_tower();
    return std::move(model_);
  }

 private:
  void matrix(const std::string& name, int64_t rows, int64_t cols, double stddev) {
    model_.add(name, {rows, cols}, with_std(seed_, name, rows * cols, stddev));
  }
  void vocabulary_matrix(const std::string& name, double stddev) {
    const int64_t H = s_.hidden, used = int64_t{std::min(used_vocab_, s_.vocab)} * H;
    model_.add(name, {s_.vocab, H}, [values = with_std(seed_, name, s_.vocab * H, stddev), used] {
      auto out = values();
      std::fill(out.begin() + used, out.end(), 0.0f);
      return out;
    });
  }
  void projection(const std::string& name, int64_t out, int64_t in) {
    matrix(name, out, in, 1.0 / std::sqrt(double(in)));
  }
  // Writes into the residual stream: kept small so many layers do not blow up.
  void residual_projection(const std::string& name, int64_t out, int64_t in) {
    matrix(name, out, in, 0.5 / std::sqrt(double(in) * s_.layers));
  }
  void norm(const std::string& name, int64_t size) {
    model_.add(name, {size}, uniform(seed_, name, size, 0.1f, 1.0f));
  }

  // `prefix` names the layer: "layers.3." or "mtp.layers.0.".
  void add_layer(const std::string& prefix, bool full_attention) {
    norm(prefix + "input_layernorm.weight", s_.hidden);
    norm(prefix + "post_attention_layernorm.weight", s_.hidden);
    if (full_attention) {
      add_attention(prefix);
    } else {
      add_gated_delta_net(prefix);
    }
    if (has_moe(arch_)) {
      add_moe(prefix);
    } else {
      add_mlp(prefix + "mlp.", s_.intermediate);
    }
  }

  // The MTP head: fc over [embedding | hidden], its norms and one full-attention layer.
  void add_mtp() {
    const int64_t H = s_.hidden;
    projection("mtp.fc.weight", H, 2 * H);
    norm("mtp.pre_fc_norm_embedding.weight", H);
    norm("mtp.pre_fc_norm_hidden.weight", H);
    norm("mtp.norm.weight", H);
    add_layer("mtp.layers.0.", true);
  }

  // The vision tower (logical names "visual.*"): Linear layers with biases, LayerNorms with
  // weight and bias, the patch embedding as its Conv3d [hidden, channels, temporal, patch,
  // patch] and the learned position grid.
  void add_vision_tower() {
    const VisionShape& v = s_.vision_tower;
    const int64_t H = v.hidden, merged = H * v.merge * v.merge;
    const int64_t patch_dim = int64_t{v.in_channels} * v.temporal_patch * v.patch * v.patch;
    const std::string conv = "visual.patch_embed.proj.weight";
    model_.add(conv, {H, v.in_channels, v.temporal_patch, v.patch, v.patch},
               with_std(seed_, conv, H * patch_dim, 1.0 / std::sqrt(double(patch_dim))));
    bias("visual.patch_embed.proj.bias", H);
    matrix("visual.pos_embed.weight", v.num_position_embeddings, H, 0.5);
    for (int b = 0; b < v.depth; ++b) {
      const std::string p = "visual.blocks." + std::to_string(b) + ".";
      layer_norm(p + "norm1", H);
      layer_norm(p + "norm2", H);
      biased_projection(p + "attn.qkv", 3 * H, H);
      biased_projection(p + "attn.proj", H, H);
      biased_projection(p + "mlp.linear_fc1", v.intermediate, H);
      biased_projection(p + "mlp.linear_fc2", H, v.intermediate);
    }
    layer_norm("visual.merger.norm", H);
    biased_projection("visual.merger.linear_fc1", merged, merged);
    biased_projection("visual.merger.linear_fc2", s_.hidden, merged);
  }
  void bias(const std::string& name, int64_t size) {
    model_.add(name, {size}, uniform(seed_, name, size, 0.1f));
  }
  void biased_projection(const std::string& module, int64_t out, int64_t in) {
    projection(module + ".weight", out, in);
    bias(module + ".bias", out);
  }
  void layer_norm(const std::string& module, int64_t size) {
    norm(module + ".weight", size);
    bias(module + ".bias", size);
  }

  void add_attention(const std::string& prefix) {
    const int64_t H = s_.hidden, D = s_.head_dim;
    const int64_t q_rows = s_.heads * D * (arch_ == Arch::kQwen3 ? 1 : 2);  // [q | gate] per head
    projection(prefix + "self_attn.q_proj.weight", q_rows, H);
    projection(prefix + "self_attn.k_proj.weight", s_.kv_heads * D, H);
    projection(prefix + "self_attn.v_proj.weight", s_.kv_heads * D, H);
    residual_projection(prefix + "self_attn.o_proj.weight", H, s_.heads * D);
    norm(prefix + "self_attn.q_norm.weight", D);
    norm(prefix + "self_attn.k_norm.weight", D);
  }

  void add_gated_delta_net(const std::string& prefix) {
    const int64_t H = s_.hidden;
    const int64_t key_dim = int64_t{s_.linear_key_heads} * s_.linear_key_dim;
    const int64_t value_dim = int64_t{s_.linear_value_heads} * s_.linear_value_dim;
    const int64_t conv_dim = 2 * key_dim + value_dim;
    const int64_t Hv = s_.linear_value_heads;
    const auto name = [&](const char* suffix) { return prefix + "linear_attn." + suffix; };
    projection(name("in_proj_qkv.weight"), conv_dim, H);
    projection(name("in_proj_z.weight"), value_dim, H);
    projection(name("in_proj_b.weight"), Hv, H);
    projection(name("in_proj_a.weight"), Hv, H);
    const std::string conv = name("conv1d.weight");
    model_.add(conv, {conv_dim, s_.conv_kernel},
               with_std(seed_, conv, conv_dim * s_.conv_kernel, 1.0 / std::sqrt(s_.conv_kernel)));
    add_decay_parameters(name("A_log"), name("dt_bias"), Hv);
    norm(name("norm.weight"), s_.linear_value_dim);
    residual_projection(name("out_proj.weight"), H, value_dim);
  }

  // As transformers initialises them: A ~ U(1, 16) (A_log = log A), dt ~ logU(1e-3, 1e-1)
  // and dt_bias = softplus^-1(dt), so exp(-A * softplus(a + dt_bias)) spreads over (0, 1).
  void add_decay_parameters(const std::string& a_log, const std::string& dt_bias, int64_t Hv) {
    const uint64_t seed = seed_;
    model_.add(a_log, {Hv}, [=] {
      auto u = uniform_values(seed, a_log, Hv);
      for (float& v : u) v = std::log(8.5f + 7.5f * v);
      return u;
    });
    model_.add(dt_bias, {Hv}, [=] {
      auto u = uniform_values(seed, dt_bias, Hv);
      for (float& v : u) {
        const double log_dt = std::log(1e-3) + (0.5 + 0.5 * v) * (std::log(1e-1) - std::log(1e-3));
        const double dt = std::exp(log_dt);
        v = static_cast<float>(dt + std::log(-std::expm1(-dt)));
      }
      return u;
    });
  }

  void add_mlp(const std::string& prefix, int64_t intermediate) {
    projection(prefix + "gate_proj.weight", intermediate, s_.hidden);
    projection(prefix + "up_proj.weight", intermediate, s_.hidden);
    residual_projection(prefix + "down_proj.weight", s_.hidden, intermediate);
  }

  void add_moe(const std::string& prefix) {
    projection(prefix + "mlp.gate.weight", s_.experts, s_.hidden);
    for (int e = 0; e < s_.experts; ++e) {
      add_mlp(prefix + "mlp.experts." + std::to_string(e) + ".", s_.moe_intermediate);
    }
    add_mlp(prefix + "mlp.shared_expert.", s_.shared_intermediate);
    projection(prefix + "mlp.shared_expert_gate.weight", 1, s_.hidden);
  }

  Arch arch_;
  const ModelShape& s_;
  uint64_t seed_;
  int used_vocab_;
  LogicalModel model_;
};

}  // namespace

std::vector<float> uniform_values(uint64_t seed, const std::string& name, int64_t count) {
  std::vector<float> values(count);
  const uint64_t stream = splitmix64(seed ^ name_hash(name));
  default_pool().parallel_for(
      count,
      [&](size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i) {
          const uint64_t bits = splitmix64(stream + i * 0x9e3779b97f4a7c15ull) >> 40;  // 24 bits
          values[i] = static_cast<float>(bits) * (2.0f / 16777216.0f) - 1.0f;
        }
      },
      1 << 16);
  return values;
}

LogicalModel random_logical_model(Arch arch, const ModelShape& shape, uint64_t seed,
                                  int used_vocab) {
  return Builder(arch, shape, seed, used_vocab).build();
}

}  // namespace qmlx::modelgen
