#include "tiny_model.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "kernels/scalar_type.h"

namespace qmlx::testing {
namespace {

using nlohmann::json;

// Dimensions of every tiny model.
constexpr int H = 64, Nh = 4, Nkv = 2, D = 32, Hk = 2, Hv = 4, Dk = 16, Dv = 16, K = 4;
constexpr int I = 96, E = 4, TopK = 2, MoeI = 32, SharedI = 32, V = 128;
constexpr int KD = Hk * Dk, VD = Hv * Dv, CD = 2 * KD + VD;

template <typename T>
std::vector<uint8_t> raw_bytes(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

float round_to(const std::string& dtype, float x) {
  if (dtype == "BF16") return bf16_to_float(float_to_bf16(x));
  if (dtype == "F16") return f16_to_float(float_to_f16(x));
  return x;
}

// A canonical matrix: float values, plus its quantized form when it was snapped to a grid.
struct Mat {
  int rows = 0, cols = 0;
  std::vector<float> values;
  int bits = 0, group_size = 0;
  std::vector<uint8_t> codes;         // [rows][cols]
  std::vector<float> scales, biases;  // [rows][cols / group_size], bf16-exact
};

Mat concat_rows(const std::vector<const Mat*>& parts) {
  Mat out = *parts[0];
  for (size_t i = 1; i < parts.size(); ++i) {
    const Mat& p = *parts[i];
    out.rows += p.rows;
    out.values.insert(out.values.end(), p.values.begin(), p.values.end());
    out.codes.insert(out.codes.end(), p.codes.begin(), p.codes.end());
    out.scales.insert(out.scales.end(), p.scales.begin(), p.scales.end());
    out.biases.insert(out.biases.end(), p.biases.begin(), p.biases.end());
  }
  return out;
}

Mat permute(const Mat& m, const std::vector<int>& order) {
  Mat out = m;
  out.rows = int(order.size());
  auto take = [&](const auto& src, auto& dst, size_t width) {
    if (src.empty()) return;
    dst.clear();
    for (int r : order)
      dst.insert(dst.end(), src.begin() + r * width, src.begin() + (r + 1) * width);
  };
  take(m.values, out.values, m.cols);
  take(m.codes, out.codes, m.cols);
  if (m.bits) {
    take(m.scales, out.scales, m.cols / m.group_size);
    take(m.biases, out.biases, m.cols / m.group_size);
  }
  return out;
}

std::vector<uint32_t> pack_codes(const std::vector<uint8_t>& codes, int bits) {
  std::vector<uint32_t> words((codes.size() * bits + 31) / 32, 0);
  for (size_t c = 0; c < codes.size(); ++c) {
    size_t bit = c * bits;
    uint64_t v = uint64_t(codes[c]) << (bit % 32);
    words[bit / 32] |= uint32_t(v);
    if ((bit % 32) + bits > 32) words[bit / 32 + 1] |= uint32_t(v >> 32);
  }
  return words;
}

class Generator {
 public:
  explicit Generator(const TinyModelSpec& s) : spec_(s), rng_(s.seed) {}

  std::vector<float> normal(size_t n, float stddev, float mean = 0.f) {
    std::normal_distribution<float> d(mean, stddev);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng_);
    return v;
  }

  // A random [rows, cols] matrix snapped to the model's storage grid.
  Mat matrix(int rows, int cols, float gain = 1.f, int bits = -1, int group_size = -1) {
    Mat m;
    m.rows = rows;
    m.cols = cols;
    m.values = normal(size_t(rows) * cols, gain / std::sqrt(float(cols)));
    bool quantize = spec_.bits > 0 && (spec_.layout == "mlx" || spec_.snap_bits);
    if (bits < 0) bits = spec_.bits;
    if (group_size < 0) group_size = spec_.group_size;
    if (quantize && cols % group_size == 0) {
      QuantizedBlobs q = quantize_affine(m.values, {}, rows, cols, bits, group_size);
      m.bits = bits;
      m.group_size = group_size;
      m.values = q.dequantized;
      m.codes = std::move(q.codes);
      m.scales = std::move(q.scale_values);
      m.biases = std::move(q.bias_values);
    } else {
      for (float& x : m.values) x = round_to(spec_.float_dtype, x);
    }
    return m;
  }

 private:
  const TinyModelSpec& spec_;
  std::mt19937_64 rng_;
};

class Emitter {
 public:
  Emitter(const TinyModelSpec& s, std::string prefix) : spec_(s), prefix_(std::move(prefix)) {}

