// The vision tower, top to bottom (N patches of one image, width H, heads of D = H / heads):
//   x = PatchEmbed(pixels) + PosEmbed(grid)                  [N][H]
//   for each block:
//     x = x + Proj(Attention(Rope2D(QKV(LayerNorm1(x)))))    unmasked, within each frame
//     x = x + FC2(gelu_tanh(FC1(LayerNorm2(x))))
//   y = FC2'(gelu_erf(FC1'(concat of 2x2 LayerNorm'(x))))     [N/4][out_hidden]
// Every Linear has a bias; LayerNorms have weight and bias, eps 1e-6. Qwen3.5 has no DeepStack
// taps (Qwen3-VL feeds some blocks' outputs into the language model; Qwen3.5 removed them).
#include "model/vision_encoder.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "base/error.h"
#include "base/thread_pool.h"
#include "kernels/activations.h"
#include "kernels/biased_matmul.h"
#include "kernels/bidirectional_attention.h"
#include "kernels/grid_interpolation.h"
#include "kernels/norms.h"
#include "kernels/vision_rope.h"

namespace qmlx {
namespace {

using Rows = std::vector<float>;

// Where patch i of a frame sits in its h x w grid: rows come in 2x2 (merge x merge) blocks,
// the blocks in raster order (the processor's patch order, vision_preprocess.h).
struct PatchPosition {
  int row = 0, col = 0;
};
PatchPosition patch_position(int i, int w, int merge) {
  const int unit = merge * merge, block = i / unit, within = i % unit, blocks_per_row = w / merge;
  return {(block / blocks_per_row) * merge + within / merge,
          (block % blocks_per_row) * merge + within % merge};
}

// fn(row) for rows [0, n) on default_pool().
void for_each_row(int n, const std::function<void(int)>& fn) {
  default_pool().parallel_for(size_t(n), [&](size_t begin, size_t end) {
    for (size_t r = begin; r < end; ++r) fn(int(r));
  });
}

Rows linear(const Rows& x, int T, const BiasedLinear& l) {
  Rows y(size_t(T) * l.weight.rows);
  matmul_biased(x.data(), T, l.weight, l.bias.data(), y.data());
  return y;
}

Rows layer_norm_rows(const Rows& x, int T, int n, const LayerNormWeights& norm, float eps) {
  Rows y(x.size());
  for_each_row(T, [&](int t) {
    layer_norm(&x[size_t(t) * n], norm.weight.data(), norm.bias.data(), size_t(n), eps,
               &y[size_t(t) * n]);
  });
  return y;
}

void add_in_place(Rows& x, const Rows& y) {
  for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
}

void add_position_embeddings(const VisionWeights& tower, const PatchGrid& grid, Rows& x) {
  add_in_place(x, patch_position_embeddings(tower, grid));
}

// Multi-head attention of every patch over the patches of its own frame.
Rows attention(const VisionBlockWeights& b, const VisionConfig& c, const PatchGrid& grid,
               const std::vector<RopeAngles>& rotations, const Rows& x) {
  const int N = grid.patches(), H = c.hidden_size, heads = c.num_heads, D = c.head_dim();
  Rows qkv = linear(x, N, b.qkv);  // row: [q heads | k heads | v heads]
  for_each_row(N, [&](int t) {
    float* row = &qkv[size_t(t) * 3 * H];
    apply_rope(row, heads, D, D, rotations[size_t(t)]);      // q
    apply_rope(row + H, heads, D, D, rotations[size_t(t)]);  // k
  });
  Rows out(size_t(N) * H);
  const int frame = grid.h * grid.w;
  const BidirectionalAttentionShape shape{frame, heads, D, size_t(3) * H,
                                          1.f / std::sqrt(float(D))};
  for (int f = 0; f < grid.t; ++f) {
    const float* q = &qkv[size_t(f) * frame * 3 * H];
    bidirectional_attention(shape, q, q + H, q + 2 * H, &out[size_t(f) * frame * H]);
  }
  return linear(out, N, b.proj);
}

Rows mlp(const VisionBlockWeights& b, const VisionConfig& c, int N, const Rows& x) {
  Rows u = linear(x, N, b.fc1);
  if (c.mlp_gelu_tanh) {
    gelu_tanh_in_place(u.data(), u.size());
  } else {
    gelu_erf_in_place(u.data(), u.size());
  }
  return linear(u, N, b.fc2);
}

void block(const VisionBlockWeights& b, const VisionConfig& c, const PatchGrid& grid,
           const std::vector<RopeAngles>& rotations, Rows& x) {
  const int N = grid.patches();
  add_in_place(x, attention(b, c, grid, rotations,
                            layer_norm_rows(x, N, c.hidden_size, b.norm1, c.layer_norm_eps)));
  add_in_place(x, mlp(b, c, N, layer_norm_rows(x, N, c.hidden_size, b.norm2, c.layer_norm_eps)));
}

// Each patch normalised, the merge_unit consecutive patches of a block read as one row of
// merge_unit * H, then the merger's MLP with the exact GELU (nn.GELU()).
Rows merge_patches(const VisionWeights& tower, int N, const Rows& x) {
  const VisionConfig& c = tower.config;
  const Rows normed = layer_norm_rows(x, N, c.hidden_size, tower.merger_norm, c.layer_norm_eps);
  const int tokens = N / c.merge_unit();
  Rows u = linear(normed, tokens, tower.merger_fc1);
  gelu_erf_in_place(u.data(), u.size());
  return linear(u, tokens, tower.merger_fc2);
}

}  // namespace

std::vector<float> patch_position_embeddings(const VisionWeights& tower, const PatchGrid& grid) {
  const VisionConfig& c = tower.config;
  const size_t H = size_t(c.hidden_size);
  Rows raster(size_t(grid.h) * grid.w * H);
  interpolate_grid(tower.pos_embed, c.grid_side(), grid.h, grid.w, raster.data());
  Rows rows(size_t(grid.patches()) * H);
  const int frame = grid.h * grid.w;
  for_each_row(grid.patches(), [&](int i) {
    const PatchPosition p = patch_position(i % frame, grid.w, c.spatial_merge_size);
    const float* e = &raster[(size_t(p.row) * grid.w + p.col) * H];
    std::copy(e, e + H, &rows[size_t(i) * H]);
  });
  return rows;
}

std::vector<RopeAngles> patch_rotations(const VisionConfig& c, const PatchGrid& grid) {
  std::vector<RopeAngles> angles(size_t(grid.patches()));
  const int frame = grid.h * grid.w;
  for_each_row(grid.patches(), [&](int i) {
    const PatchPosition p = patch_position(i % frame, grid.w, c.spatial_merge_size);
    angles[size_t(i)] = vision_rope_angles(p.row, p.col, c.head_dim(), c.rope_theta);
  });
  return angles;
}

void check_image_input(const VisionConfig& c, std::span<const float> pixel_values,
                       const PatchGrid& grid) {
  const int m = c.spatial_merge_size;
  if (grid.t <= 0 || grid.h <= 0 || grid.w <= 0 || grid.h % m != 0 || grid.w % m != 0)
    throw Error("vision encoder: patch grid " + std::to_string(grid.t) + "x" +
                std::to_string(grid.h) + "x" + std::to_string(grid.w) +
                " must be positive with sides multiples of " + std::to_string(m));
  const size_t expected = size_t(grid.patches()) * c.patch_dim();
  if (pixel_values.size() != expected)
    throw Error("vision encoder: " + std::to_string(pixel_values.size()) +
                " pixel values for a grid of " + std::to_string(grid.patches()) + " patches of " +
                std::to_string(c.patch_dim()) + " (expected " + std::to_string(expected) + ")");
}

std::vector<float> encode_image(const VisionWeights& tower, std::span<const float> pixel_values,
                                const PatchGrid& grid) {
  const VisionConfig& c = tower.config;
  check_image_input(c, pixel_values, grid);
  const int N = grid.patches();
  Rows x(size_t(N) * c.hidden_size);
  matmul_biased(pixel_values.data(), N, tower.patch_embed.weight, tower.patch_embed.bias.data(),
                x.data());
  add_position_embeddings(tower, grid, x);
  const std::vector<RopeAngles> rotations = patch_rotations(c, grid);
  for (const VisionBlockWeights& b : tower.blocks) block(b, c, grid, rotations, x);
  return merge_patches(tower, N, x);
}

}  // namespace qmlx
