// The vision tower on the device (vision_forward.h), as vision_encoder.cpp writes it on the CPU
// (N patches of one image, width H, heads of D = H / heads):
//   x = PatchEmbed(pixels) + PosEmbed(grid)                  [N][H]
//   for each block:
//     x = x + Proj(Attention(Rope2D(Q, K), V))               unmasked, within each frame
//     x = x + FC2(gelu_tanh(FC1(LayerNorm2(x))))             (gelu_erf where configured)
//   y = FC2'(gelu_erf(FC1'(concat of 2x2 LayerNorm'(x))))     [N/4][out_hidden]
// with Q, K, V the three row ranges of the fused qkv projection of LayerNorm1(x). What depends
// only on the weights and the grid stays on the host: the position grid interpolated to the
// image's grid (kernels/grid_interpolation.h, computed by the CPU's own code and uploaded as
// one row per patch) and each patch's rotary angles (double precision, which shaders lack;
// uploaded as the RoPE operation's own angles, rope.h). Every operation's row arithmetic is
// fixed, so an image's embeddings are the same bits every time; they agree with the CPU's to
// rounding (the matmuls and the attention sum in other orders; vulkan_vision_test.cpp).
#include "model/vulkan/vision_forward.h"

#include <algorithm>
#include <cmath>

#include "backend/vulkan/bias_rows.h"
#include "backend/vulkan/bidirectional_attention.h"
#include "backend/vulkan/elementwise.h"
#include "backend/vulkan/gelu.h"
#include "backend/vulkan/layer_norm.h"
#include "backend/vulkan/rope.h"
#include "base/error.h"

namespace qmlx::vulkan {
namespace {

// Calls f(matrix) for every matrix of the tower as uploaded (qkv as its three row ranges).
template <typename F>
void for_each_matrix(const VisionWeights& t, F&& f) {
  f(t.patch_embed.weight);
  const int H = t.config.hidden_size;
  for (const VisionBlockWeights& b : t.blocks) {
    for (int part = 0; part < 3; ++part) f(b.qkv.weight.row_slice(part * H, (part + 1) * H));
    f(b.proj.weight);
    f(b.fc1.weight);
    f(b.fc2.weight);
  }
  f(t.merger_fc1.weight);
  f(t.merger_fc2.weight);
}

// Floats of every bias and LayerNorm parameter.
size_t vector_floats(const VisionWeights& t) {
  size_t n = t.patch_embed.bias.size() + t.merger_norm.weight.size() + t.merger_norm.bias.size() +
             t.merger_fc1.bias.size() + t.merger_fc2.bias.size();
  for (const VisionBlockWeights& b : t.blocks)
    n += b.norm1.weight.size() + b.norm1.bias.size() + b.norm2.weight.size() + b.norm2.bias.size() +
         b.qkv.bias.size() + b.proj.bias.size() + b.fc1.bias.size() + b.fc2.bias.size();
  return n;
}

class Upload {
 public:
  explicit Upload(Context& context) : context_(context) {}
  Buffer floats(const float* v, size_t n) {
    Buffer b = context_.create_buffer(n * 4);
    context_.upload(b, 0, v, n * 4);
    bytes_ += b.size();
    return b;
  }
  Buffer floats(const std::vector<float>& v) { return floats(v.data(), v.size()); }
  DeviceMatrix matrix(const WeightMatrix& w) {
    DeviceMatrix m = upload_matrix(context_, w);
    bytes_ += allocated_bytes(m);
    return m;
  }
  DeviceLinear linear(const BiasedLinear& l) { return {matrix(l.weight), floats(l.bias)}; }
  DeviceLayerNorm norm(const LayerNormWeights& n) { return {floats(n.weight), floats(n.bias)}; }
  size_t bytes() const { return bytes_; }

