// Rotary position embedding in the rotate-half (NeoX) form, applied to the first rot_dim
// dimensions of each head only (partial RoPE; Qwen3.5/Next rotate 64 of 256). Angles are
// computed in double precision so long positions lose no accuracy.
#pragma once

#include <cstdint>
#include <vector>

namespace qmlx {

// cos/sin of pos * theta^(-2i/rot_dim) for i < rot_dim/2, for one position.
struct RopeAngles {
  std::vector<float> cos, sin;
};
RopeAngles rope_angles(int64_t pos, int rot_dim, double theta);

// Rotates heads [heads][head_dim] of one token in place.
void apply_rope(float* x, int heads, int head_dim, int rot_dim, const RopeAngles& a);

}  // namespace qmlx
