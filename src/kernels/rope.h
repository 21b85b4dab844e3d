// Rotary position embedding in the rotate-half (NeoX) form, applied to the first rot_dim
// dimensions of each head only (partial RoPE; Qwen3.5/Next rotate 64 of 256). Angles are
// computed in double precision so long positions lose no accuracy.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace qmlx {

// cos/sin of pos * theta^(-2i/rot_dim) for i < rot_dim/2, for one position.
struct RopeAngles {
  std::vector<float> cos, sin;
};
RopeAngles rope_angles(int64_t pos, int rot_dim, double theta);

// Qwen3.5's multimodal RoPE: the same frequencies, each taking its position from the temporal
// (t), height (h) or width (w) position of the token. `sections` = {T, H, W} frequency counts.
// Interleaved (Qwen3-VL, Qwen3.5; transformers' apply_interleaved_mrope): frequency i is H when
// i % 3 == 1 and i < 3 * H, W when i % 3 == 2 and i < 3 * W, else T. Not interleaved (Qwen2-VL):
// the first T frequencies are T, the next H are H, the rest W. With t == h == w it equals
// rope_angles(t) bit for bit.
RopeAngles mrope_angles(int64_t t, int64_t h, int64_t w, int rot_dim, double theta,
                        std::span<const int> sections, bool interleaved);

// Rotates heads [heads][head_dim] of one token in place.
void apply_rope(float* x, int heads, int head_dim, int rot_dim, const RopeAngles& a);

}  // namespace qmlx
