#include "engine/model_identity.h"

#include <xxhash.h>

#include <algorithm>
#include <cstdio>

namespace qmlx {
namespace {

// Pages hashed per buffer: first, middle and last. Identical files give identical digests; a
// regenerated or re-quantized model differs in every page, so sampling loses nothing in practice.
constexpr size_t kSampleBytes = 4096;

uint64_t sampled_digest(const uint8_t* data, size_t size) {
  if (data == nullptr || size == 0) return 0;
  if (size <= 3 * kSampleBytes) return XXH3_64bits(data, size);
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  for (size_t offset : {size_t(0), (size / 2) & ~size_t(63), size - kSampleBytes}) {
    XXH3_64bits_update(state, data + offset, kSampleBytes);
  }
  XXH3_64bits_update(state, &size, sizeof size);
  uint64_t digest = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return digest;
}

class IdentityWriter {
 public:
  void field(const std::string& name, double value) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", value);
    text_ += name + "=" + buf + "\n";
  }
  void field(const std::string& name, const std::string& value) {
    text_ += name + "=" + value + "\n";
  }
  void matrix(const std::string& name, const WeightMatrix& w) {
    char buf[256];
    // The tiled layout changes the decode arithmetic (kernels/affine_tiles.h), so a checkpoint
    // made with one layout is not continued with the other.
    std::snprintf(buf, sizeof buf, "%s: %dx%d format=%d gguf=%d bits=%d group=%d scale=%d%s ",
                  name.c_str(), w.rows, w.cols, int(w.format), int(w.gguf_type), w.bits,
                  w.group_size, int(w.scale_type), w.tiled ? " tiled" : "");
    text_ += buf;
    const size_t groups = size_t(w.rows) * size_t(w.groups_per_row());
    const size_t scale_bytes = groups * scalar_size(w.scale_type);
    std::snprintf(buf, sizeof buf, "data=%016llx scales=%016llx biases=%016llx\n",
                  (unsigned long long)sampled_digest(w.data, size_t(w.rows) * w.row_bytes()),
                  (unsigned long long)sampled_digest(w.scales, w.scales ? scale_bytes : 0),
                  (unsigned long long)sampled_digest(w.biases, w.biases ? scale_bytes : 0));
    text_ += buf;
  }
  void vector(const std::string& name, const std::vector<float>& v) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "%s: %zu %016llx\n", name.c_str(), v.size(),
                  (unsigned long long)XXH3_64bits(v.data(), v.size() * sizeof(float)));
    text_ += buf;
  }
  void mlp(const std::string& prefix, const MlpWeights& m) {
    matrix(prefix + ".gate", m.gate);
    matrix(prefix + ".up", m.up);
    matrix(prefix + ".down", m.down);
  }
  std::string take() { return std::move(text_); }

 private:
  std::string text_;
};

void describe_config(const ModelConfig& c, IdentityWriter& out) {
  out.field("arch", double(int(c.arch)));
  out.field("model_type", c.model_type);
  out.field("hidden", c.hidden_size);
  out.field("layers", c.num_layers);
  out.field("heads", c.num_heads);
  out.field("kv_heads", c.num_kv_heads);
  out.field("head_dim", c.head_dim);
  out.field("linear_key_heads", c.linear_key_heads);
  out.field("linear_value_heads", c.linear_value_heads);
  out.field("linear_key_dim", c.linear_key_dim);
  out.field("linear_value_dim", c.linear_value_dim);
  out.field("conv_kernel", c.conv_kernel);
  out.field("intermediate", c.intermediate_size);
  out.field("experts", c.num_experts);
  out.field("experts_per_token", c.experts_per_token);
  out.field("moe_intermediate", c.moe_intermediate_size);
  out.field("shared_intermediate", c.shared_expert_intermediate_size);
  out.field("norm_topk_prob", c.norm_topk_prob ? 1 : 0);
  out.field("rope_theta", c.rope_theta);
  out.field("rotary_dim", c.rotary_dim);
  out.field("rms_norm_eps", c.rms_norm_eps);
  out.field("vocab", c.vocab_size);
  out.field("tie", c.tie_word_embeddings ? 1 : 0);
  std::string kinds;
  for (int i = 0; i < c.num_layers; ++i) {
    kinds += c.is_full_attention(i) ? 'A' : 'L';
    kinds += c.is_moe_layer(i) ? 'E' : 'D';
  }
  out.field("layer_kinds", kinds);
}

}  // namespace

std::string model_identity(const Model& model) {
  IdentityWriter out;
  describe_config(model.config(), out);
  // The arithmetic: the CPU kernels, or a device's kernels with its driver (a checkpoint made
  // by one is not continued by the other; their rounding differs).
  out.field("backend", model.backend_description());
  const ModelWeights& w = model.weights();
  out.matrix("embed", w.embed);
  out.matrix("head", w.head);
  out.vector("final_norm", w.final_norm);
  for (size_t i = 0; i < w.layers.size(); ++i) {
    const LayerWeights& l = w.layers[i];
    const std::string p = "layer" + std::to_string(i);
    out.vector(p + ".input_norm", l.input_norm);
    out.vector(p + ".post_norm", l.post_norm);
    if (l.full_attention) {
      out.matrix(p + ".q", l.attention.q);
      out.matrix(p + ".k", l.attention.k);
      out.matrix(p + ".v", l.attention.v);
      out.matrix(p + ".o", l.attention.o);
      out.vector(p + ".q_norm", l.attention.q_norm);
      out.vector(p + ".k_norm", l.attention.k_norm);
    } else {
      const DeltaNetWeights& d = l.delta_net;
      out.matrix(p + ".qkv", d.qkv);
      out.matrix(p + ".z", d.z);
      out.matrix(p + ".b", d.b);
      out.matrix(p + ".a", d.a);
      out.matrix(p + ".out", d.out);
      out.vector(p + ".conv", d.conv);
      out.vector(p + ".dt_bias", d.dt_bias);
      out.vector(p + ".A", d.A);
      out.vector(p + ".norm", d.norm);
    }
    if (l.moe) {
      const MoeWeights& m = l.moe_ffn;
      out.matrix(p + ".router", m.router);
      for (size_t e = 0; e < m.experts.size(); ++e) {
        out.mlp(p + ".expert" + std::to_string(e), m.experts[e]);
      }
      if (m.has_shared_expert) {
        out.mlp(p + ".shared", m.shared);
        out.matrix(p + ".shared_gate", m.shared_gate);
      }
    } else {
      out.mlp(p + ".mlp", l.mlp);
    }
  }
  return out.take();
}

}  // namespace qmlx