  // `module` gets ".weight" (+ ".scales"/".biases") unless bare (HF fused experts).
  void matrix(const std::string& module, const Mat& m, std::vector<int64_t> lead = {},
              bool bare = false, bool at_root = false) {
    std::string path = (at_root ? "" : prefix_) + module;
    auto shape = lead;
    shape.push_back(m.rows / std::max<int64_t>(1, lead.empty() ? 1 : lead[0]));
    if (m.bits && spec_.layout == "mlx") {
      shape.push_back(int64_t(m.cols) * m.bits / 32);
      tensors[path + ".weight"] = TensorBlob{"U32", shape, raw_bytes(pack_codes(m.codes, m.bits))};
      shape.back() = m.cols / m.group_size;
      tensors[path + ".scales"] = bf16_blob(shape, m.scales);
      tensors[path + ".biases"] = bf16_blob(shape, m.biases);
      if (m.bits != spec_.bits || m.group_size != spec_.group_size)
        overrides[path] = {{"group_size", m.group_size}, {"bits", m.bits}};
      return;
    }
    shape.push_back(m.cols);
    tensors[bare ? path : path + ".weight"] = float_blob(shape, m.values);
  }
  void vector(const std::string& name, const std::vector<float>& v,
              std::vector<int64_t> shape = {}) {
    if (shape.empty()) shape = {int64_t(v.size())};
    tensors[prefix_ + name] = f32_blob(shape, v);
  }
  TensorBlob float_blob(std::vector<int64_t> shape, const std::vector<float>& v) const {
    if (spec_.float_dtype == "BF16") return bf16_blob(shape, v);
    if (spec_.float_dtype == "F16") return f16_blob(shape, v);
    return f32_blob(shape, v);
  }

  TensorMap tensors;
  json overrides = json::object();

