#include "model/vulkan/device_weights.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "backend/vulkan/device_memory.h"
#include "backend/vulkan/moe_router.h"
#include "base/error.h"
#include "base/human_bytes.h"
#include "kernels/column_blocks.h"

namespace qmlx::vulkan {
namespace {

// Host copies of some rows of a matrix, in its stored format (not tiled).
struct RowSelection {
  std::vector<uint8_t> data, scales, biases;
  WeightMatrix view;
};

RowSelection select_rows(const WeightMatrix& w, const std::vector<int>& rows) {
  RowSelection s;
  const size_t row_bytes = w.row_bytes();
  const size_t param_bytes =
      w.quantized() ? size_t(w.groups_per_row()) * scalar_size(w.scale_type) : 0;
  for (int r : rows) {
    const uint8_t* d = w.data + size_t(r) * row_bytes;
    s.data.insert(s.data.end(), d, d + row_bytes);
    if (param_bytes) {
      const uint8_t* sc = w.scales + size_t(r) * param_bytes;
      const uint8_t* bi = w.biases + size_t(r) * param_bytes;
      s.scales.insert(s.scales.end(), sc, sc + param_bytes);
      s.biases.insert(s.biases.end(), bi, bi + param_bytes);
    }
  }
  s.view = w;
  s.view.rows = int(rows.size());
  s.view.data = s.data.data();
  s.view.scales = param_bytes ? s.scales.data() : nullptr;
  s.view.biases = param_bytes ? s.biases.data() : nullptr;
  return s;
}

// Rows [h * 2D + offset, + D) of every head h: one half of a gated q_proj.
std::vector<int> head_halves(int heads, int D, int offset) {
  std::vector<int> rows;
  for (int h = 0; h < heads; ++h)
    for (int d = 0; d < D; ++d) rows.push_back(h * 2 * D + offset + d);
  return rows;
}

class Uploader {
 public:
  Uploader(Context& context, const std::function<void(uint64_t, uint64_t)>& progress,
           uint64_t total)
      : context_(context), progress_(progress), total_(total) {
    if (progress_) progress_(0, total_);
  }

  DeviceMatrix matrix(const WeightMatrix& w) {
    DeviceMatrix m = upload_matrix(context_, w);
    advance(device_matrix_bytes(w));
    bytes_ += allocated_bytes(m);
    return m;
  }
  // One projection of all experts, stacked (`pick` chooses it from each expert's MLP).
  DeviceExperts experts(const std::vector<MlpWeights>& all, WeightMatrix MlpWeights::*pick) {
    std::vector<const WeightMatrix*> views;
    for (const MlpWeights& e : all) views.push_back(&(e.*pick));
    DeviceExperts d = upload_experts(context_, views);
    for (const WeightMatrix* w : views) advance(device_matrix_bytes(*w));
    bytes_ += allocated_bytes(d.stacked);
    return d;
  }
  Buffer ints(const std::vector<int>& v) {
    std::vector<int32_t> i32(v.begin(), v.end());
    Buffer b = context_.create_buffer(i32.size() * 4);
    context_.upload(b, 0, i32.data(), i32.size() * 4);
    advance(i32.size() * 4);
    bytes_ += b.size();
    return b;
  }
  Buffer floats(const std::vector<float>& v) {
    Buffer b = context_.create_buffer(v.size() * 4);
    context_.upload(b, 0, v.data(), v.size() * 4);
    advance(v.size() * 4);
    bytes_ += b.size();
    return b;
  }
  size_t bytes() const { return bytes_; }
  void finish() {
    if (progress_) progress_(total_, total_);
  }

 private:
  void advance(uint64_t n) {
    done_ = std::min(total_, done_ + n);
    if (progress_) progress_(done_, total_);
  }

