// The 2D rotary position embedding of the Qwen3-VL / Qwen3.5 vision tower. A patch at (row,
// col) of its image rotates each head of D dims in the rotate-half form over all D dims
// (kernels/rope.h's apply_rope with rot_dim = D), with D/2 angles: the first D/4 are
// row * f_i, the next D/4 col * f_i, where f_i = theta^(-4i/D) for i < D/4 (transformers
// builds a rotary table of dim D/2, looks up the row's and the column's frequencies and
// concatenates them). Angles in double precision, as rope_angles computes them.
#pragma once

#include <cstdint>

#include "kernels/rope.h"

namespace qmlx {

// D must be a multiple of 4. theta is 10000 in every Qwen vision tower.
RopeAngles vision_rope_angles(int64_t row, int64_t col, int head_dim, double theta);

}  // namespace qmlx
