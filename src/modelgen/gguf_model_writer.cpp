#include "modelgen/gguf_model_writer.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "modelgen/chat_template.h"
#include "modelgen/gguf_file_writer.h"
#include "modelgen/random_weights.h"

namespace qmlx::modelgen {
namespace {

using Values = std::function<std::vector<float>()>;

// llama.cpp token types (llama_token_type).
constexpr int32_t kTokenNormal = 1, kTokenControl = 3, kTokenUserDefined = 4, kTokenUnused = 5;
// llama_ftype values for general.file_type.
uint32_t file_type(const GgufRecipe& recipe) {
  switch (recipe.type) {
    case GgufQuant::kF32:
      return 0;
    case GgufQuant::kF16:
      return 1;
    case GgufQuant::kQ4_0:
      return 2;
    case GgufQuant::kQ4_1:
      return 3;
    case GgufQuant::kQ8_0:
      return 7;
    case GgufQuant::kQ5_0:
      return 8;
    case GgufQuant::kQ5_1:
      return 9;
    case GgufQuant::kQ2_K:
      return 10;
    case GgufQuant::kQ3_K:
      return 12;
    case GgufQuant::kQ4_K:
      return recipe.k_mix ? 15 : 14;
    case GgufQuant::kQ5_K:
      return 16;
    case GgufQuant::kQ6_K:
      return 18;
    case GgufQuant::kBF16:
      return 32;
  }
  return 0;
}

const char* gguf_arch(Arch arch) {
  switch (arch) {
    case Arch::kQwen35:
      return "qwen35";
    case Arch::kQwen35Moe:
      return "qwen35moe";
    case Arch::kQwen3Next:
      return "qwen3next";
    case Arch::kQwen3:
      return "qwen3";
  }
  return "";
}

// The type llama-quantize falls back to when a row does not divide into the type's blocks.
GgufQuant fallback_for(GgufQuant type, int64_t row) {
  if (row % gguf_quant_block_elems(type) == 0) return type;
  switch (type) {
    case GgufQuant::kQ4_K:
      return fallback_for(GgufQuant::kQ5_0, row);
    case GgufQuant::kQ5_K:
      return fallback_for(GgufQuant::kQ5_1, row);
    case GgufQuant::kQ6_K:
      return fallback_for(GgufQuant::kQ8_0, row);
    case GgufQuant::kQ2_K:
    case GgufQuant::kQ3_K:
      return fallback_for(GgufQuant::kQ4_0, row);
    default:
      return GgufQuant::kF16;
  }
}

// Value heads from grouped (h = g * r + j) to tiled (j * Hk + g) order, for `rows` of
// `width` values per head; applied to a [Hv * head_rows, cols] row block.
std::vector<float> tile_value_heads(const std::vector<float>& in, int64_t Hk, int64_t r,
                                    int64_t head_rows, int64_t cols) {
  std::vector<float> out(in.size());
  const int64_t block = head_rows * cols;
  for (int64_t g = 0; g < Hk; ++g)
    for (int64_t j = 0; j < r; ++j)
      std::copy_n(in.begin() + (g * r + j) * block, block, out.begin() + (j * Hk + g) * block);
  return out;
}

class GgufLayout {
 public:
  GgufLayout(const ModelOptions& options, const GgufRecipe& recipe, const LogicalModel& model,
             GgufFileWriter& writer)
      : options_(options), recipe_(recipe), model_(model), s_(options.shape), writer_(writer) {}

  void add_tensors() {
    matrix("token_embd.weight", values("embed_tokens.weight"), shape("embed_tokens.weight"));
    vector("output_norm.weight", values("norm.weight"));
    if (!s_.tie) {
      matrix("output.weight", values("lm_head.weight"), shape("lm_head.weight"), head_type());
    }
    for (int layer = 0; layer < s_.layers; ++layer)
      add_layer(layer_name(layer, ""), layer, s_.is_full_attention(options_.arch, layer));
    if (s_.mtp) add_mtp();
  }

  // Every tensor name met, written or omitted (ModelOptions::omit_tensors).
  const std::vector<std::string>& names() const { return names_; }

 private:
  Values values(const std::string& name) const { return model_.at(name).values; }
  std::vector<int64_t> shape(const std::string& name) const { return model_.at(name).shape; }
  bool tiled() const {
    return is_qwen35_family(options_.arch) && s_.linear_value_heads != s_.linear_key_heads;
  }