  Context& context_;
  const std::function<void(uint64_t, uint64_t)>& progress_;
  uint64_t total_, done_ = 0;
  size_t bytes_ = 0;
};

void check_matrix(const WeightMatrix& w, const std::string& name) {
  std::string why;
  if (!device_matmul_supports(w, &why))
    throw Error("--device vulkan: " + name + " is stored as " + why +
                ", which the Vulkan kernels do not run yet (use --device cpu)");
}

void check_mlp(const MlpWeights& m, const std::string& at) {
  check_matrix(m.gate, at + "gate_proj");
  check_matrix(m.up, at + "up_proj");
  check_matrix(m.down, at + "down_proj");
}

// host_experts: the routed experts stay in host memory, where the CPU runs any format it reads.
void check_moe(const MoeWeights& m, const ModelConfig& c, bool host_experts,
               const std::string& at) {
  const int E = int(m.experts.size()), k = c.experts_per_token;
  if (E > kMaxRouterExperts || k > kMaxRouterTopK || k > E || k <= 0)
    throw Error("--device vulkan: " + at + "MoE block routes to " + std::to_string(k) + " of " +
                std::to_string(E) + " experts; the device router takes at most " +
                std::to_string(kMaxRouterTopK) + " of " + std::to_string(kMaxRouterExperts) +
                " (use --device cpu)");
  check_matrix(m.router, at + "router");
  for (int e = 0; e < E && !host_experts; ++e)
    check_mlp(m.experts[size_t(e)], at + "expert " + std::to_string(e) + " ");
  if (m.has_shared_expert) {
    check_mlp(m.shared, at + "shared expert ");
    check_matrix(m.shared_gate, at + "shared_expert_gate");
  }
}

// Every reason the device cannot run `layer` (`at` names it in messages).
void check_layer(const ModelConfig& c, const LayerWeights& layer, bool host_experts,
                 const std::string& at) {
  if (layer.full_attention) {
    const AttentionWeights& a = layer.attention;
    for (const auto& [m, name] :
         {std::pair{&a.q, "q_proj"}, {&a.k, "k_proj"}, {&a.v, "v_proj"}, {&a.o, "o_proj"}})
      check_matrix(*m, at + name);
    if (c.head_dim % 16 != 0)
      throw Error("--device vulkan: head size " + std::to_string(c.head_dim) +
                  " is not a multiple of 16");
  } else {
    const DeltaNetWeights& d = layer.delta_net;
    for (const auto& [m, name] : {std::pair{&d.qkv, "in_proj_qkv"},
                                  {&d.z, "in_proj_z"},
                                  {&d.b, "in_proj_b"},
                                  {&d.a, "in_proj_a"},
                                  {&d.out, "out_proj"}})
      check_matrix(*m, at + name);
  }
  if (layer.moe)
    check_moe(layer.moe_ffn, c, host_experts, at);
  else
    check_mlp(layer.mlp, at + "mlp ");
}

// Every reason the device cannot run this model, found before any upload.
void check_supported(const ModelConfig& c, const ModelWeights& weights, int cpu_moe_layers) {
  check_matrix(weights.embed, "the token embedding");
  check_matrix(weights.head, "the LM head");
  for (size_t l = 0; l < weights.layers.size(); ++l)
    check_layer(c, weights.layers[l], routed_experts_on_host(l, cpu_moe_layers),
                "layer " + std::to_string(l) + "'s ");
}

// Why the device cannot run the MTP head, or "" when it can (fc is taken in two halves of H
// columns, which must not cut its quantization groups).
std::string mtp_unsupported(const ModelConfig& c, const MtpWeights& m) {
  try {
    check_layer(c, m.layer, /*host_experts=*/false, "the MTP head's ");
    check_matrix(m.fc, "the MTP head's fc");
  } catch (const Error& e) {
    return e.what();
  }
  return column_blocks_refusal(m.fc, c.hidden_size);
}

// Bytes in device memory (device_matrix_bytes: GGUF blocks as stored), which the
// progress line counts and the device must hold.
uint64_t on_device(const WeightMatrix& w) { return device_matrix_bytes(w); }

uint64_t mlp_bytes(const MlpWeights& m) {
  return on_device(m.gate) + on_device(m.up) + on_device(m.down);
}

uint64_t experts_bytes(const MoeWeights& m) {
  uint64_t total = 0;
  for (const MlpWeights& e : m.experts) total += mlp_bytes(e);
  return total;
}

// host_experts: without the routed experts, which stay in host memory.
uint64_t layer_bytes(const LayerWeights& l, bool host_experts) {
  uint64_t total = (l.input_norm.size() + l.post_norm.size()) * 4;
  if (l.full_attention) {
    const AttentionWeights& a = l.attention;
    total += on_device(a.q) + on_device(a.k) + on_device(a.v) + on_device(a.o);
    total += (a.q_norm.size() + a.k_norm.size()) * 4;
  } else {
    const DeltaNetWeights& d = l.delta_net;
    total += on_device(d.qkv) + on_device(d.z) + on_device(d.b) + on_device(d.a) + on_device(d.out);
    total += (d.conv.size() + d.dt_bias.size() + d.A.size() + d.norm.size()) * 4;
    total += d.out_heads.size() * 4;
  }
  if (!l.moe) return total + mlp_bytes(l.mlp);
  const MoeWeights& m = l.moe_ffn;
  total += on_device(m.router) + (host_experts ? 0 : experts_bytes(m));
  if (m.has_shared_expert) total += mlp_bytes(m.shared) + on_device(m.shared_gate);
  return total;
}

uint64_t mtp_bytes(const MtpWeights& m) {
  return on_device(m.fc) + layer_bytes(m.layer, /*host_experts=*/false) +
         (m.embedding_norm.size() + m.hidden_norm.size() + m.final_norm.size()) * 4;
}

uint64_t total_bytes(const ModelWeights& w, bool with_mtp, int cpu_moe_layers) {
  uint64_t total = on_device(w.embed) + (w.head.data == w.embed.data ? 0 : on_device(w.head));
  total += w.final_norm.size() * 4;
  for (size_t l = 0; l < w.layers.size(); ++l)
    total += layer_bytes(w.layers[l], routed_experts_on_host(l, cpu_moe_layers));
  return total + (with_mtp ? mtp_bytes(*w.mtp) : 0);
}

HostExperts host_experts(const ModelWeights& w, int cpu_moe_layers) {
  HostExperts h;
  for (size_t l = 0; l < w.layers.size(); ++l) {
    if (!w.layers[l].moe) continue;
    h.moe_layers++;
    if (!routed_experts_on_host(l, cpu_moe_layers)) continue;
    h.layers++;
    h.bytes += experts_bytes(w.layers[l].moe_ffn);
  }
  return h;
}

DeviceMlp upload_mlp(Uploader& up, const MlpWeights& m) {
  return {up.matrix(m.gate), up.matrix(m.up), up.matrix(m.down)};
}

DeviceMoe upload_moe(Uploader& up, const MoeWeights& m, bool host_experts) {
  DeviceMoe d;
  d.router = up.matrix(m.router);
  if (host_experts) {
    d.host = &m;
  } else {
    d.gate = up.experts(m.experts, &MlpWeights::gate);
    d.up = up.experts(m.experts, &MlpWeights::up);
    d.down = up.experts(m.experts, &MlpWeights::down);
  }
  d.has_shared_expert = m.has_shared_expert;
  if (m.has_shared_expert) {
    d.shared = upload_mlp(up, m.shared);
    d.shared_gate = up.matrix(m.shared_gate);
  }
  return d;
}

DeviceLayer upload_layer(Uploader& up, const ModelConfig& c, const LayerWeights& l,
                         bool host_experts) {
  DeviceLayer d;
  d.full_attention = l.full_attention;
  d.input_norm = up.floats(l.input_norm);
  d.post_norm = up.floats(l.post_norm);
  if (l.full_attention) {
    const AttentionWeights& a = l.attention;
    if (c.hybrid()) {  // gated: q_proj's rows are [q_h | gate_h] per head
      const RowSelection q = select_rows(a.q, head_halves(c.num_heads, c.head_dim, 0));
      const RowSelection g = select_rows(a.q, head_halves(c.num_heads, c.head_dim, c.head_dim));
      d.attention.q = up.matrix(q.view);
      d.attention.gate = up.matrix(g.view);
    } else {
      d.attention.q = up.matrix(a.q);
    }
    d.attention.k = up.matrix(a.k);
    d.attention.v = up.matrix(a.v);
    d.attention.o = up.matrix(a.o);
    d.attention.q_norm = up.floats(a.q_norm);
    d.attention.k_norm = up.floats(a.k_norm);
  } else {
    const DeltaNetWeights& n = l.delta_net;
    d.delta_net.qkv = up.matrix(n.qkv);
    d.delta_net.z = up.matrix(n.z);
    d.delta_net.b = up.matrix(n.b);
    d.delta_net.a = up.matrix(n.a);
    d.delta_net.out = up.matrix(n.out);  // llama.cpp's tiled head order stays: see out_heads
    if (!n.out_heads.empty()) d.delta_net.out_heads = up.ints(n.out_heads);
    d.delta_net.conv = up.floats(n.conv);
    d.delta_net.dt_bias = up.floats(n.dt_bias);
    d.delta_net.A = up.floats(n.A);
    d.delta_net.norm = up.floats(n.norm);
  }
  d.moe = l.moe;
  if (l.moe)
    d.moe_ffn = upload_moe(up, l.moe_ffn, host_experts);
  else
    d.mlp = upload_mlp(up, l.mlp);
  return d;
}

DeviceMtp upload_mtp(Uploader& up, const ModelConfig& c, const MtpWeights& m) {
  DeviceMtp d;
  // GGUF blocks rewritten once for both halves (gather_column_blocks would rewrite per call).
  const OwnedMatrix rewritten =
      m.fc.format == WeightFormat::kGguf ? gguf_to_affine(m.fc) : OwnedMatrix{};
  const WeightMatrix& fc = m.fc.format == WeightFormat::kGguf ? rewritten.view : m.fc;
  d.fc_embedding = up.matrix(gather_column_blocks(fc, c.hidden_size, {0}).view);
  d.fc_hidden = up.matrix(gather_column_blocks(fc, c.hidden_size, {1}).view);
  d.embedding_norm = up.floats(m.embedding_norm);
  d.hidden_norm = up.floats(m.hidden_norm);
  d.final_norm = up.floats(m.final_norm);
  d.layer = upload_layer(up, c, m.layer, /*host_experts=*/false);
  return d;
}

}  // namespace

DeviceWeights upload_weights(Context& context, const ModelConfig& c, const ModelWeights& weights,
                             int cpu_moe_layers,
                             const std::function<void(uint64_t, uint64_t)>& progress) {
  check_supported(c, weights, cpu_moe_layers);
  DeviceWeights out;
  if (weights.mtp) out.mtp_unavailable = mtp_unsupported(c, *weights.mtp);
  const bool with_mtp = weights.mtp && out.mtp_unavailable.empty();
  out.host_experts = host_experts(weights, cpu_moe_layers);
  const uint64_t need = total_bytes(weights, with_mtp, cpu_moe_layers);
  const uint64_t have = usable_device_memory(context.device_info());
  const bool experts_left = out.host_experts.layers < out.host_experts.moe_layers;
  if (need > have)
    throw Error(
        "--device vulkan: the weights take " + human_bytes(need) + " on " +
        context.device_info().name + ", which has " + human_bytes(have) + " of device memory" +
        (std::getenv("QMLX_VULKAN_MEMORY_MB") ? " (QMLX_VULKAN_MEMORY_MB)" : "") +
        "; a smaller quantization fits" +
        (experts_left ? ", or --cpu-moe / --n-cpu-moe N (the routed experts in host memory)" : "") +
        ", or --device cpu");
  Uploader up(context, progress, need);
  out.embed = up.matrix(weights.embed);
  out.tied = weights.head.data == weights.embed.data;
  if (!out.tied) out.head = up.matrix(weights.head);
  out.final_norm = up.floats(weights.final_norm);
  for (size_t l = 0; l < weights.layers.size(); ++l)
    out.layers.push_back(
        upload_layer(up, c, weights.layers[l], routed_experts_on_host(l, cpu_moe_layers)));
  if (with_mtp) out.mtp = upload_mtp(up, c, *weights.mtp);
  up.finish();
  out.bytes = up.bytes();
  return out;
}

}  // namespace qmlx::vulkan