 private:
  Context& context_;
  size_t bytes_ = 0;
};

}  // namespace

bool VisionTower::supported(const VisionWeights& tower, std::string* why) {
  bool ok = true;
  for_each_matrix(tower, [&](const WeightMatrix& w) {
    if (ok && !device_matmul_supports(w, why)) ok = false;
  });
  if (!ok) return false;
  if (tower.config.head_dim() > 128 || tower.config.head_dim() % 2 != 0) {
    if (why) *why = "head dimension " + std::to_string(tower.config.head_dim());
    return false;
  }
  return true;
}

uint64_t VisionTower::device_bytes(const VisionWeights& tower) {
  uint64_t bytes = vector_floats(tower) * 4;
  for_each_matrix(tower, [&](const WeightMatrix& w) { bytes += device_matrix_bytes(w); });
  return bytes;
}

VisionTower::VisionTower(Context& context, const VisionWeights& tower)
    : context_(context), tower_(tower) {
  Upload up(context);
  const int H = tower.config.hidden_size;
  patch_embed_ = up.linear(tower.patch_embed);
  for (const VisionBlockWeights& b : tower.blocks) {
    DeviceVisionBlock d;
    d.norm1 = up.norm(b.norm1);
    d.norm2 = up.norm(b.norm2);
    DeviceLinear* parts[] = {&d.q, &d.k, &d.v};
    for (int part = 0; part < 3; ++part)
      *parts[part] = {up.matrix(b.qkv.weight.row_slice(part * H, (part + 1) * H)),
                      up.floats(b.qkv.bias.data() + size_t(part) * H, size_t(H))};
    d.proj = up.linear(b.proj);
    d.fc1 = up.linear(b.fc1);
    d.fc2 = up.linear(b.fc2);
    blocks_.push_back(std::move(d));
  }
  merger_norm_ = up.norm(tower.merger_norm);
  merger_fc1_ = up.linear(tower.merger_fc1);
  merger_fc2_ = up.linear(tower.merger_fc2);
  const std::vector<float> unused_row(size_t(tower.config.head_dim()), 0.f);
  rope_table_.data = up.floats(unused_row);
  rope_table_.positions = 1;
  rope_table_.rot_dim = tower.config.head_dim();
  bytes_ = up.bytes();
}

std::optional<std::vector<float>> VisionTower::encode(std::span<const float> pixel_values,
                                                      const PatchGrid& grid,
                                                      std::mutex& context_mutex,
                                                      std::string* why) const {
  const VisionConfig& c = tower_.config;
  const int N = grid.patches(), H = c.hidden_size, heads = c.num_heads, D = c.head_dim();
  const int I = c.intermediate_size, frame = grid.h * grid.w, tokens = N / c.merge_unit();
  const int merged_width = c.merge_unit() * H, out_width = tower_.merger_fc2.weight.rows;
  const size_t row = size_t(H) * 4;
  std::lock_guard images(mutex_);
  Context& ctx = context_;

  // Attention reads one frame's rows of q, k and v through one binding each.
  const BidirectionalShape shape{frame, heads, D, 1.f / std::sqrt(float(D))};
  {
    std::string too_large;
    Buffer none;
    const AttentionRows rows{&none, 0, size_t(H)};
    if (!bidirectional_attention_fits(ctx, shape, rows, rows, rows, rows, &too_large)) {
      if (why) *why = too_large;
      return std::nullopt;
    }
  }

  // Host inputs: the position rows and the rotary angles, from the CPU encoder's own code.
  const std::vector<float> positions = patch_position_embeddings(tower_, grid);
  const std::vector<RopeAngles> rotations = patch_rotations(c, grid);
  std::vector<float> angles(size_t(N) * D);
  std::vector<int32_t> rope_rows(static_cast<size_t>(N));
  for (int i = 0; i < N; ++i) {
    const RopeAngles& a = rotations[size_t(i)];
    std::copy(a.cos.begin(), a.cos.end(), &angles[size_t(i) * D]);
    std::copy(a.sin.begin(), a.sin.end(), &angles[size_t(i) * D + D / 2]);
    rope_rows[size_t(i)] = -1 - i;  // row i's own angles (rope.h)
  }

  Scratch& s = s_;
  std::vector<float> out(size_t(tokens) * out_width);
  const auto linear = [&](CommandRecorder& rec, const DeviceLinear& l, const Buffer& x, int T,
                          const Buffer& y) {
    record_matmul(rec, l.weight, x, T, y);
    record_bias_rows(rec, y, l.bias, T, l.weight.rows);
  };
  const auto norm = [&](CommandRecorder& rec, const DeviceLayerNorm& n, const Buffer& x,
                        const Buffer& y) {
    record_layer_norm(rec, x, n.weight, n.bias, y, N, H, c.layer_norm_eps);
  };
  // One submission, under the context's mutex.
  const auto submit = [&](const auto& record) {
    std::lock_guard lock(context_mutex);
    CommandRecorder rec(ctx);
    record(rec);
    rec.submit_and_wait();
  };

  submit([&](CommandRecorder& rec) {
    // Allocated here, under the context's mutex like everything else that touches it.
    ctx.ensure_buffer(s.pixels, pixel_values.size() * 4);
    ctx.ensure_buffer(s.positions, size_t(N) * row);
    ctx.ensure_buffer(s.angles, angles.size() * 4);
    ctx.ensure_buffer(s.rope_rows, rope_rows.size() * 4);
    for (Buffer* b : {&s.x, &s.normed, &s.q, &s.k, &s.v, &s.attention, &s.delta})
      ctx.ensure_buffer(*b, size_t(N) * row);
    ctx.ensure_buffer(s.mlp, size_t(N) * I * 4);
    ctx.ensure_buffer(s.merged, size_t(tokens) * merged_width * 4);
    ctx.ensure_buffer(s.out, size_t(tokens) * out_width * 4);
    rec.upload(s.pixels, 0, pixel_values.data(), pixel_values.size() * 4);
    rec.upload(s.positions, 0, positions.data(), positions.size() * 4);
    rec.upload(s.angles, 0, angles.data(), angles.size() * 4);
    rec.upload(s.rope_rows, 0, rope_rows.data(), rope_rows.size() * 4);
    linear(rec, patch_embed_, s.pixels, N, s.x);
    record_add(rec, s.x, s.positions, size_t(N) * H);
  });
  for (const DeviceVisionBlock& b : blocks_) {
    submit([&](CommandRecorder& rec) {
      norm(rec, b.norm1, s.x, s.normed);
      linear(rec, b.q, s.normed, N, s.q);
      linear(rec, b.k, s.normed, N, s.k);
      linear(rec, b.v, s.normed, N, s.v);
      record_rope(rec, s.q, s.rope_rows, rope_table_, N, heads, D, &s.angles);
      record_rope(rec, s.k, s.rope_rows, rope_table_, N, heads, D, &s.angles);
      for (int f = 0; f < grid.t; ++f) {
        const size_t first = size_t(f) * frame * H;
        record_bidirectional_attention(rec, shape, {&s.q, first, size_t(H)},
                                       {&s.k, first, size_t(H)}, {&s.v, first, size_t(H)},
                                       {&s.attention, first, size_t(H)});
      }
      linear(rec, b.proj, s.attention, N, s.delta);
      record_add(rec, s.x, s.delta, size_t(N) * H);
      norm(rec, b.norm2, s.x, s.normed);
      linear(rec, b.fc1, s.normed, N, s.mlp);
      record_gelu(rec, c.mlp_gelu_tanh ? Gelu::kTanh : Gelu::kErf, s.mlp, size_t(N) * I);
      linear(rec, b.fc2, s.mlp, N, s.delta);
      record_add(rec, s.x, s.delta, size_t(N) * H);
    });
  }
  // The merger: each patch normed, merge_unit consecutive patches read as one row.
  submit([&](CommandRecorder& rec) {
    norm(rec, merger_norm_, s.x, s.normed);
    linear(rec, merger_fc1_, s.normed, tokens, s.merged);
    record_gelu(rec, Gelu::kErf, s.merged, size_t(tokens) * merged_width);
    linear(rec, merger_fc2_, s.merged, tokens, s.out);
    rec.download(s.out, 0, out.data(), out.size() * 4);
  });
  // The scratch is an image's working set (1080p on the real tower: about 0.4 GiB), not
  // counted in the device memory the batch budget plans with: given back after each image.
  {
    std::lock_guard lock(context_mutex);
    s = Scratch{};
  }
  return out;
}

}  // namespace qmlx::vulkan