  GgufQuant head_type() const { return recipe_.k_mix ? GgufQuant::kQ6_K : recipe_.type; }
  // llama-quantize's use_more_bits(layer, n_layers).
  bool more_bits(int layer) const {
    const int n = s_.layers;
    return layer < n / 8 || layer >= 7 * n / 8 || (layer - n / 8) % 3 == 2;
  }

  // A 2-D or 3-D weight: `dims` row-major (outermost first), stored in `type` or its fallback.
  // False (and nothing written) for a tensor the options omit.
  bool keep(const std::string& name) {
    names_.push_back(name);
    return !is_omitted(options_, name);
  }

  void matrix(const std::string& name, Values v, std::vector<int64_t> dims,
              std::optional<GgufQuant> type = std::nullopt) {
    if (!keep(name)) return;
    const GgufQuant t = fallback_for(type.value_or(recipe_.type), dims.back());
    std::reverse(dims.begin(), dims.end());
    writer_.add_tensor(name, dims, t, [v = std::move(v), t] {
      const auto data = v();
      return gguf_quantize(t, data.data(), data.size());
    });
  }
  void f32(const std::string& name, Values v, std::vector<int64_t> dims) {
    if (!keep(name)) return;
    std::reverse(dims.begin(), dims.end());
    writer_.add_tensor(name, dims, GgufQuant::kF32, [v = std::move(v)] {
      const auto data = v();
      return gguf_quantize(GgufQuant::kF32, data.data(), data.size());
    });
  }
  void vector(const std::string& name, Values v) {
    const int64_t n = int64_t(v().size());
    f32(name, std::move(v), {n});
  }

  // Logical layer `prefix` ("layers.3." or "mtp.layers.0.") as GGUF block `block`.
  void add_layer(const std::string& prefix, int layer, bool full_attention) {
    const auto L = [&prefix](const std::string& suffix) { return prefix + suffix; };
    const std::string blk = "blk." + std::to_string(layer) + ".";
    vector(blk + "attn_norm.weight", values(L("input_layernorm.weight")));
    vector(blk + (options_.arch == Arch::kQwen3 ? "ffn_norm.weight" : "post_attention_norm.weight"),
           values(L("post_attention_layernorm.weight")));
    if (full_attention) {
      const std::pair<const char*, const char*> projections[] = {{"q_proj", "attn_q"},
                                                                 {"k_proj", "attn_k"},
                                                                 {"v_proj", "attn_v"},
                                                                 {"o_proj", "attn_output"}};
      for (const auto& [hf, gg] : projections) {
        const std::string n = L(std::string("self_attn.") + hf + ".weight");
        const bool v_more = recipe_.k_mix && std::string(gg) == "attn_v" && more_bits(layer);
        matrix(blk + gg + ".weight", values(n), shape(n),
               v_more ? std::optional(GgufQuant::kQ6_K) : std::nullopt);
      }
      vector(blk + "attn_q_norm.weight", values(L("self_attn.q_norm.weight")));
      vector(blk + "attn_k_norm.weight", values(L("self_attn.k_norm.weight")));
    } else {
      add_gated_delta_net(prefix, blk);
    }
    if (has_moe(options_.arch)) {
      add_moe(prefix, layer, blk);
    } else {
      for (const char* p : {"gate", "up", "down"}) {
        const std::string n = L(std::string("mlp.") + p + "_proj.weight");
        const bool more = recipe_.k_mix && std::string(p) == "down" && more_bits(layer);
        matrix(blk + "ffn_" + p + ".weight", values(n), shape(n),
               more ? std::optional(GgufQuant::kQ6_K) : std::nullopt);
      }
    }
  }

  // llama.cpp's converter (_Qwen35MtpMixin, later _QwenMtpMixin, which Qwen3-Next uses too)
  // appends the MTP head as block n_layer: the layer's ordinary tensors plus nextn.eh_proj (fc),
  // nextn.enorm / hnorm (pre_fc_norm_embedding / hidden) and nextn.shared_head_norm (norm).
  void add_mtp() {
    const std::string nextn = "blk." + std::to_string(s_.layers) + ".nextn.";
    matrix(nextn + "eh_proj.weight", values("mtp.fc.weight"), shape("mtp.fc.weight"));
    vector(nextn + "enorm.weight", values("mtp.pre_fc_norm_embedding.weight"));
    vector(nextn + "hnorm.weight", values("mtp.pre_fc_norm_hidden.weight"));
    vector(nextn + "shared_head_norm.weight", values("mtp.norm.weight"));
    add_layer("mtp.layers.0.", s_.layers, true);
  }