 private:
  const TinyModelSpec& spec_;
  std::string prefix_;
};

struct Layer {
  bool full = false, moe = false;
  std::vector<float> in_norm, post_norm;
  Mat q, k, v, o;
  std::vector<float> q_norm, k_norm;
  Mat qkv, z, b, a, out;
  std::vector<float> conv;  // [CD][K]
  std::vector<float> dt_bias, A_log, gnorm;
  Mat gate, up, down;                     // dense
  Mat router, shared_gate;                // moe
  std::vector<Mat> e_gate, e_up, e_down;  // moe experts
  Mat s_gate, s_up, s_down;               // shared expert
};

json config_for(const TinyModelSpec& s, const std::vector<Layer>& layers) {
  bool hybrid = s.arch != "qwen3";
  bool moe = s.arch == "qwen3_5_moe" || s.arch == "qwen3_next";
  json t = {{"hidden_size", H},
            {"num_hidden_layers", s.layers},
            {"num_attention_heads", Nh},
            {"num_key_value_heads", Nkv},
            {"head_dim", D},
            {"vocab_size", V},
            {"rms_norm_eps", 1e-6},
            {"intermediate_size", I},
            {"hidden_act", "silu"}};
  if (hybrid) {
    t["linear_num_key_heads"] = Hk;
    t["linear_num_value_heads"] = Hv;
    t["linear_key_head_dim"] = Dk;
    t["linear_value_head_dim"] = Dv;
    t["linear_conv_kernel_dim"] = K;
  }
  if (moe) {
    t["num_experts"] = E;
    t["num_experts_per_tok"] = TopK;
    t["moe_intermediate_size"] = MoeI;
    t["shared_expert_intermediate_size"] = SharedI;
  }
  if (s.arch == "qwen3_5" || s.arch == "qwen3_5_moe") {
    json types = json::array();
    for (const auto& l : layers) types.push_back(l.full ? "full_attention" : "linear_attention");
    t["layer_types"] = types;
    t["rope_parameters"] = {{"rope_type", "default"},
                            {"rope_theta", 10000000.0},
                            {"partial_rotary_factor", 0.25},
                            {"mrope_section", {11, 11, 10}},
                            {"mrope_interleaved", true}};
    t["model_type"] = s.arch + "_text";
    return {{"model_type", s.arch}, {"tie_word_embeddings", s.tie}, {"text_config", t}};
  }
  t["model_type"] = s.arch;
  t["tie_word_embeddings"] = s.tie;
  if (s.arch == "qwen3_next") {
    t["full_attention_interval"] = 4;
    t["rope_theta"] = 10000000.0;
    t["partial_rotary_factor"] = 0.25;
    t["norm_topk_prob"] = true;
    t["decoder_sparse_step"] = 1;
    t["mlp_only_layers"] = json::array();
  } else {
    t["rope_theta"] = 1000000.0;
  }
  return t;
}

}  // namespace

void write_safetensors(const std::string& path, const TensorMap& tensors) {
  json header = json::object();
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    header[name] = {{"dtype", t.dtype},
                    {"shape", t.shape},
                    {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string h = header.dump();
  while (h.size() % 8) h += ' ';
  std::ofstream out(path, std::ios::binary);
  uint64_t n = h.size();
  for (int i = 0; i < 8; ++i) out.put(char((n >> (8 * i)) & 0xff));
  out << h;
  for (const auto& [name, t] : tensors)
    out.write(reinterpret_cast<const char*>(t.bytes.data()), std::streamsize(t.bytes.size()));
}

TensorBlob f32_blob(std::vector<int64_t> shape, const std::vector<float>& v) {
  return {"F32", std::move(shape), raw_bytes(v)};
}

TensorBlob bf16_blob(std::vector<int64_t> shape, const std::vector<float>& v) {
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = float_to_bf16(v[i]);
  return {"BF16", std::move(shape), raw_bytes(h)};
}

TensorBlob f16_blob(std::vector<int64_t> shape, const std::vector<float>& v) {
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = float_to_f16(v[i]);
  return {"F16", std::move(shape), raw_bytes(h)};
}

QuantizedBlobs quantize_affine(const std::vector<float>& w, std::vector<int64_t> lead, int rows,
                               int cols, int bits, int group_size) {
  const int groups = cols / group_size, qmax = (1 << bits) - 1;
  std::vector<uint8_t> codes(size_t(rows) * cols);
  std::vector<float> scales(size_t(rows) * groups), biases(scales.size()), deq(w.size());
  for (int r = 0; r < rows; ++r)
    for (int g = 0; g < groups; ++g) {
      const float* x = &w[size_t(r) * cols + g * group_size];
      float lo = *std::min_element(x, x + group_size), hi = *std::max_element(x, x + group_size);
      float scale = bf16_to_float(float_to_bf16(std::max(hi - lo, 1e-6f) / qmax));
      float bias = bf16_to_float(float_to_bf16(lo));
      scales[size_t(r) * groups + g] = scale;
      biases[size_t(r) * groups + g] = bias;
      for (int i = 0; i < group_size; ++i) {
        size_t idx = size_t(r) * cols + g * group_size + i;
        int q = int(std::lround((x[i] - bias) / scale));
        codes[idx] = uint8_t(std::clamp(q, 0, qmax));
        deq[idx] = scale * float(codes[idx]) + bias;
      }
    }
  auto wshape = lead, sshape = lead;
  wshape.push_back(rows);
  wshape.push_back(int64_t(cols) * bits / 32);
  sshape.push_back(rows);
  sshape.push_back(groups);
  QuantizedBlobs out;
  out.weight = {"U32", wshape, raw_bytes(pack_codes(codes, bits))};
  out.scales = bf16_blob(sshape, scales);
  out.biases = bf16_blob(sshape, biases);
  out.dequantized = std::move(deq);
  out.codes = std::move(codes);
  out.scale_values = std::move(scales);
  out.bias_values = std::move(biases);
  return out;
}

TinyModel build_tiny_model(const TinyModelSpec& s) {
  Generator gen(s);
  const bool hybrid = s.arch != "qwen3", mlx = s.layout == "mlx";
  const bool moe = s.arch == "qwen3_5_moe" || s.arch == "qwen3_next";
  const bool next = s.arch == "qwen3_next";
  // Zero-centred norm weights (hybrid) are small around 0; standard ones around 1.
  auto norm_weights = [&](int n) { return gen.normal(n, 0.1f, hybrid ? 0.f : 1.f); };
  auto stored_norm = [&](const std::vector<float>& w) {
    std::vector<float> v = w;
    if (hybrid && mlx)
      for (float& x : v) x += 1.f;
    return v;
  };

  Mat embed = gen.matrix(V, H, std::sqrt(float(H)));
  std::vector<float> final_norm = norm_weights(H);
  Mat head = gen.matrix(V, H);
  std::vector<Layer> layers(s.layers);
  for (int l = 0; l < s.layers; ++l) {
    Layer& L = layers[l];
    L.full = !hybrid || (l + 1) % 4 == 0;
    L.moe = moe;
    L.in_norm = norm_weights(H);
    L.post_norm = norm_weights(H);
    if (L.full) {
      L.q = gen.matrix(Nh * D * (hybrid ? 2 : 1), H);
      L.k = gen.matrix(Nkv * D, H);
      L.v = gen.matrix(Nkv * D, H);
      L.o = gen.matrix(H, Nh * D);
      L.q_norm = norm_weights(D);
      L.k_norm = norm_weights(D);
    } else {
      L.qkv = gen.matrix(CD, H);
      L.z = gen.matrix(VD, H);
      L.b = gen.matrix(Hv, H);
      L.a = gen.matrix(Hv, H);
      L.out = gen.matrix(H, VD);
      L.conv = gen.normal(size_t(CD) * K, 0.5f);
      L.dt_bias = gen.normal(Hv, 0.5f);
      L.A_log = gen.normal(Hv, 0.5f);
      L.gnorm = gen.normal(Dv, 0.1f, 1.f);
    }
    if (moe) {
      L.router = gen.matrix(E, H, 1.f, 8, 64);
      for (int e = 0; e < E; ++e) {
        L.e_gate.push_back(gen.matrix(MoeI, H));
        L.e_up.push_back(gen.matrix(MoeI, H));
        L.e_down.push_back(gen.matrix(H, MoeI));
      }
      L.s_gate = gen.matrix(SharedI, H);
      L.s_up = gen.matrix(SharedI, H);
      L.s_down = gen.matrix(H, SharedI);
      L.shared_gate = gen.matrix(1, H, 1.f, 8, 64);
    } else {
      L.gate = gen.matrix(I, H);
      L.up = gen.matrix(I, H);
      L.down = gen.matrix(H, I);
    }
  }

  std::string prefix = next || s.arch == "qwen3"
                           ? "model."
                           : (mlx ? "language_model.model." : "model.language_model.");
  Emitter em(s, prefix);
  em.matrix("embed_tokens", embed);
  em.vector("norm.weight", stored_norm(final_norm));
  if (!s.tie) {
    std::string head_name =
        (mlx && !next && s.arch != "qwen3") ? "language_model.lm_head" : "lm_head";
    em.matrix(head_name, head, {}, false, /*at_root=*/true);
  }
  for (int l = 0; l < s.layers; ++l) {
    const Layer& L = layers[l];
    const std::string p = "layers." + std::to_string(l) + ".";
    em.vector(p + "input_layernorm.weight", stored_norm(L.in_norm));
    em.vector(p + "post_attention_layernorm.weight", stored_norm(L.post_norm));
    if (L.full) {
      em.matrix(p + "self_attn.q_proj", L.q);
      em.matrix(p + "self_attn.k_proj", L.k);
      em.matrix(p + "self_attn.v_proj", L.v);
      em.matrix(p + "self_attn.o_proj", L.o);
      em.vector(p + "self_attn.q_norm.weight", stored_norm(L.q_norm));
      em.vector(p + "self_attn.k_norm.weight", stored_norm(L.k_norm));
    } else {
      const std::string a = p + "linear_attn.";
      if (next) {
        // Interleave per key-head group: [q_g | k_g | v_g | z_g] and [b_g | a_g].
        const int r = Hv / Hk;
        Mat qkvz = concat_rows({&L.qkv, &L.z});
        std::vector<int> order, ba_order;
        for (int g = 0; g < Hk; ++g) {
          for (int i = 0; i < Dk; ++i) order.push_back(g * Dk + i);
          for (int i = 0; i < Dk; ++i) order.push_back(KD + g * Dk + i);
          for (int i = 0; i < r * Dv; ++i) order.push_back(2 * KD + g * r * Dv + i);
          for (int i = 0; i < r * Dv; ++i) order.push_back(CD + g * r * Dv + i);
          for (int i = 0; i < r; ++i) ba_order.push_back(g * r + i);
          for (int i = 0; i < r; ++i) ba_order.push_back(Hv + g * r + i);
        }
        em.matrix(a + "in_proj_qkvz", permute(qkvz, order));
        em.matrix(a + "in_proj_ba", permute(concat_rows({&L.b, &L.a}), ba_order));
      } else {
        em.matrix(a + "in_proj_qkv", L.qkv);
        em.matrix(a + "in_proj_z", L.z);
        em.matrix(a + "in_proj_b", L.b);
        em.matrix(a + "in_proj_a", L.a);
      }
      em.vector(a + "conv1d.weight", L.conv,
                mlx ? std::vector<int64_t>{CD, K, 1} : std::vector<int64_t>{CD, 1, K});
      em.vector(a + "dt_bias", L.dt_bias);
      em.vector(a + "A_log", L.A_log);
      em.vector(a + "norm.weight", L.gnorm);
      em.matrix(a + "out_proj", L.out);
    }
    if (moe) {
      const std::string m = p + "mlp.";
      em.matrix(m + "gate", L.router);
      auto ptrs = [](const std::vector<Mat>& v) {
        std::vector<const Mat*> out;
        for (const Mat& x : v) out.push_back(&x);
        return out;
      };
      if (mlx) {
        em.matrix(m + "switch_mlp.gate_proj", concat_rows(ptrs(L.e_gate)), {E});
        em.matrix(m + "switch_mlp.up_proj", concat_rows(ptrs(L.e_up)), {E});
        em.matrix(m + "switch_mlp.down_proj", concat_rows(ptrs(L.e_down)), {E});
      } else if (next) {
        for (int e = 0; e < E; ++e) {
          const std::string x = m + "experts." + std::to_string(e) + ".";
          em.matrix(x + "gate_proj", L.e_gate[e]);
          em.matrix(x + "up_proj", L.e_up[e]);
          em.matrix(x + "down_proj", L.e_down[e]);
        }
      } else {
        std::vector<const Mat*> gate_up;
        for (int e = 0; e < E; ++e) {
          gate_up.push_back(&L.e_gate[e]);
          gate_up.push_back(&L.e_up[e]);
        }
        em.matrix(m + "experts.gate_up_proj", concat_rows(gate_up), {E}, /*bare=*/true);
        em.matrix(m + "experts.down_proj", concat_rows(ptrs(L.e_down)), {E}, /*bare=*/true);
      }
      em.matrix(m + "shared_expert.gate_proj", L.s_gate);
      em.matrix(m + "shared_expert.up_proj", L.s_up);
      em.matrix(m + "shared_expert.down_proj", L.s_down);
      em.matrix(m + "shared_expert_gate", L.shared_gate);
    } else {
      em.matrix(p + "mlp.gate_proj", L.gate);
      em.matrix(p + "mlp.up_proj", L.up);
      em.matrix(p + "mlp.down_proj", L.down);
    }
  }

  json config = config_for(s, layers);
  if (mlx && s.bits > 0) {
    json q = {{"group_size", s.group_size}, {"bits", s.bits}, {"mode", "affine"}};
    for (auto it = em.overrides.begin(); it != em.overrides.end(); ++it) {
      q[it.key()] = it.value();
    }
    config["quantization"] = q;
    config["quantization_config"] = q;
  }
  return TinyModel{config, std::move(em.tensors)};
}

void write_model(const std::string& dir, const TinyModel& model) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/config.json") << model.config.dump(2);
  write_safetensors(dir + "/model.safetensors", model.tensors);
}

void write_tiny_model(const std::string& dir, const TinyModelSpec& spec) {
  write_model(dir, build_tiny_model(spec));
}

std::string make_temp_dir(const std::string& tag) {
  const char* base = std::getenv("TMPDIR");
  std::string templ = std::string(base ? base : "/tmp") + "/qmlx_" + tag + "_XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) return templ;
  return buf.data();
}

double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    num = std::max(num, std::abs(double(a[i]) - b[i]));
    den = std::max(den, std::abs(double(b[i])));
  }
  return num / den;
}

}  // namespace qmlx::testing