  void add_gated_delta_net(const std::string& prefix, const std::string& blk) {
    const auto L = [&prefix](const std::string& suffix) {
      return prefix + "linear_attn." + suffix;
    };
    const int64_t Hk = s_.linear_key_heads, Hv = s_.linear_value_heads, r = Hv / Hk;
    const int64_t Dk = s_.linear_key_dim, Dv = s_.linear_value_dim, H = s_.hidden;
    const int64_t key_dim = Hk * Dk, channels = 2 * key_dim + Hv * Dv;
    const bool tile = tiled();
    // Row permutation of the value-head part of a [.., cols] matrix starting at row `first`.
    auto tile_rows = [=](Values v, int64_t first, int64_t head_rows, int64_t cols) -> Values {
      if (!tile) return v;
      return [=] {
        auto data = v();
        std::vector<float> tail(data.begin() + first * cols, data.end());
        tail = tile_value_heads(tail, Hk, r, head_rows, cols);
        std::copy(tail.begin(), tail.end(), data.begin() + first * cols);
        return data;
      };
    };
    matrix(blk + "attn_qkv.weight", tile_rows(values(L("in_proj_qkv.weight")), 2 * key_dim, Dv, H),
           {channels, H});
    matrix(blk + "attn_gate.weight", tile_rows(values(L("in_proj_z.weight")), 0, Dv, H),
           {Hv * Dv, H});
    if (options_.arch == Arch::kQwen3Next) {
      // HF's in_proj_ba layout is kept: per key group [b_g (r) | a_g (r)].
      const Values b = values(L("in_proj_b.weight")), a = values(L("in_proj_a.weight"));
      matrix(
          blk + "ssm_ba.weight",
          [=] {
            const auto b_rows = b(), a_rows = a();
            std::vector<float> out;
            for (int64_t g = 0; g < Hk; ++g) {
              out.insert(out.end(), b_rows.begin() + g * r * H, b_rows.begin() + (g + 1) * r * H);
              out.insert(out.end(), a_rows.begin() + g * r * H, a_rows.begin() + (g + 1) * r * H);
            }
            return out;
          },
          {2 * Hv, H});
    } else {
      matrix(blk + "ssm_beta.weight", tile_rows(values(L("in_proj_b.weight")), 0, 1, H), {Hv, H});
      matrix(blk + "ssm_alpha.weight", tile_rows(values(L("in_proj_a.weight")), 0, 1, H), {Hv, H});
    }
    const int64_t K = s_.conv_kernel;
    f32(blk + "ssm_conv1d.weight", tile_rows(values(L("conv1d.weight")), 2 * key_dim, Dv, K),
        {channels, K});
    const Values a_log = values(L("A_log"));
    vector(blk + "ssm_a", tile_rows(
                              [a_log] {
                                auto v = a_log();
                                for (float& x : v) x = -std::exp(x);
                                return v;
                              },
                              0, 1, 1));
    vector(blk + "ssm_dt.bias", tile_rows(values(L("dt_bias")), 0, 1, 1));
    vector(blk + "ssm_norm.weight", values(L("norm.weight")));
    // out_proj [H, Hv * Dv]: its columns follow the value heads.
    const Values out_proj = values(L("out_proj.weight"));
    Values out_tiled = out_proj;
    if (tile) {
      out_tiled = [=] {
        const auto w = out_proj();
        std::vector<float> out(w.size());
        for (int64_t row = 0; row < H; ++row)
          for (int64_t g = 0; g < Hk; ++g)
            for (int64_t j = 0; j < r; ++j)
              std::copy_n(w.begin() + row * Hv * Dv + (g * r + j) * Dv, Dv,
                          out.begin() + row * Hv * Dv + (j * Hk + g) * Dv);
        return out;
      };
    }
    matrix(blk + "ssm_out.weight", out_tiled, {H, Hv * Dv});
  }

  void add_moe(const std::string& prefix, int layer, const std::string& blk) {
    const auto L = [&prefix](const std::string& suffix) { return prefix + suffix; };
    const int64_t E = s_.experts, I = s_.moe_intermediate, H = s_.hidden;
    // llama-quantize never quantizes the router.
    f32(blk + "ffn_gate_inp.weight", values(L("mlp.gate.weight")), {E, H});
    for (const char* p : {"gate", "up", "down"}) {
      std::vector<Values> parts;
      for (int e = 0; e < E; ++e)
        parts.push_back(values(L("mlp.experts." + std::to_string(e) + "." + p + "_proj.weight")));
      const bool down = std::string(p) == "down";
      const bool more = recipe_.k_mix && down && more_bits(layer);
      matrix(
          blk + "ffn_" + p + "_exps.weight",
          [parts] {
            std::vector<float> out;
            for (const auto& part : parts) {
              const auto v = part();
              out.insert(out.end(), v.begin(), v.end());
            }
            return out;
          },
          down ? std::vector<int64_t>{E, H, I} : std::vector<int64_t>{E, I, H},
          more ? std::optional(GgufQuant::kQ6_K) : std::nullopt);
      const std::string shared = L(std::string("mlp.shared_expert.") + p + "_proj.weight");
      matrix(blk + "ffn_" + p + "_shexp.weight", values(shared), shape(shared));
    }
    vector(blk + "ffn_gate_inp_shexp.weight", values(L("mlp.shared_expert_gate.weight")));
  }

  const ModelOptions& options_;
  const GgufRecipe& recipe_;
  const LogicalModel& model_;
  const ModelShape& s_;
  GgufFileWriter& writer_;
  std::vector<std::string> names_;
};

void add_hyperparameters(const ModelOptions& options, GgufFileWriter& w) {
  const ModelShape& s = options.shape;
  const std::string a = gguf_arch(options.arch);
  w.add_u32(a + ".context_length", uint32_t(s.max_position_embeddings));
  w.add_u32(a + ".embedding_length", uint32_t(s.hidden));
  w.add_u32(a + ".block_count", uint32_t(s.layers + (s.mtp ? 1 : 0)));
  if (s.mtp) w.add_u32(a + ".nextn_predict_layers", 1);
  w.add_u32(a + ".feed_forward_length", uint32_t(s.intermediate));
  w.add_u32(a + ".attention.head_count", uint32_t(s.heads));
  w.add_u32(a + ".attention.head_count_kv", uint32_t(s.kv_heads));
  w.add_u32(a + ".attention.key_length", uint32_t(s.head_dim));
  w.add_u32(a + ".attention.value_length", uint32_t(s.head_dim));
  w.add_f32(a + ".attention.layer_norm_rms_epsilon", float(s.rms_norm_eps));
  w.add_f32(a + ".rope.freq_base", float(s.rope_theta));
  const int rotary = s.rotary_dim(options.arch);
  w.add_u32(a + ".rope.dimension_count", uint32_t(rotary));
  if (is_qwen35_family(options.arch)) {
    // Interleaved M-RoPE sections (t, h, w, unused) in rotary pairs.
    const auto [t, h, rest] = s.mrope_section(options.arch);
    w.add_i32_array(a + ".rope.dimension_sections", {t, h, rest, 0});
  }
  if (has_moe(options.arch)) {
    w.add_u32(a + ".expert_count", uint32_t(s.experts));
    w.add_u32(a + ".expert_used_count", uint32_t(s.experts_per_tok));
    w.add_u32(a + ".expert_feed_forward_length", uint32_t(s.moe_intermediate));
    w.add_u32(a + ".expert_shared_feed_forward_length", uint32_t(s.shared_intermediate));
  }
  if (has_linear_attention(options.arch)) {
    if (!s.full_attention_layers.empty()) {
      for (int i = 0; i < s.layers; ++i)
        if (s.full_attention_layers[i] != ((i + 1) % s.full_attention_interval == 0))
          throw Error("GGUF models need full attention every --full-attention-interval layers");
    }
    if (is_qwen35_family(options.arch) && s.linear_key_dim != s.linear_value_dim)
      throw Error("llama.cpp's qwen35 needs --linear-key-dim == --linear-value-dim");
    w.add_u32(a + ".ssm.conv_kernel", uint32_t(s.conv_kernel));
    w.add_u32(a + ".ssm.state_size", uint32_t(s.linear_key_dim));
    w.add_u32(a + ".ssm.group_count", uint32_t(s.linear_key_heads));
    w.add_u32(a + ".ssm.time_step_rank", uint32_t(s.linear_value_heads));
    w.add_u32(a + ".ssm.inner_size", uint32_t(s.linear_value_heads * s.linear_value_dim));
    w.add_u32(a + ".full_attention_interval", uint32_t(s.full_attention_interval));
  }
}

void add_tokenizer(const ModelOptions& options, const Vocabulary& vocabulary,
                   const std::string& chat_template, GgufFileWriter& w) {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (int id = 0; id < vocabulary.plain_count(); ++id) {
    tokens.push_back(vocabulary.plain_token(id));
    types.push_back(kTokenNormal);
  }
  const auto& specials = qwen_special_tokens();
  for (size_t i = 0; i < specials.size(); ++i) {
    tokens.push_back(specials[i]);
    // Those "special" in Qwen's tokenizer.json are control tokens to llama.cpp.
    types.push_back(qwen_special_is_flagged(i) ? kTokenControl : kTokenUserDefined);
  }
  // Embedding rows past the tokenizer, as the converter pads them.
  for (int id = int(tokens.size()); id < options.shape.vocab; ++id) {
    tokens.push_back("[PAD" + std::to_string(id) + "]");
    types.push_back(kTokenUnused);
  }
  std::vector<std::string> merges;
  for (const auto& [left, right] : vocabulary.merges()) merges.push_back(left + " " + right);
  w.add_string("tokenizer.ggml.model", "gpt2");
  w.add_string("tokenizer.ggml.pre", is_qwen35_family(options.arch) ? "qwen35" : "qwen2");
  w.add_string_array("tokenizer.ggml.tokens", tokens);
  w.add_i32_array("tokenizer.ggml.token_type", types);
  w.add_string_array("tokenizer.ggml.merges", merges);
  const int endoftext = vocabulary.special_id("<|endoftext|>");
  w.add_u32("tokenizer.ggml.eos_token_id", uint32_t(vocabulary.special_id("<|im_end|>")));
  w.add_u32("tokenizer.ggml.padding_token_id", uint32_t(endoftext));
  w.add_u32("tokenizer.ggml.bos_token_id", uint32_t(endoftext));
  w.add_bool("tokenizer.ggml.add_bos_token", false);
  w.add_string("tokenizer.chat_template", chat_template);
}

}  // namespace

GgufRecipe parse_gguf_recipe(const std::string& name) {
  std::string lower = name;
  for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "q4_k_m") return {GgufQuant::kQ4_K, true};
  if (auto type = parse_gguf_quant(lower)) return {*type, false};
  throw Error("unknown --gguf-type " + name +
              " (f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k q4_k_m)");
}

void write_gguf_model(const ModelOptions& options, const GgufRecipe& recipe,
                      const LogicalModel& weights, const Vocabulary& vocabulary,
                      const std::string& chat_template, const std::string& path) {
  validate_options(options);
  if (options.shape.vocab < vocabulary.size())
    throw Error("--vocab is smaller than the tokenizer's " + std::to_string(vocabulary.size()) +
                " tokens");
  GgufFileWriter w;
  w.add_string("general.architecture", gguf_arch(options.arch));
  w.add_string("general.name", std::string("qmlx random ") + arch_name(options.arch));
  w.add_u32("general.alignment", 32);
  w.add_u32("general.file_type", file_type(recipe));
  add_hyperparameters(options, w);
  add_tokenizer(options, vocabulary, chat_template, w);
  GgufLayout layout(options, recipe, weights, w);
  layout.add_tensors();
  require_omitted_tensors_exist(options, layout.names());
  w.write(path);
}

void write_random_gguf_model(const ModelOptions& options, const GgufRecipe& recipe,
                             const std::string& path) {
  validate_options(options);
  const Vocabulary vocabulary = Vocabulary::demo();
  const LogicalModel weights =
      random_logical_model(options.arch, options.shape, options.seed,
                           vocabulary.rows_in_use(options.shape.vision));
  write_gguf_model(options, recipe, weights, vocabulary, chat_template_for(options.arch), path);
}

}  // namespace qmlx::modelgen
